/**
 * The FlowApi the gRPC adapter serves, from its parts: `assembleFlowApi` builds the run service
 * and the controls on the stores and the task service, the same way for the gRPC front on Fargate
 * (src/service/grpc-front.ts) and the local stack (local/stack.ts); `composeFlowApi` puts parts
 * together, so a benchmark can serve some of them. A part that is not configured answers
 * FailedPrecondition, as the reference does ("operation run manager is not configured"): a front
 * deployed without its task machinery still serves reads and says clearly what is missing.
 */
import type { BuildInfo, FlowApi, ImagesApi, OperationRunsApi, PolicyApi, TasksApi } from "../app/api.js";
import { createControls } from "../app/controls.js";
import type { Dispatcher } from "../app/dispatcher.js";
import { createImageService } from "../app/firmware-images.js";
import { createPolicyService } from "../app/firmware-policy.js";
import { createLateFailureReports } from "../app/late-failures.js";
import type { Logger } from "../app/observability.js";
import type {
  ChildTaskSubmitter,
  Clock,
  FirmwareImageStore,
  FirmwarePolicyStore,
  ImageObjectStore,
  InventoryStore,
  ReadinessStore,
  RequestMac,
  RunStore,
  TaskStore,
} from "../app/ports.js";
import { createRunService } from "../app/runs.js";
import { componentTypeChanges, typeChangeViolation } from "../domain/component-type-change.js";
import { FailedPreconditionError, ValidationError } from "../domain/errors.js";
import type { FirmwareBaseline } from "../domain/firmware-baselines.js";
import type { InventoryRack } from "../domain/inventory.js";

export type RunControls = Pick<
  OperationRunsApi,
  "pauseRun" | "resumeRun" | "advancePhase" | "cancelRun" | "reportTargetFailure" | "approveRun"
>;
export type RunReads = Omit<OperationRunsApi, keyof RunControls>;

export interface FlowApiParts {
  runs?: RunReads;
  controls?: RunControls;
  tasks?: TasksApi;
  inventory?: InventoryStore;
  /** Firmware baselines (src/app/firmware-policy.ts). */
  policy?: PolicyApi;
  /** The firmware image catalog (src/app/firmware-images.ts). */
  images?: ImagesApi;
  /** Where an import's component type changes are logged (absent: not logged). */
  logger?: Pick<Logger, "info">;
  /** Told of every imported rack after it is stored (the local stack adds simulated BMCs). */
  onRacksImported?: (racks: InventoryRack[]) => void;
  buildInfo: BuildInfo;
  /** The keyed digest idempotent creates remember credentials by (absent: such a create is refused). */
  requestMac?: RequestMac;
}

export const RUN_MANAGER_MISSING = "operation run manager is not configured";
export const TASK_MANAGER_MISSING = "task manager is not configured";
export const INVENTORY_MISSING = "inventory is not configured";
export const POLICY_MISSING = "firmware policy is not configured";
export const IMAGES_MISSING = "firmware image catalog is not configured";

export interface FlowApiAssembly {
  stores: {
    runs: RunStore;
    inventory: InventoryStore;
    policy: FirmwarePolicyStore;
    readiness: ReadinessStore;
    images: FirmwareImageStore;
    /** Read by DeleteFirmwareImage: the tasks that have not ended. */
    tasks: Pick<TaskStore, "listTasks">;
  };
  /** The catalog's bucket of image bytes. */
  imageObjects: ImageObjectStore;
  tasks: { submitter: ChildTaskSubmitter; api: TasksApi };
  clock: Clock;
  newId: () => string;
  logger: Logger;
  /**
   * Runs a pass at once after resume and advance (the local stack). Absent on AWS: the runs
   * table's stream wakes the dispatcher for them.
   */
  dispatcher?: Pick<Dispatcher, "dispatchRun">;
  onRacksImported?: (racks: InventoryRack[]) => void;
  buildInfo: BuildInfo;
  /** The names of the deployment's external health checks: a rule may name only these. */
  externalChecks?: readonly string[];
  /** The keyed digest idempotent creates remember credentials by (absent: such a create is refused). */
  requestMac?: RequestMac;
}

export function assembleFlowApi(parts: FlowApiAssembly): FlowApi {
  const { stores, tasks, clock, logger } = parts;
  return composeFlowApi({
    runs: createRunService({
      runs: stores.runs,
      inventory: stores.inventory,
      policy: stores.policy,
      images: stores.images,
      // A rollback reads the rolled-back run's tasks (their reports) through the task service.
      tasks: { getTasks: (ids) => tasks.api.getTasks(ids) },
      clock,
      newId: parts.newId,
      ...(parts.requestMac === undefined ? {} : { requestMac: parts.requestMac }),
    }),
    controls: {
      ...createControls({
        runs: stores.runs,
        submitter: tasks.submitter,
        clock,
        logger,
        ...(parts.dispatcher === undefined ? {} : { dispatcher: parts.dispatcher }),
      }),
      ...createLateFailureReports({
        runs: stores.runs,
        clock,
        logger,
        ...(parts.dispatcher === undefined ? {} : { dispatch: pass(parts.dispatcher) }),
      }),
    },
    tasks: tasks.api,
    inventory: stores.inventory,
    policy: createPolicyService({
      policy: stores.policy,
      readiness: stores.readiness,
      images: stores.images,
      clock,
      newId: parts.newId,
      ...(parts.externalChecks === undefined ? {} : { externalChecks: parts.externalChecks }),
      log: (line) => logger.info(line),
    }),
    images: createImageService({
      images: stores.images,
      objects: parts.imageObjects,
      users: { baselines: stores.policy, runs: stores.runs, tasks: stores.tasks },
      clock,
      newId: parts.newId,
      log: (line) => logger.info(line),
    }),
    ...(parts.onRacksImported === undefined ? {} : { onRacksImported: parts.onRacksImported }),
    logger,
    buildInfo: parts.buildInfo,
  });
}

const pass =
  (dispatcher: Pick<Dispatcher, "dispatchRun">) =>
  (runId: string): Promise<unknown> =>
    dispatcher.dispatchRun(runId);

export function composeFlowApi(parts: FlowApiParts): FlowApi {
  const runs = () => parts.runs ?? missing(RUN_MANAGER_MISSING);
  const controls = () => parts.controls ?? missing(RUN_MANAGER_MISSING);
  const tasks = () => parts.tasks ?? missing(TASK_MANAGER_MISSING);
  const inventory = () => parts.inventory ?? missing(INVENTORY_MISSING);
  const policy = () => parts.policy ?? missing(POLICY_MISSING);
  const images = () => parts.images ?? missing(IMAGES_MISSING);
  return {
    createRun: async (input, options) => runs().createRun(input, options),
    planRun: async (input, options) => runs().planRun(input, options),
    getRun: async (id, includeStats) => runs().getRun(id, includeStats),
    listRuns: async (query) => runs().listRuns(query),
    listTargets: async (query) => runs().listTargets(query),
    listRunEvents: async (query) => runs().listRunEvents(query),
    pauseRun: async (id, actor) => controls().pauseRun(id, actor),
    approveRun: async (id, actor) => controls().approveRun(id, actor),
    resumeRun: async (id, actor) => controls().resumeRun(id, actor),
    advancePhase: async (id, expected, actor) => controls().advancePhase(id, expected, actor),
    cancelRun: async (id, reason, actor) => {
      // The reference checks for the task manager first: cancel must be able to stop children.
      tasks();
      return controls().cancelRun(id, reason, actor);
    },
    reportTargetFailure: async (request, actor) => controls().reportTargetFailure(request, actor),
    // The options carry the access policy's rack check: dropping them would skip the scope check.
    upgradeFirmware: async (request, options) => tasks().upgradeFirmware(request, options),
    getTasks: async (ids) => tasks().getTasks(ids),
    listTasks: async (query) => tasks().listTasks(query),
    cancelTask: async (id) => tasks().cancelTask(id),
    importInventory: async (racks: InventoryRack[], baselines: FirmwareBaseline[] = [], options = {}) => {
      const ids = racks.flatMap((r) => r.components.map((c) => c.id));
      const stored: Map<string, InventoryRack> =
        ids.length === 0 ? new Map() : await inventory().getRacksByComponentIds(ids);
      const known = new Map(
        [...stored.values()].flatMap((rack) => rack.components.map((c) => [c.id, c.type] as const)),
      );
      const changes = componentTypeChanges(racks, known);
      if (changes.length > 0 && options.allowComponentTypeChange !== true) {
        throw new ValidationError(changes.map(typeChangeViolation));
      }
      await inventory().upsertRacks(racks);
      for (const change of changes) {
        parts.logger?.info("component type changed by inventory import", {
          actor: options.actor?.name ?? "",
          authenticated: options.actor?.authenticated ?? false,
          componentId: change.componentId,
          from: change.from,
          to: change.to,
        });
      }
      parts.onRacksImported?.(racks);
      if (baselines.length > 0) await policy().setBaselines(baselines);
      return {
        racks: racks.length,
        components: racks.reduce((n, r) => n + r.components.length, 0),
        baselines: baselines.length,
      };
    },
    listRacks: async (offset, limit) => inventory().listRacks({ offset, limit }),
    setBaselines: async (baselines) => policy().setBaselines(baselines),
    listBaselines: async () => policy().listBaselines(),
    deleteBaseline: async (key) => policy().deleteBaseline(key),
    setReadiness: async (componentId, readiness) => policy().setReadiness(componentId, readiness),
    createRule: async (definition, options) => policy().createRule(definition, options),
    getRule: async (id, version) => policy().getRule(id, version),
    listRules: async (page) => policy().listRules(page),
    beginImageUpload: async (input) => images().beginImageUpload(input),
    completeImageUpload: async (input, actor) => images().completeImageUpload(input, actor),
    listImages: async (query) => images().listImages(query),
    deleteImage: async (input, actor) => images().deleteImage(input, actor),
    version: () => parts.buildInfo,
  };
}

function missing(message: string): never {
  throw new FailedPreconditionError(message);
}
