/**
 * Storage ports: the small interfaces the use cases (create run, dispatch, record outcome, gates,
 * controls, tasks, inventory) depend on. The DynamoDB adapter (src/adapters/dynamodb) implements
 * them; test fakes are typed from the same interfaces so they cannot drift.
 *
 * Every method's idempotency and atomicity is part of its contract and is written next to it.
 * Concurrency rule for implementers AND callers: a state change is ONE conditional write (or one
 * transaction) whose condition pins the state the caller saw. Never read, decide, then write
 * unconditionally: two dispatchers (a tick and a stream wake-up) routinely overlap.
 *
 * Outcomes that callers branch on are returned as named values ('claimed' | 'slots-full' | …);
 * only unexpected failures throw.
 */
import type { BmcCommand, EncryptedAuth } from "../domain/bmc-protocol.js";
import type { CommandEntry, CommandFamily, CommandSet, EntryWrite } from "../domain/command-sets.js";
import type { BaselineKey, FirmwareBaseline } from "../domain/firmware-baselines.js";
import type {
  ComponentReadiness,
  ComponentsForType,
  ComponentType,
  FirmwareAuthentication,
  FirmwareTemplate,
  InventoryComponent,
  InventoryRack,
  OutcomeStatus,
  Page,
  Run,
  Target,
  TargetStatus,
  Task,
  TaskStatus,
  VersionGroup,
} from "../domain/model.js";
import type { OperationRule } from "../domain/operation-rules.js";
import type { RunHistoryEvent } from "../domain/run-history.js";

// ---------------------------------------------------------------------------------------------
// Runs and targets

/** What ListOperationRuns filters on, read from a narrow index (no configuration, no counters). */
export interface RunListEntry {
  id: string;
  name: string;
  status: Run["status"];
  reason: Run["reason"];
  /** `run.config.operation.kind`, e.g. "upgradeFirmware". */
  operationKind: Run["config"]["operation"]["kind"];
  createdAt: number;
}

export interface ListTargetsOptions {
  /** Inclusive phase range; `phaseTo < phaseFrom` is an empty result. */
  phaseFrom: number;
  phaseTo: number;
  status?: TargetStatus;
  page: Page;
  /**
   * The caller has just read this run through getRun (so it exists and is committed): skip the
   * store's own existence read, one GetItem per listing.
   */
  knownCommitted?: boolean;
}

export type SaveRunOutcome = "saved" | "stale" | "not-found";
export type ClaimOutcome = "claimed" | "slots-full" | "lost-race" | "run-not-active" | "window-closed";
export interface BatchClaimResult {
  outcome: ClaimOutcome;
  /** The targets as claimed (CLAIMED, lease and updatedAt set); empty unless 'claimed'. */
  claimed: Target[];
}
export type TransitionOutcome = "recorded" | "already-recorded" | "lost-race" | "not-found";

export interface BlockedUpdate {
  message: string;
  retryAt: number;
  conflictAttempts: number;
  firstBlockedAt: number;
}

/** A client request id as remembered with the run it created (idempotent create). */
export interface ClientRequest {
  /** CreateOperationRunRequest.client_request_id. */
  id: string;
  /** requestFingerprint of the request that created the run (src/domain/client-request.ts). */
  fingerprint: string;
  /** Epoch ms after which the id is forgotten (a later create with it makes a new run). */
  expiresAt: number;
}

export interface ClientRequestRecord extends Omit<ClientRequest, "id"> {
  runId: string;
}

export interface CreateRunOptions {
  /** Committed with the run, in the commit transaction: the id then names this run until it expires. */
  clientRequest?: ClientRequest;
  /** The run's history events (its CREATED event), committed with it. */
  events?: readonly RunHistoryEvent[];
  /**
   * Asked right before the commit; false abandons the create: nothing becomes visible (targets
   * written ahead are invisible orphans that expire as after a crash). The caller's deadline.
   */
  mayCommit?: () => boolean;
}

export type CreateRunOutcome =
  | { outcome: "created" }
  /** `mayCommit` said no: nothing was committed. */
  | { outcome: "abandoned" }
  /** Another create committed with the same client request id (not expired) first: nothing was. */
  | { outcome: "request-id-taken" };

export interface RunStore {
  /**
   * Freezes a run with its targets. All-or-nothing to every reader: until the run item is written
   * (the commit, written last) no reader sees the run or any of its targets; a failure part-way
   * leaves only invisible orphans that expire by TTL. Throws `AlreadyExistsError`-like failure
   * (FlowError ALREADY_EXISTS) if the run id exists. `run.config.operation.firmware.authentication`
   * is stored encrypted and stripped from the stored configuration (see getRunSecrets).
   * Not idempotent by itself: callers generate a fresh run id per request, and pass the client's
   * request id, if any, as `clientRequest` so that a retry finds the run (getClientRequest).
   * `events` (the run's CREATED event) are written in the commit, so they exist exactly when the
   * run does; each must be of this run and at its `updatedAt` (else RangeError).
   */
  createRun(run: Run, targets: Target[], options?: CreateRunOptions): Promise<CreateRunOutcome>;

  /** The run a client request id created, unless unknown or expired at `now` (epoch ms). */
  getClientRequest(id: string, now: number): Promise<ClientRequestRecord | undefined>;

  /** A committed run, its configuration WITHOUT authentication data; undefined if absent. */
  getRun(runId: string): Promise<Run | undefined>;

  /** The decrypted firmware credentials, for the child-task path only. Never hand to clients. */
  getRunSecrets(runId: string): Promise<FirmwareAuthentication | undefined>;

  /**
   * Committed runs newest first (createdAt desc, ties by id desc), filtered by `matches`, then
   * paged; `total` counts matches before paging. Reads the narrow list index in full (runs are
   * few) and full items for the page only.
   */
  listRuns(matches: (run: RunListEntry) => boolean, page: Page): Promise<{ runs: Run[]; total: number }>;

  /**
   * Targets of a committed run in phase-then-sequence order; `total` counts before paging.
   * Unknown or uncommitted run → undefined (the caller answers NotFound).
   */
  listTargets(
    runId: string,
    options: ListTargetsOptions,
  ): Promise<{ targets: Target[]; total: number } | undefined>;

  getTarget(runId: string, targetId: string): Promise<Target | undefined>;

  /** Ids of runs in PENDING or RUNNING, from a sparse index (cost grows with active runs only). */
  listActiveRunIds(): Promise<string[]>;

  /**
   * Writes the run's control fields (status, reason, statusMessage, currentPhaseIndex, startedAt,
   * finishedAt, updatedAt) if the stored `updatedAt` still equals `expectedUpdatedAt`; otherwise
   * 'stale' and nothing is written. Never touches `inFlight` or the outcome counters: those move
   * only with target transitions, so a saveRun cannot lose a concurrent count.
   * `run.updatedAt` must differ from `expectedUpdatedAt` (use max(now, expected + 1)).
   *
   * With `events` (the history events this change records, src/domain/run-history.ts), ONE
   * transaction: the run write as above, and each event put under (run, at, seq) only if that key
   * is new. Both or neither: 'stale' or 'not-found' writes no event, and an event key already taken
   * writes nothing and is 'stale'. So a retried control, a duplicated stream record or two racing
   * passes record a change exactly once. Each event must be of this run and at the new
   * `run.updatedAt` (else RangeError: the version is what makes its key unique).
   *
   *   A, B read the run at version 100; both decide "phase 1 opened"
   *   A: saveRun(v105, expected 100, [PHASE_OPENED@105]) → saved: the run and the event
   *   B: saveRun(v106, expected 100, [PHASE_OPENED@106]) → stale: no run write, no event
   */
  saveRun(run: Run, expectedUpdatedAt: number, events?: readonly RunHistoryEvent[]): Promise<SaveRunOutcome>;

  /**
   * A committed run's history, oldest first (by `at`, then `seq`), paged; `total` counts before
   * paging. Strongly consistent: a control's event is there once the control returned. Unknown or
   * uncommitted run → undefined (the caller answers NotFound); `knownCommitted` as for listTargets.
   * One Query page holds well over a thousand events (a run records a few per phase and per pause).
   */
  listRunEvents(
    runId: string,
    page: Page,
    options?: { knownCommitted?: boolean },
  ): Promise<{ events: RunHistoryEvent[]; total: number } | undefined>;

  /**
   * One phase's claim queue, strongly consistent, each list in sequence order: every HELD target
   * (BLOCKED, waiting for its retry or its conflict timeout; CLAIMED, under a lease or past it) and
   * the first `pendingLimit` PENDING targets (none for 0). A pass needs no more: it claims at most
   * its free slots, and only BLOCKED targets can time out. Reads what it returns, not the phase.
   */
  listQueuedTargets(
    runId: string,
    phaseIndex: number,
    pendingLimit: number,
  ): Promise<{ held: Target[]; pending: Target[] }>;

  /**
   * ONE transaction:
   *   target: status, updatedAt == the `expected` target's (still ready) → CLAIMED, lease now+leaseMs
   *   run:    status ∈ {PENDING, RUNNING}; now < the run's end_time (if it has one); if the target
   *           was not already CLAIMED: inFlight < maxConcurrentTargets, inFlight += 1
   * An expired CLAIMED target already holds its in-flight slot, so re-claiming it takes none.
   * 'lost-race': the target changed since it was read (someone else claimed or moved it).
   * 'slots-full': inFlight reached the limit. 'run-not-active': the run is paused or terminal.
   * 'window-closed': `now` is not before the run's end_time, or not before `until` (the close of
   * the maintenance window the caller found open; then nothing is sent at all). Callers take `now`
   * right before the call: the time the claim is judged by is the claim's own, not a read's.
   * Under N concurrent claimers the number of CLAIMED+SUBMITTED targets never exceeds the limit.
   */
  claimTarget(expected: Target, leaseMs: number, now: number, until?: number): Promise<ClaimOutcome>;

  /**
   * claimTarget for several targets of ONE run in ONE transaction, all or nothing:
   *   each target: the same condition as claimTarget → CLAIMED, lease now+leaseMs
   *   run:         status ∈ {PENDING, RUNNING}; now < end_time; inFlight + k <= maxConcurrentTargets,
   *                inFlight += k (and 'window-closed' as for claimTarget)
   * where k counts the targets that were not already CLAIMED (expired claims keep their slot).
   * Example: max 5, inFlight 2, batch [A PENDING, B BLOCKED (retry due), C CLAIMED (lease over)]
   * → k = 2, inFlight 4, all three CLAIMED; with inFlight 4 instead → 'slots-full', none claimed.
   * 'claimed': every target moved (`claimed` lists them, as now stored). Otherwise nothing moved
   * and `claimed` is empty: 'lost-race' (some target changed since it was read; the caller may
   * claim one by one), 'slots-full', 'run-not-active'. An empty batch is 'claimed' with nothing.
   * At most 98 distinct targets (99 transaction items); more, or targets of two runs, throw.
   */
  claimTargets(expected: Target[], leaseMs: number, now: number, until?: number): Promise<BatchClaimResult>;

  /**
   * CLAIMED → SUBMITTED with the child task id and `message` (default "submitted", which also
   * clears a conflict message left from an earlier BLOCKED); the slot stays taken. Idempotent:
   * already SUBMITTED with the same task id → 'already-recorded'. Any other state → 'lost-race'.
   */
  recordSubmitted(
    runId: string,
    targetId: string,
    taskId: string,
    now: number,
    message?: string,
  ): Promise<TransitionOutcome>;

  /**
   * CLAIMED → BLOCKED (rack conflict) with backoff state, releasing the in-flight slot, in one
   * transaction. Not CLAIMED → 'lost-race' and nothing moves.
   */
  recordBlocked(
    runId: string,
    targetId: string,
    blocked: BlockedUpdate,
    now: number,
  ): Promise<TransitionOutcome>;

  /**
   * Any non-terminal state → `status`, in ONE transaction with: that phase's outcome counter += 1
   * and, only if the target was CLAIMED or SUBMITTED, inFlight -= 1. Exactly once: a repeat (the
   * target is already terminal) is a no-op returning 'already-recorded', so stream redelivery and
   * retried child tasks cannot double-count. Works whatever the run's status (paused runs too).
   * `phaseIndex`: the target's phase, when the caller knows it (a child task's outcome): the
   * store may then write a target still in flight without reading it first, under a condition
   * that it is CLAIMED or SUBMITTED in that phase; a target in any other state is read and
   * handled as without it.
   */
  recordOutcome(
    runId: string,
    targetId: string,
    status: OutcomeStatus,
    message: string,
    now: number,
    phaseIndex?: number,
  ): Promise<TransitionOutcome>;

  /**
   * recordOutcome(SKIPPED) for each listed target: a cancel's targets that never got a child task.
   * Each target moves exactly once; returns how many moved now.
   */
  skipTargets(runId: string, targetIds: string[], message: string, now: number): Promise<number>;

  /**
   * A BLOCKED target stays BLOCKED with `firstBlockedAt = now` (resume after
   * CONFLICT_RETRY_TIMEOUT restarts the timeout). Not BLOCKED → 'lost-race'. Idempotent enough:
   * a repeat only moves the clock again.
   */
  restartConflictClock(runId: string, targetId: string, now: number): Promise<TransitionOutcome>;
}

// ---------------------------------------------------------------------------------------------
// Run events out

/**
 * Where the run history is published for other systems: EventBridge (in AWS, and locally on
 * moto). At-least-once: the publisher reads the RunEvents stream, which delivers each event at
 * least once, and an event whose publication failed is published again, so a consumer may see one
 * twice and dedupes on its id (`runEventId`). Order is not guaranteed across retries.
 */
export interface RunEventBus {
  /**
   * Publishes each event once per call; resolves with the indexes of the ones the bus refused
   * (to publish again later). Throws when the bus could not be reached: none may have arrived.
   */
  publish(events: readonly RunHistoryEvent[]): Promise<{ rejected: number[] }>;
}

// ---------------------------------------------------------------------------------------------
// Tasks

export type CreateTaskOutcome = { created: true; task: Task } | { created: false; task: Task };
export type SaveTaskOutcome = "saved" | "stale" | "not-found";

export interface ListTasksOptions {
  rackId?: string;
  componentId?: string;
  activeOnly: boolean;
  page: Page;
}

export interface TaskStore {
  /**
   * Creates the task. With `task.idempotencyKey`, at most one task ever exists per key: a repeat
   * returns the EXISTING task with created: false (the key and the task are written in one
   * transaction, so there is never a key without its task).
   */
  createTask(task: Task): Promise<CreateTaskOutcome>;
  /**
   * createTask and the rack's lock for the task (as RackLockStore.acquire(task.rackId, task.id,
   * lockTtlMs, now)) in ONE transaction, both or neither: a submission's lock and task in one
   * round trip instead of two. Another owner's live lock → 'held', nothing written; a task already
   * under the key → as createTask (created: false), the lock not taken. Optional: a store without
   * it leaves the task service taking the lock, then creating the task.
   */
  createTaskWithLock?(task: Task, lockTtlMs: number, now: number): Promise<CreateTaskOutcome | "held">;
  /** In the order asked, unknown ids skipped. */
  getTasks(ids: string[]): Promise<Task[]>;
  getTaskByIdempotencyKey(key: string): Promise<Task | undefined>;
  /** Newest first (createdAt desc, ties by id desc); total before paging. */
  listTasks(options: ListTasksOptions): Promise<{ tasks: Task[]; total: number }>;
  /** Whole-task replace if the stored updatedAt equals `expectedUpdatedAt`. */
  saveTask(task: Task, expectedUpdatedAt: number): Promise<SaveTaskOutcome>;
  /**
   * A run child's ending in ONE transaction, all or nothing: saveTask(task, expectedUpdatedAt),
   * RunStore.recordOutcome of its target, when that target is still in flight (CLAIMED or
   * SUBMITTED) in `outcome.phaseIndex`, and RackLockStore.release(task.rackId, task.id).
   * 'separately': the target is not in flight (or its run is gone), or another task holds the
   * rack's lock; nothing written, the caller makes the three writes in turn, as without this
   * method. Optional: a store without it leaves them to the caller.
   */
  saveTaskWithOutcome?(
    task: Task,
    expectedUpdatedAt: number,
    outcome: RunChildOutcome,
  ): Promise<SaveTaskOutcome | "separately">;
}

/** A run child's target outcome, as the task store writes it with the task's ending. */
export interface RunChildOutcome {
  runId: string;
  targetId: string;
  phaseIndex: number;
  status: OutcomeStatus;
  message: string;
  now: number;
}

export const ACTIVE_TASK_STATUSES: ReadonlySet<TaskStatus> = new Set(["PENDING", "RUNNING", "WAITING"]);

// ---------------------------------------------------------------------------------------------
// Inventory

/**
 * A rack as planning the default scope reads it: id, name, external id and its components' ids and
 * types, nothing else (no location, firmware versions or component external ids). It is an
 * InventoryRack with those optional fields absent, so the planner takes it as it is.
 */
export interface ScopeRack {
  id: string;
  name: string;
  externalId?: string;
  components: { id: string; type: ComponentType }[];
}

/**
 * Every lookup reads by key or index: cost grows with what is asked for, never with the fleet.
 * Only `loadAll` (ListRacks) reads the whole table.
 */
export interface InventoryStore {
  /** Creates or replaces each rack (with its component lookups). Idempotent. */
  upsertRacks(racks: InventoryRack[]): Promise<void>;
  /** Every rack, sorted by id: a Scan of the whole table, for ListRacks only. */
  loadAll(): Promise<InventoryRack[]>;
  /** In the order asked; unknown ids skipped. */
  getRacksByIds(ids: string[]): Promise<InventoryRack[]>;
  /** Every rack of each name (two racks may share one), each name's racks by id. */
  getRacksByNames(names: string[]): Promise<InventoryRack[]>;
  getRacksByExternalIds(externalIds: string[]): Promise<InventoryRack[]>;
  getRacksByNvlDomain(ref: { by: "id"; id: string } | { by: "name"; name: string }): Promise<InventoryRack[]>;
  /** componentId → the rack that holds it. */
  getRacksByComponentIds(componentIds: string[]): Promise<Map<string, InventoryRack>>;
  /** Every rack holding a component of `type` with this external id, by id (two: ambiguous). */
  getRacksByComponentExternalId(type: ComponentType, externalId: string): Promise<InventoryRack[]>;
  /**
   * The default scope's candidates: racks in id order for which `qualifies` holds, at most `limit`
   * of them; reading stops once `limit` qualified. Reads a narrow index (about 40 bytes a
   * component), never the rack items, so a plan over a large fleet reads about `limit` racks.
   */
  listScopeRacks(qualifies: (rack: ScopeRack) => boolean, limit: number): Promise<ScopeRack[]>;
}

// ---------------------------------------------------------------------------------------------
// Firmware policy: baselines (src/domain/firmware-baselines.ts), operation rules
// (src/domain/operation-rules.ts), component readiness

export interface FirmwarePolicyStore {
  /**
   * Every baseline, in sortBaselines order: ONE strongly consistent read, whatever the count
   * (the create path calls it once per run without target_version).
   */
  listBaselines(): Promise<FirmwareBaseline[]>;
  /**
   * Adds each baseline, or replaces the one with the same key (type, model, vendor), all in one
   * conditional write (an edit racing another is re-read and re-applied, never lost). Idempotent.
   */
  putBaselines(baselines: readonly FirmwareBaseline[]): Promise<void>;
  /** Removes the baseline of `key` and returns it; undefined if there was none (conditional like putBaselines). */
  deleteBaseline(key: BaselineKey): Promise<FirmwareBaseline | undefined>;

  /** The rule's latest version, or that `version`; undefined if there is none. One GetItem. */
  getRule(id: string, version?: number): Promise<OperationRule | undefined>;
  /**
   * Writes `rule` as a new version, never over one: ONE transaction of the version's own item
   * (absent), the rule's head (its version must be rule.version − 1, or absent for version 1)
   * and the list index. 'conflict': that version exists already (a concurrent write); nothing
   * was written.
   */
  putRuleVersion(rule: OperationRule): Promise<"written" | "conflict">;
  /** The latest version of every stored rule, by name then id; total before paging. */
  listRules(page: Page): Promise<{ rules: OperationRule[]; total: number }>;
}

/**
 * Component readiness as the inventory holds it (on the component, inside its rack's item).
 * Absent readiness is READY.
 */
export interface ReadinessStore {
  /**
   * Sets (or, undefined, clears to READY) one component's readiness in place: one conditional
   * update of its rack, pinned on the component still being where it was read (an import in
   * between moves it: read again). Idempotent. Undefined if no rack holds the component.
   */
  setReadiness(
    componentId: string,
    readiness: ComponentReadiness | undefined,
  ): Promise<{ rackId: string; component: InventoryComponent } | undefined>;
  /** The components of one rack that are not READY (one strongly consistent read of the rack). */
  notReady(rackId: string): Promise<Map<string, ComponentReadiness>>;
}

// ---------------------------------------------------------------------------------------------
// Rack locks

export type AcquireOutcome = "acquired" | "held";
export type ReleaseOutcome = "released" | "not-held";

export interface RackLockStore {
  /**
   * Takes the rack's lock for `owner` until now+ttlMs, if it is free, expired, or already ours
   * (re-acquiring extends it: idempotent). Held by another owner → 'held'.
   */
  acquire(rackId: string, owner: string, ttlMs: number, now: number): Promise<AcquireOutcome>;
  /** Releases only if `owner` holds it; releasing a lock we do not hold is 'not-held' (idempotent). */
  release(rackId: string, owner: string): Promise<ReleaseOutcome>;
  get(rackId: string): Promise<{ owner: string; expiresAt: number } | undefined>;
}

// ---------------------------------------------------------------------------------------------
// Child tasks: submission and execution
//
// The dispatcher claims a target and hands it to a `ChildTaskSubmitter`; the task service
// (src/app/child-task/task-service.ts) implements it by taking the rack lock, creating the task
// under its idempotency key and starting a `TaskExecutor` execution (Step Functions in AWS and
// locally via aws-local-stepfunctions).
//
// When a child task ends, the task path records the outcome on the task AND on the run's target
// (RunStore.recordOutcome: counters move exactly once), releases the rack lock, and the DynamoDB
// stream of that target transition wakes the dispatcher for the run, which refills the slot.

/** `operation-run-target:<targetId>`: a retried submission finds the task instead of making a second. */
export const targetIdempotencyKey = (targetId: string): string => `operation-run-target:${targetId}`;

export interface ChildTaskRequest {
  idempotencyKey: string;
  runId: string;
  targetId: string;
  /** The target's phase, frozen on the task (Task.targetPhaseIndex). */
  phaseIndex?: number;
  /**
   * The target was PENDING when this submission's claim took it, so it was never submitted
   * before and no task can exist under the key: the service skips its idempotency lookup
   * (creating the task under the key still refuses a second one).
   */
  firstAttempt?: boolean;
  rackId: string;
  /** The target's frozen rack external id, frozen on the task too. */
  rackExternalId?: string;
  componentsByType: ComponentsForType[];
  /** Each component's version, frozen at create from the baselines (Target.versions). */
  versions?: VersionGroup[];
  /** The run's frozen rule (Run.rule); absent: the built-in default. */
  rule?: OperationRule;
  /** The run's frozen upgrade template; its targetSpec is ignored (the target is the rack). */
  template: FirmwareTemplate;
}

export type SubmitOutcome =
  /** The task exists (now or from an earlier attempt) and its execution was started. */
  | { kind: "submitted"; taskId: string }
  /** The rack is busy with another task (conflict strategy REJECT): block and back off. */
  | { kind: "conflict"; message: string }
  /** Any other submission error: the target fails with this text. */
  | { kind: "rejected"; message: string };

export interface ChildTaskSubmitter {
  /**
   * Idempotent per `idempotencyKey`: a retry (after a crash, a lost response or a lease expiry)
   * returns the same task id and never starts a second execution, so a rack is never flashed twice.
   */
  submit(request: ChildTaskRequest, now: number): Promise<SubmitOutcome>;
  /**
   * Best effort: stops the task's execution. When it stops, the task path records TERMINATED on the
   * task and its target. Stopping an already finished task is a no-op.
   */
  cancel(taskId: string, reason: string): Promise<void>;
}

/** Runs one child task. Implementations: Step Functions (AWS), aws-local-stepfunctions (local). */
export interface TaskExecutor {
  /** Idempotent: the execution name is the task id, so a repeat start returns the same execution. */
  start(task: Task): Promise<{ executionId: string }>;
  /** Idempotent: stopping a stopped or finished execution is a no-op. */
  stop(executionId: string, cause: string): Promise<void>;
}

/**
 * Wakes the dispatcher for one run (a slot freed, a phase may be complete, a gate may trip), called
 * by whoever just recorded a target's outcome. Best effort and never throws: the targets stream
 * wakes the run too, a little later, and the tick after that. Resolves once the wake-up is handed
 * on (an asynchronous Lambda invocation accepted; locally, a pass queued), not when the pass ends.
 */
export interface RunWaker {
  wake(runId: string): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Child-task steps: BMC requests and commands, credentials, firmware versions

/**
 * A cheap question to the data store that says whether it can be reached: resolves when it
 * answered (whatever it answered), rejects when it could not be reached or kept throttling.
 */
export interface StoreProbe {
  probe(): Promise<void>;
}

/**
 * A child task's BMC commands as command sets (src/domain/command-sets.ts): one record per task and
 * family (updates, preflight queries, verify queries), one entry per command. Every report for
 * one of a task's commands lands on its entry, found from the request id alone.
 */
export interface CommandSetStore {
  /**
   * Adds `entries` to the task's `family` record, creating it if absent; an entry already there
   * keeps what it holds (its first window and publication: a retried step learns it published).
   * Returns the record as stored. One write.
   */
  open(taskId: string, family: CommandFamily, entries: Record<string, CommandEntry>): Promise<CommandSet>;
  /** Marks these entries published (the first time stays). One write. */
  markPublished(
    taskId: string,
    family: CommandFamily,
    entryKeys: readonly string[],
    now: number,
  ): Promise<void>;
  /** Strongly consistent; undefined: no such record. */
  get(taskId: string, family: CommandFamily): Promise<CommandSet | undefined>;
  /**
   * Re-driven tasks: these entries (by key) get their new window and are no longer marked
   * published, so the next send step publishes them again under the same request ids. One write.
   */
  reopen(
    taskId: string,
    family: CommandFamily,
    windows: Record<string, { sentAt: number; deadline: number }>,
  ): Promise<void>;
  /**
   * Stores BMC reports' changes (`writes`, by entry key) on one record, in ONE conditional write:
   * every entry must exist, a result or an answer only where none is stored (the first wins),
   * progress only upwards and only before a result, a lone acknowledgement only where none is
   * stored. All or nothing: 'refused' writes nothing and returns the record as it is (absent: no
   * such record), from which the caller works out what still changes something and writes that.
   * 'written' returns the record after.
   */
  record(
    taskId: string,
    family: CommandFamily,
    writes: Record<string, EntryWrite>,
  ): Promise<{ outcome: "written"; set: CommandSet } | { outcome: "refused"; set?: CommandSet }>;
}

/** Firmware credentials of a plain UpgradeFirmware task (run children use RunStore.getRunSecrets). */
export interface TaskSecretStore {
  put(taskId: string, authentication: FirmwareAuthentication): Promise<void>;
  get(taskId: string): Promise<FirmwareAuthentication | undefined>;
}

/** Encrypts one credential for one BMC; only that BMC can open it. */
export interface BmcAuthSealer {
  seal(secret: string, componentId: string, requestId: string): Promise<EncryptedAuth>;
}

/** Records verified firmware versions on the inventory's components. Idempotent. */
export interface FirmwareVersionRecorder {
  record(rackId: string, versions: readonly { componentId: string; version: string }[]): Promise<void>;
}

/** The port the child task's steps depend on. Implementations must be safe to call twice. */
export interface BmcCommandPublisher {
  publish(componentId: string, command: BmcCommand): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Secrets

/** Authenticated encryption of small secrets; `context` is bound in (AAD), e.g. the run id. */
export interface Cipher {
  encrypt(plaintext: Uint8Array, context: string): Promise<Uint8Array>;
  /** Throws if the ciphertext or its context was tampered with. */
  decrypt(ciphertext: Uint8Array, context: string): Promise<Uint8Array>;
}
