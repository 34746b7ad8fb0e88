/**
 * The application's public surface: what the gRPC adapter (and tests) call. Implementations
 * validate their input with the pure core and throw `FlowError`s (src/domain/errors.ts); the gRPC
 * adapter maps those to status codes in one place (src/adapters/grpc/status.ts).
 */
import type { RackPlace } from "../domain/access-policy.js";
import type { Actor } from "../domain/actor.js";
import type { ApprovalRule } from "../domain/approval.js";
import type { CreateRunInput } from "../domain/create-run-input.js";
import type { BaselineKey, FirmwareBaseline } from "../domain/firmware-baselines.js";
import type {
  BeginUploadInput,
  CompleteUploadInput,
  FirmwareImage,
  ImageKeyInput,
} from "../domain/firmware-images.js";
import type { FirmwareTemplateInput } from "../domain/firmware-template.js";
import type { RunHistoryEvent } from "../domain/history-event.js";
import type { ComponentReadiness, InventoryComponent, InventoryRack } from "../domain/inventory.js";
import type { LateFailureRequest } from "../domain/late-failure.js";
import type { ListRunsQuery, ListTargetsQuery, ListTasksQuery, Page } from "../domain/list-queries.js";
import type {
  ComponentSkip,
  ComponentType,
  Plan,
  Run,
  RunConfig,
  Target,
  VersionGroup,
} from "../domain/model.js";
import type { OperationRule, RuleDefinition } from "../domain/operation-rules.js";
import type { RunStats } from "../domain/stats.js";
import type { Task } from "../domain/task.js";

export interface TargetView extends Target {
  rackExternalId: string;
}

export interface BuildInfo {
  version: string;
  buildTime: string;
  gitCommit: string;
}

/** How a create is called, beside what it creates. */
export interface CreateRunOptions {
  /**
   * The client's idempotency key (client_request_id): a retry of the same request with it gets the
   * first run's id; another request with it is InvalidArgument. Absent: every call creates a run.
   */
  clientRequestId?: string;
  /**
   * True once nobody can receive the answer any more (the call's deadline passed, or the client
   * cancelled it): the run is then not committed. Asked before writing and right before the commit.
   */
  abandoned?: () => boolean;
  /**
   * The call's deadline, epoch ms (absent: none). A create with too little of it left to commit
   * (src/app/commit-reserve.ts) answers UNAVAILABLE rather than commit after the caller gave up.
   */
  deadline?: number;
  /**
   * Who asked, as the gRPC adapter found out (a verified certificate's subject, or a declared
   * name); the run history records it. Absent (an internal caller such as a benchmark): the
   * CREATED event has no actor.
   */
  actor?: Actor;
  /**
   * Under an access policy: called with the racks the plan freezes, before anything is written;
   * throws PermissionDenied for racks outside the caller's scope.
   */
  permitRacks?: (racks: readonly RackPlace[]) => void;
  /**
   * The access policy's two-person rule: a plan over at least `minRacks` distinct racks is
   * created PAUSED / AWAITING_APPROVAL (src/domain/approval.ts). Absent: no run waits.
   */
  approval?: ApprovalRule;
}

/** `actor` on the controls: who asked, as for create (CreateRunOptions.actor). */
export interface OperationRunsApi {
  /** Validates, plans and freezes a run with its targets and its CREATED event, atomically. Returns the new run id. */
  createRun(input: CreateRunInput, options?: CreateRunOptions): Promise<{ id: string }>;
  /**
   * Exactly what createRun would freeze, written nowhere (flowctl --dry-run). A client request id
   * that createRun would refuse as reused is refused here too.
   */
  planRun(
    input: CreateRunInput,
    options?: Pick<CreateRunOptions, "clientRequestId">,
  ): Promise<{
    config: RunConfig;
    plan: Plan;
    rackExternalIds: Map<string, string>;
    /** When its maintenance window next opens, from now (`nextOpenings`, up to 5). */
    nextWindowOpenings: number[];
    /** Rack id → the versions its components would be frozen with (runs without target_version). */
    versions?: Map<string, VersionGroup[]>;
    /** (ours) A rollback: rack id → the components it leaves alone, and why. */
    skipped?: Map<string, ComponentSkip[]>;
  }>;
  getRun(id: string, includeStats: boolean): Promise<{ run: Run; stats?: RunStats }>;
  listRuns(query: ListRunsQuery): Promise<{ runs: Run[]; total: number }>;
  listTargets(query: ListTargetsQuery): Promise<{ targets: TargetView[]; total: number }>;
  /** (ours) The run's history, oldest first, paged; NotFound for an unknown run. */
  listRunEvents(query: { runId: string; page: Page }): Promise<{ events: RunHistoryEvent[]; total: number }>;
  pauseRun(id: string, actor?: Actor): Promise<Run>;
  resumeRun(id: string, actor?: Actor): Promise<Run>;
  /** `expectedPhaseIndex` 0 or absent skips the check. */
  advancePhase(id: string, expectedPhaseIndex: number | undefined, actor?: Actor): Promise<Run>;
  cancelRun(id: string, reason: string, actor?: Actor): Promise<Run>;
  /** (ours) A COMPLETED target reported FAILED afterwards (src/app/late-failures.ts). */
  reportTargetFailure(request: LateFailureRequest, actor?: Actor): Promise<Run>;
  /**
   * (ours) Releases a run the two-person rule holds: FailedPrecondition unless it is awaiting
   * approval; Unauthenticated without a verified certificate; PermissionDenied for its creator.
   */
  approveRun(id: string, actor?: Actor): Promise<Run>;
}

export interface TasksApi {
  /** One task per rack of the (required) explicit target spec; validates the request (InvalidArgument). */
  upgradeFirmware(
    request: FirmwareTemplateInput,
    options?: Pick<CreateRunOptions, "permitRacks">,
  ): Promise<{ taskIds: string[] }>;
  getTasks(ids: string[]): Promise<Task[]>;
  listTasks(query: ListTasksQuery): Promise<{ tasks: Task[]; total: number }>;
  cancelTask(id: string): Promise<Task>;
}

export interface InventoryApi {
  /** Racks are upserted, then baselines (the inventory file carries both). */
  importInventory(
    racks: InventoryRack[],
    baselines?: FirmwareBaseline[],
    /**
     * `allowComponentTypeChange`: a known component may change type (else InvalidArgument naming
     * each; src/domain/component-type-change.ts); `actor`: who, for the log line of each change.
     */
    options?: { allowComponentTypeChange?: boolean; actor?: Actor },
  ): Promise<{ racks: number; components: number; baselines: number }>;
  listRacks(offset: number, limit: number): Promise<{ racks: InventoryRack[]; total: number }>;
}

/** The admin service's firmware policy (src/app/firmware-policy.ts). */
export interface PolicyApi {
  /** Adds or replaces each baseline (by type, model, vendor); returns the whole list after. */
  setBaselines(baselines: FirmwareBaseline[]): Promise<FirmwareBaseline[]>;
  listBaselines(): Promise<FirmwareBaseline[]>;
  /** The removed baseline; NotFound when none has `key`. */
  deleteBaseline(key: BaselineKey): Promise<FirmwareBaseline>;
  /** Sets (undefined: clears to READY) a component's readiness; NotFound for an unknown component. */
  setReadiness(componentId: string, readiness: ComponentReadiness | undefined): Promise<InventoryComponent>;
  /** A new rule, or (with `id`) the next version of one; FailedPrecondition on `expectedVersion` or the default. */
  createRule(
    definition: RuleDefinition,
    options?: { id?: string; expectedVersion?: number },
  ): Promise<OperationRule>;
  /** The latest version, or `version`; NotFound `rule <id> not found`. The built-in default included. */
  getRule(id: string, version?: number): Promise<OperationRule>;
  /** The built-in default first, then the stored rules' latest versions by name. */
  listRules(page: Page): Promise<{ rules: OperationRule[]; total: number }>;
}

/** The admin service's firmware image catalog (src/app/firmware-images.ts). */
export interface ImagesApi {
  /** Validates, then a presigned PUT to a staging key; FailedPrecondition when the key has other bytes. */
  beginImageUpload(
    input: BeginUploadInput,
  ): Promise<{ uploadId: string; url: string; expiresAt: number; existing?: FirmwareImage }>;
  /** Verifies the staged bytes and registers them; `alreadyRegistered` for the same bytes again. */
  completeImageUpload(
    input: CompleteUploadInput,
    actor: Actor,
  ): Promise<{ image: FirmwareImage; alreadyRegistered: boolean }>;
  listImages(query: { componentType?: ComponentType; page: Page }): Promise<{
    images: FirmwareImage[];
    total: number;
  }>;
  /**
   * Removes an image (record, then every version of its object unless another record has the
   * same bytes). NotFound without one; FailedPrecondition naming what uses it (image-use.ts).
   */
  deleteImage(
    input: ImageKeyInput,
    actor: Actor,
  ): Promise<{ image: FirmwareImage; objectVersionsDeleted: number }>;
}

export interface FlowApi extends OperationRunsApi, TasksApi, InventoryApi, PolicyApi, ImagesApi {
  version(): BuildInfo;
}
