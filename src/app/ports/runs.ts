/**
 * Ports of runs: the run store (runs, targets, their history) and the bus the history is published to.
 * The rules every port follows are in src/app/ports.ts, which re-exports them all.
 */

import type { RunHistoryEvent } from "../../domain/history-event.js";
import type { Page } from "../../domain/list-queries.js";
import type {
  FirmwareAuthentication,
  OutcomeStatus,
  PriorVersion,
  Run,
  Target,
  TargetStatus,
} from "../../domain/model.js";

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
  /**
   * The run's phase sizes, when the caller read the run: without a status filter the total is
   * their sum over the range, and the store counts nothing.
   */
  phaseSizes?: readonly number[];
}

export type SaveRunOutcome = "saved" | "stale" | "not-found";
export type ClaimOutcome =
  | "claimed"
  | "slots-full"
  /** (ours) The run has a free slot, but the target's failure domain is at the spread's cap. */
  | "domain-full"
  | "lost-race"
  | "run-not-active"
  | "window-closed";
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
  /** (ours) The target's failure domain, whose in-flight counter the block releases with inFlight. */
  failureDomain?: string;
}

/** A client request id as remembered with the run it created (idempotent create). */
export interface ClientRequest {
  /** CreateOperationRunRequest.client_request_id. */
  id: string;
  /** requestFingerprint of the request that created the run (src/domain/client-request.ts). */
  fingerprint: string;
  /** Epoch ms after which the id is forgotten (a later create with it makes a new run). */
  expiresAt: number;
  /**
   * A request with credentials: the RequestMac of `credentialsMacMessage` (base64), so that a
   * retry is compared by a keyed digest, never by decrypting the first run's credentials.
   */
  credentialsMac?: string;
}

/**
 * A keyed digest (HMAC-SHA-256) under a key the stores never hold: in AWS a KMS HMAC key
 * (GenerateMac), off AWS a key derived from the configured local secrets key. Deterministic: the
 * same message gives the same MAC on every instance, for as long as the key lives.
 */
export interface RequestMac {
  mac(message: string): Promise<Uint8Array>;
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
  /**
   * A retry or rollback run: the run it follows, as it is to be written in the same commit (its
   * new updatedAt and `followUps`; nothing else of it changes), only if its stored updatedAt is
   * still `expectedUpdatedAt`, with `event` (its RETRIED / ROLLED_BACK history event, at the new
   * version). Otherwise nothing is committed: 'origin-changed'.
   */
  origin?: { run: Run; expectedUpdatedAt: number; event: RunHistoryEvent };
}

export type CreateRunOutcome =
  | { outcome: "created" }
  /** `mayCommit` said no: nothing was committed. */
  | { outcome: "abandoned" }
  /** Another create committed with the same client request id (not expired) first: nothing was. */
  | { outcome: "request-id-taken" }
  /** The run `origin` names changed since it was read (or is gone): nothing was committed. */
  | { outcome: "origin-changed" };

/**
 * When a run next needs a dispatcher pass, as the store keeps it beside the run. Every write of
 * the run (createRun, saveRun, a claim, recordBlocked, recordOutcome, skipTargets) adds 1 to
 * `mark` and makes the run due now; only deferRun moves `dueAt` later.
 */
export interface DispatchSchedule {
  /** How many writes may have given the run work so far (0 for a run none has). */
  mark: number;
  /** Epoch ms from which listDueRuns lists the run (0: now); absent: it does not. */
  dueAt?: number;
}

export type DeferOutcome = "deferred" | "moved";

/** A run in the due index, and the time it is due from (epoch ms; 0: now). */
export interface DueRun {
  runId: string;
  dueAt: number;
}

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

  /** getRun with the run's dispatch schedule, read in the same request (the dispatcher's read). */
  getRunForDispatch(runId: string): Promise<{ run: Run; schedule: DispatchSchedule } | undefined>;

  /**
   * The runs whose schedule is due at `until` (dueAt <= until), earliest dueAt first, from a sparse
   * index: cost grows with the runs due by then, not with the active runs. The tick asks for
   * `now`, or a little later to learn when the next run falls due. Eventually consistent: a run
   * marked a moment ago may be missing until a later call, one deferred a moment ago may still
   * be listed.
   */
  listDueRuns(until: number): Promise<DueRun[]>;

  /**
   * Sets when the run next needs a pass (`dueAt`; undefined: out of the index until a write marks
   * it), only if its schedule's `mark` is still `expectedMark`; else 'moved' and nothing is
   * written (a write the caller did not see may have given the run work: it stays due). Moves
   * nothing else, and is not itself a mark. A missing run is 'moved'.
   *   pass reads mark 3, finds nothing to do before 10:05 → deferRun(r, 3, 10:05) → 'deferred'
   *   an outcome commits first (mark 4)                   → deferRun(r, 3, 10:05) → 'moved'
   */
  deferRun(runId: string, expectedMark: number, dueAt: number | undefined): Promise<DeferOutcome>;

  /**
   * Writes the run's control fields (status, reason, statusMessage, currentPhaseIndex, startedAt,
   * finishedAt, updatedAt) if the stored `updatedAt` still equals `expectedUpdatedAt`; otherwise
   * 'stale' and nothing is written. Never touches `inFlight` or the outcome counters: those move
   * only with target transitions, so a saveRun cannot lose a concurrent count. A pause for a
   * closed maintenance window (PAUSED, MAINTENANCE_WINDOW) is also 'stale' unless the stored
   * `inFlight` is still `run.inFlight`: it was decided on what was flashing, and a claim committed
   * since then (decided before the close) would start a target its message counts as not started.
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
   * Records one event that changes nothing of the run (a refused call: ACCESS_DENIED), under its
   * (run, at, seq) only if that key is new: 'taken' writes nothing (the caller tries the next seq).
   * The run is not read or written, so this never makes a run write stale.
   */
  appendRunEvent(event: RunHistoryEvent): Promise<"appended" | "taken">;

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

  /**
   * Keeps `priors` as the target's prior versions, once: only if it has none yet ('recorded');
   * a target that has them keeps the first ('already-recorded'), so a re-driven preflight, which
   * reads versions some flash may have changed, never overwrites what ran before the run. Touches
   * nothing else (not status, not updatedAt): it may land in any state. Unknown → 'not-found'.
   */
  recordPriorVersions(runId: string, targetId: string, priors: PriorVersion[]): Promise<TransitionOutcome>;

  /**
   * (ours) A late failure (src/domain/late-failure.ts), ONE transaction:
   *   run:    updatedAt == `expectedUpdatedAt`, status not terminal → updatedAt = `run.updatedAt`;
   *           the target's phase: completed −1, failed +1
   *   target: COMPLETED, updatedAt == `expectedTargetUpdatedAt` → FAILED with `target`'s message,
   *           failureReportedBy, failureReportedAt and updatedAt
   *   events: each put under (run, at, seq) only if that key is new, as saveRun's
   * 'stale': the run or the target moved since it was read; nothing written (read and decide
   * again). 'not-found': the run is gone. Counters stay exact under any repeat: a second report
   * finds the target FAILED and its condition fails.
   */
  recordLateFailure(
    run: Run,
    expectedUpdatedAt: number,
    target: Target,
    expectedTargetUpdatedAt: number,
    events: readonly RunHistoryEvent[],
  ): Promise<SaveRunOutcome>;
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
