/**
 * The application's public surface: what the gRPC adapter (and tests) call. Implementations
 * validate their input with the pure core and throw `FlowError`s (src/domain/errors.ts); the gRPC
 * adapter maps those to status codes in one place (src/adapters/grpc/status.ts).
 */
import type { Actor } from "../domain/actor.js";
import type {
  CreateRunInput,
  InventoryRack,
  ListRunsQuery,
  ListTargetsQuery,
  ListTasksQuery,
  Page,
  Plan,
  Run,
  RunConfig,
  RunStats,
  Target,
  Task,
} from "../domain/model.js";
import type { FirmwareTemplateInput } from "../domain/run-config.js";
import type { RunHistoryEvent } from "../domain/run-history.js";

export interface TargetView extends Target {
  rackExternalId: string;
}

export interface BuildInfo {
  version: string;
  buildTime: string;
  gitCommit: string;
}

/**
 * `actor` on create and the controls: who asked, as the gRPC adapter found out (a verified
 * certificate's subject, or a declared name); the run history records it. Absent (an internal
 * caller such as a benchmark): the events have no actor.
 */
export interface OperationRunsApi {
  /** Validates, plans and freezes a run with its targets and its CREATED event, atomically. Returns the new run id. */
  createRun(input: CreateRunInput, actor?: Actor): Promise<{ id: string }>;
  /** Exactly what createRun would freeze, written nowhere (flowctl --dry-run). */
  planRun(input: CreateRunInput): Promise<{
    config: RunConfig;
    plan: Plan;
    rackExternalIds: Map<string, string>;
    /** When its maintenance window next opens, from now (`nextOpenings`, up to 5). */
    nextWindowOpenings: number[];
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
}

export interface TasksApi {
  /** One task per rack of the (required) explicit target spec; validates the request (InvalidArgument). */
  upgradeFirmware(request: FirmwareTemplateInput): Promise<{ taskIds: string[] }>;
  getTasks(ids: string[]): Promise<Task[]>;
  listTasks(query: ListTasksQuery): Promise<{ tasks: Task[]; total: number }>;
  cancelTask(id: string): Promise<Task>;
}

export interface InventoryApi {
  importInventory(racks: InventoryRack[]): Promise<{ racks: number; components: number }>;
  listRacks(offset: number, limit: number): Promise<{ racks: InventoryRack[]; total: number }>;
}

export interface FlowApi extends OperationRunsApi, TasksApi, InventoryApi {
  version(): BuildInfo;
}
