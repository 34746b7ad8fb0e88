/**
 * The in-memory RunStore (src/app/ports.ts), shared by the tests (test/support/memory-stores.ts
 * re-exports it with the other in-memory stores) and the fleet simulation (bench/fleet.ts). It
 * `implements` the port with no cast, so a port change breaks it at compile time, and it follows
 * the DynamoDB adapter's observable behaviour, down to what a transition keeps and what it clears:
 * the contract suites in test/support/contracts/ run against both.
 *
 * Every method does its whole work after its last await, so each call is one atomic step, like one
 * conditional write or one transaction. Values go in and come out as copies: a caller that mutates
 * what it read changes nothing stored.
 *
 * `calls` counts the port calls made on the store (a call it makes on itself is not counted), so a
 * test can say "nothing was written" or "one batch claim, no single claims"; `interleave` slips
 * another writer in between a caller's read and its write.
 */
import type {
  BatchClaimResult,
  BlockedUpdate,
  ClaimOutcome,
  ClientRequestRecord,
  CreateRunOptions,
  CreateRunOutcome,
  DeferOutcome,
  DispatchSchedule,
  ListTargetsOptions,
  RunListEntry,
  RunStore,
  SaveRunOutcome,
  TransitionOutcome,
} from "../../src/app/ports.js";
import { FlowError } from "../../src/domain/errors.js";
import { domainsTaken } from "../../src/domain/failure-domains.js";
import {
  type FirmwareAuthentication,
  isTerminalRun,
  isTerminalTarget,
  type OutcomeCounts,
  type OutcomeStatus,
  type Page,
  type PriorVersion,
  type Run,
  type Target,
} from "../../src/domain/model.js";
import type { RunHistoryEvent } from "../../src/domain/run-history.js";

const copy = <T>(value: T): T => structuredClone(value);

/** Newest first (createdAt desc), ties by id desc: the order of every "byCreated" index. */
const newestFirst = (a: { createdAt: number; id: string }, b: { createdAt: number; id: string }): number =>
  b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

const byId = (a: { id: string }, b: { id: string }): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

const inOrder = (a: Target, b: Target): number =>
  a.phaseIndex - b.phaseIndex || a.sequenceIndex - b.sequenceIndex;

const pageOf = <T>(items: T[], page: Page): T[] => items.slice(page.offset, page.offset + page.limit);

export class CallCounter<Name extends string> {
  private readonly counts = new Map<Name, number>();
  /** Counts one call of `name`. */
  add(name: Name): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
  }
  of(name: Name): number {
    return this.counts.get(name) ?? 0;
  }
  total(names: readonly Name[]): number {
    return names.reduce((sum, name) => sum + this.of(name), 0);
  }
  /** Every call counted, whatever its name: the requests a store would have served. */
  all(): number {
    let sum = 0;
    for (const n of this.counts.values()) sum += n;
    return sum;
  }
  /** The counts by name, for a failure message. */
  byName(): Record<string, number> {
    return Object.fromEntries(this.counts);
  }
  reset(): void {
    this.counts.clear();
  }
}

// ---------------------------------------------------------------------------------------------
// Runs and targets

const OUTCOME_FIELD: Record<OutcomeStatus, keyof OutcomeCounts> = {
  COMPLETED: "completed",
  FAILED: "failed",
  TERMINATED: "terminated",
  SKIPPED: "skipped",
};

/** claimTargets' limit: one transaction of 100 items holds 98 targets, the run and one spare. */
const MAX_BATCH_CLAIM = 98;

const RUN_WRITES = [
  "createRun",
  "saveRun",
  "claimTarget",
  "claimTargets",
  "deferRun",
  "recordSubmitted",
  "recordBlocked",
  "recordOutcome",
  "skipTargets",
  "restartConflictClock",
  "recordLateFailure",
  "recordPriorVersions",
] as const satisfies readonly (keyof RunStore)[];

const isActiveRun = (run: Run): boolean => run.status === "PENDING" || run.status === "RUNNING";
/** The run half of a claim's condition after it failed, in the adapter's order (whyRunRefused). */
const windowClosed = (run: Run, now: number): boolean => {
  const end = run.config.operation.firmware.endTime;
  return end !== undefined && end <= now;
};
const refusal = (run: Run, now: number): ClaimOutcome =>
  !isActiveRun(run) ? "run-not-active" : windowClosed(run, now) ? "window-closed" : "slots-full";

/** The adapter's eventKey: the run version in 15 digits and the position in 2, so strings sort in order. */
const historyKey = (e: RunHistoryEvent): string =>
  `${String(e.at).padStart(15, "0")}#${String(e.seq).padStart(2, "0")}`;

/** As the adapter: a run write's events belong to that run and that version. */
function checkEvents(run: Run, events: readonly RunHistoryEvent[]): void {
  for (const event of events) {
    if (event.runId !== run.id || event.at !== run.updatedAt) {
      throw new RangeError(
        `history event ${event.kind} of run ${event.runId} at ${event.at} does not belong to the write of run ${run.id} at ${run.updatedAt}`,
      );
    }
  }
}

export class MemoryRunStore implements RunStore {
  readonly calls = new CallCounter<keyof RunStore>();
  /** Runs as stored: the configuration without credentials (those are in `secrets`). */
  private readonly runs = new Map<string, Run>();
  private readonly secrets = new Map<string, FirmwareAuthentication>();
  private readonly clientRequests = new Map<string, ClientRequestRecord>();
  /** runId → targetId → target. */
  private readonly targets = new Map<string, Map<string, Target>>();
  /** runId → its history, oldest first; `<at>#<seq>` keys each event as the adapter's eventKey does. */
  private readonly events = new Map<string, Map<string, RunHistoryEvent>>();
  /** runId → its dispatch schedule (the adapter's dueMark, dueAt and the due index). */
  private readonly schedules = new Map<string, DispatchSchedule>();

  /** Rivals waiting for the next call of a method; see `interleave`. */
  private readonly rivals = new Map<keyof RunStore, (() => unknown)[]>();
  private inRival = false;

  /** Port calls that write (createRun, saveRun, claims, transitions), counted since the last reset. */
  writes(): number {
    return this.calls.total(RUN_WRITES);
  }

  /**
   * Runs `rival` (another dispatcher's claim, an operator's pause…) once, right before the next
   * call of `method` does its work: what a concurrent process does between a caller's read and its
   * write. Several queue up in order, one per call; the rival's own calls on this store count in
   * `calls` but never trigger another rival.
   */
  interleave(method: keyof RunStore, rival: () => unknown): void {
    const queued = this.rivals.get(method) ?? [];
    queued.push(rival);
    this.rivals.set(method, queued);
  }

  private async enter(method: keyof RunStore): Promise<void> {
    this.calls.add(method);
    if (this.inRival) return;
    const rival = this.rivals.get(method)?.shift();
    if (rival === undefined) return;
    this.inRival = true;
    try {
      await rival();
    } finally {
      this.inRival = false;
    }
  }

  async createRun(run: Run, targets: Target[], options: CreateRunOptions = {}): Promise<CreateRunOutcome> {
    await this.enter("createRun");
    const events = options.events ?? [];
    checkEvents(run, events);
    const taken = targets.some((t) => this.targets.get(t.runId)?.has(t.id));
    if (this.runs.has(run.id) || taken || new Set(targets.map((t) => t.id)).size !== targets.length) {
      throw new FlowError("ALREADY_EXISTS", `operation run ${run.id} already exists`);
    }
    // The adapter's last moment to give up is before its commit; targets it wrote ahead are
    // invisible orphans, which here are simply never written.
    if (options.mayCommit?.() === false) return { outcome: "abandoned" };
    const request = options.clientRequest;
    const origin = options.origin;
    if (origin !== undefined) checkEvents(origin.run, [origin.event]);
    if (request !== undefined) {
      // The commit's condition: the id is free, or its earlier use has expired (judged at createdAt).
      const held = this.clientRequests.get(request.id);
      if (held !== undefined && held.expiresAt > run.createdAt) return { outcome: "request-id-taken" };
    }
    if (origin !== undefined) {
      // The followed run's part: on the version read, its version and follow-ups only.
      const followed = this.runs.get(origin.run.id);
      if (followed?.updatedAt !== origin.expectedUpdatedAt) return { outcome: "origin-changed" };
      followed.updatedAt = origin.run.updatedAt;
      followed.followUps = copy(origin.run.followUps ?? []);
      this.append(origin.run.id, [origin.event]);
    }
    if (request !== undefined) {
      const { id: _id, ...remembered } = request;
      this.clientRequests.set(request.id, { runId: run.id, ...remembered });
    }
    const { authentication, ...firmware } = run.config.operation.firmware;
    const stored = copy(run);
    stored.config.operation.firmware = copy(firmware);
    this.runs.set(run.id, stored);
    this.schedules.set(run.id, isActiveRun(stored) ? { mark: 0, dueAt: 0 } : { mark: 0 });
    if (authentication !== undefined) this.secrets.set(run.id, copy(authentication));
    for (const target of targets) this.partition(target.runId).set(target.id, copy(target));
    this.append(run.id, events);
    return { outcome: "created" };
  }

  async getClientRequest(id: string, now: number): Promise<ClientRequestRecord | undefined> {
    await this.enter("getClientRequest");
    const held = this.clientRequests.get(id);
    return held === undefined || held.expiresAt <= now ? undefined : { ...held };
  }

  async getRun(runId: string): Promise<Run | undefined> {
    await this.enter("getRun");
    const run = this.runs.get(runId);
    return run === undefined ? undefined : copy(run);
  }

  async getRunSecrets(runId: string): Promise<FirmwareAuthentication | undefined> {
    await this.enter("getRunSecrets");
    const secrets = this.secrets.get(runId);
    return secrets === undefined ? undefined : copy(secrets);
  }

  async listRuns(
    matches: (run: RunListEntry) => boolean,
    page: Page,
  ): Promise<{ runs: Run[]; total: number }> {
    await this.enter("listRuns");
    const matching = [...this.runs.values()].sort(newestFirst).filter((run) =>
      matches({
        id: run.id,
        name: run.name,
        status: run.status,
        reason: run.reason,
        operationKind: run.config.operation.kind,
        createdAt: run.createdAt,
      }),
    );
    return { runs: pageOf(matching, page).map(copy), total: matching.length };
  }

  async listTargets(
    runId: string,
    options: ListTargetsOptions,
  ): Promise<{ targets: Target[]; total: number } | undefined> {
    await this.enter("listTargets");
    if (!options.knownCommitted && !this.runs.has(runId)) return undefined;
    const all = [...(this.targets.get(runId)?.values() ?? [])]
      .filter(
        (t) =>
          t.phaseIndex >= options.phaseFrom &&
          t.phaseIndex <= options.phaseTo &&
          (options.status === undefined || t.status === options.status),
      )
      .sort(inOrder);
    return { targets: pageOf(all, options.page).map(copy), total: all.length };
  }

  async getTarget(runId: string, targetId: string): Promise<Target | undefined> {
    await this.enter("getTarget");
    const target = this.targets.get(runId)?.get(targetId);
    return target === undefined ? undefined : copy(target);
  }

  async getRunForDispatch(runId: string): Promise<{ run: Run; schedule: DispatchSchedule } | undefined> {
    await this.enter("getRunForDispatch");
    const run = this.runs.get(runId);
    if (run === undefined) return undefined;
    return { run: copy(run), schedule: { ...(this.schedules.get(runId) ?? { mark: 0 }) } };
  }

  async listDueRunIds(now: number): Promise<string[]> {
    await this.enter("listDueRunIds");
    return [...this.schedules.entries()]
      .filter(([, schedule]) => schedule.dueAt !== undefined && schedule.dueAt <= now)
      .sort(([a, x], [b, y]) => (x.dueAt as number) - (y.dueAt as number) || (a < b ? -1 : a > b ? 1 : 0))
      .map(([runId]) => runId);
  }

  async deferRun(runId: string, expectedMark: number, dueAt: number | undefined): Promise<DeferOutcome> {
    await this.enter("deferRun");
    const schedule = this.schedules.get(runId);
    if (schedule === undefined || schedule.mark !== expectedMark) return "moved";
    if (dueAt === undefined) delete schedule.dueAt;
    else schedule.dueAt = dueAt;
    return "deferred";
  }

  /** A marking write: the run may have work, so it is due now; `leaves` takes it out instead. */
  private mark(runId: string, leaves = false): void {
    const schedule = this.schedules.get(runId) ?? { mark: 0 };
    schedule.mark += 1;
    if (leaves) delete schedule.dueAt;
    else schedule.dueAt = 0;
    this.schedules.set(runId, schedule);
  }

  async listActiveRunIds(): Promise<string[]> {
    await this.enter("listActiveRunIds");
    return [...this.runs.values()]
      .filter(isActiveRun)
      .sort(byId)
      .map((run) => run.id);
  }

  async saveRun(
    run: Run,
    expectedUpdatedAt: number,
    events: readonly RunHistoryEvent[] = [],
  ): Promise<SaveRunOutcome> {
    await this.enter("saveRun");
    // The port's rule for callers; breaking it would let two writers both pass the same check.
    if (run.updatedAt === expectedUpdatedAt) {
      throw new RangeError(`saveRun: updatedAt must differ from expectedUpdatedAt (${expectedUpdatedAt})`);
    }
    checkEvents(run, events);
    const stored = this.runs.get(run.id);
    if (stored === undefined) return "not-found";
    if (stored.updatedAt !== expectedUpdatedAt) return "stale";
    if (run.status === "PAUSED" && run.reason === "MAINTENANCE_WINDOW" && stored.inFlight !== run.inFlight)
      return "stale";
    const history = this.events.get(run.id);
    if (events.some((e) => history?.has(historyKey(e)))) return "stale";
    this.append(run.id, events);
    stored.status = run.status;
    stored.reason = run.reason;
    stored.statusMessage = run.statusMessage;
    stored.currentPhaseIndex = run.currentPhaseIndex;
    stored.updatedAt = run.updatedAt;
    for (const field of ["startedAt", "finishedAt", "soakEndsAt"] as const) {
      const value = run[field];
      if (value === undefined) delete stored[field];
      else stored[field] = value;
    }
    this.mark(run.id, !isActiveRun(stored));
    return "saved";
  }

  async recordLateFailure(
    run: Run,
    expectedUpdatedAt: number,
    target: Target,
    expectedTargetUpdatedAt: number,
    events: readonly RunHistoryEvent[],
  ): Promise<SaveRunOutcome> {
    await this.enter("recordLateFailure");
    checkEvents(run, events);
    const stored = this.runs.get(run.id);
    if (stored === undefined) return "not-found";
    if (stored.updatedAt !== expectedUpdatedAt || isTerminalRun(stored.status)) return "stale";
    const storedTarget = this.targets.get(run.id)?.get(target.id);
    if (storedTarget?.status !== "COMPLETED" || storedTarget.updatedAt !== expectedTargetUpdatedAt)
      return "stale";
    const history = this.events.get(run.id);
    if (events.some((e) => history?.has(historyKey(e)))) return "stale";
    this.append(run.id, events);
    stored.updatedAt = run.updatedAt;
    const counts = stored.counters[target.phaseIndex] as OutcomeCounts;
    counts.completed -= 1;
    counts.failed += 1;
    storedTarget.status = "FAILED";
    storedTarget.message = target.message;
    storedTarget.updatedAt = target.updatedAt;
    storedTarget.failureReportedAt = target.updatedAt;
    if (target.failureReportedBy !== undefined)
      storedTarget.failureReportedBy = copy(target.failureReportedBy);
    this.mark(run.id);
    return "saved";
  }

  async appendRunEvent(event: RunHistoryEvent): Promise<"appended" | "taken"> {
    await this.enter("appendRunEvent");
    if (this.events.get(event.runId)?.has(historyKey(event))) return "taken";
    this.append(event.runId, [event]);
    return "appended";
  }

  async listRunEvents(
    runId: string,
    page: Page,
    options: { knownCommitted?: boolean } = {},
  ): Promise<{ events: RunHistoryEvent[]; total: number } | undefined> {
    await this.enter("listRunEvents");
    if (!options.knownCommitted && !this.runs.has(runId)) return undefined;
    const all = [...(this.events.get(runId)?.entries() ?? [])]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, event]) => event);
    return { events: pageOf(all, page).map(copy), total: all.length };
  }

  async listQueuedTargets(
    runId: string,
    phaseIndex: number,
    pendingLimit: number,
  ): Promise<{ held: Target[]; pending: Target[] }> {
    await this.enter("listQueuedTargets");
    const phase = [...(this.targets.get(runId)?.values() ?? [])]
      .filter((t) => t.phaseIndex === phaseIndex)
      .sort(inOrder);
    const held = phase.filter((t) => t.status === "BLOCKED" || t.status === "CLAIMED");
    const pending =
      pendingLimit > 0 ? phase.filter((t) => t.status === "PENDING").slice(0, pendingLimit) : [];
    return { held: held.map(copy), pending: pending.map(copy) };
  }

  async claimTarget(expected: Target, leaseMs: number, now: number, until?: number): Promise<ClaimOutcome> {
    await this.enter("claimTarget");
    if (until !== undefined && now >= until) return "window-closed";
    const target = this.claimable(expected, now);
    if (target === undefined) return "lost-race";
    const run = this.runs.get(expected.runId);
    if (run === undefined || !isActiveRun(run)) return "run-not-active";
    if (windowClosed(run, now)) return "window-closed";
    if (expected.status !== "CLAIMED") {
      if (run.inFlight >= run.config.maxConcurrentTargets) return "slots-full";
      if (!domainHasRoom(run, domainsTaken([expected]))) return "domain-full";
      run.inFlight += 1;
      moveDomains(run, domainsTaken([expected]), 1);
    }
    this.claim(target, leaseMs, now);
    this.mark(run.id);
    return "claimed";
  }

  async claimTargets(
    expected: Target[],
    leaseMs: number,
    now: number,
    until?: number,
  ): Promise<BatchClaimResult> {
    await this.enter("claimTargets");
    const nothing = (outcome: ClaimOutcome): BatchClaimResult => ({ outcome, claimed: [] });
    const first = expected[0];
    if (first === undefined) return { outcome: "claimed", claimed: [] };
    if (expected.length > MAX_BATCH_CLAIM) {
      throw new RangeError(`claimTargets takes at most ${MAX_BATCH_CLAIM} targets, got ${expected.length}`);
    }
    if (expected.some((t) => t.runId !== first.runId)) {
      throw new RangeError("claimTargets: targets of one run only");
    }
    if (new Set(expected.map((t) => t.id)).size !== expected.length) {
      throw new RangeError("claimTargets: a target appears twice");
    }
    if (until !== undefined && now >= until) return nothing("window-closed");
    // The adapter's order of checks: statuses that are never ready, then (when slots are needed)
    // the run and its limit as read, then the transaction's conditions.
    if (expected.some((t) => !["PENDING", "BLOCKED", "CLAIMED"].includes(t.status)))
      return nothing("lost-race");
    const run = this.runs.get(first.runId);
    const k = expected.filter((t) => t.status !== "CLAIMED").length;
    if (k > 0 && run === undefined) return nothing("run-not-active");
    if (run !== undefined && k > run.config.maxConcurrentTargets) {
      return nothing(refusal(run, now));
    }
    const targets = expected.map((t) => this.claimable(t, now));
    if (targets.some((t) => t === undefined)) return nothing("lost-race");
    if (run === undefined || !isActiveRun(run)) return nothing("run-not-active");
    if (windowClosed(run, now)) return nothing("window-closed");
    if (run.inFlight + k > run.config.maxConcurrentTargets) return nothing("slots-full");
    if (!domainHasRoom(run, domainsTaken(expected))) return nothing("domain-full");
    run.inFlight += k;
    moveDomains(run, domainsTaken(expected), 1);
    this.mark(run.id);
    const claimed = targets.filter((t) => t !== undefined).map((t) => copy(this.claim(t, leaseMs, now)));
    return { outcome: "claimed", claimed };
  }

  async recordSubmitted(
    runId: string,
    targetId: string,
    taskId: string,
    now: number,
    message = "submitted",
  ): Promise<TransitionOutcome> {
    await this.enter("recordSubmitted");
    const target = this.targets.get(runId)?.get(targetId);
    if (target === undefined) return "not-found";
    if (target.status === "SUBMITTED" && target.taskId === taskId) return "already-recorded";
    if (target.status !== "CLAIMED") return "lost-race";
    target.status = "SUBMITTED";
    target.taskId = taskId;
    target.message = message;
    target.updatedAt = now;
    delete target.leaseExpiresAt;
    return "recorded";
  }

  async recordBlocked(
    runId: string,
    targetId: string,
    blocked: BlockedUpdate,
    now: number,
  ): Promise<TransitionOutcome> {
    await this.enter("recordBlocked");
    const target = this.targets.get(runId)?.get(targetId);
    if (target === undefined) return "not-found";
    const run = this.runs.get(runId);
    if (target.status !== "CLAIMED" || run === undefined) return "lost-race";
    target.status = "BLOCKED";
    target.message = blocked.message;
    target.retryAt = blocked.retryAt;
    target.conflictAttempts = blocked.conflictAttempts;
    target.firstBlockedAt = blocked.firstBlockedAt;
    target.updatedAt = now;
    delete target.leaseExpiresAt;
    run.inFlight -= 1;
    moveDomains(run, domainsTaken([{ ...target, status: "PENDING" }]), -1);
    this.mark(runId);
    return "recorded";
  }

  async recordOutcome(
    runId: string,
    targetId: string,
    status: OutcomeStatus,
    message: string,
    now: number,
  ): Promise<TransitionOutcome> {
    await this.enter("recordOutcome");
    return this.outcome(runId, targetId, status, message, now);
  }

  async skipTargets(runId: string, targetIds: string[], message: string, now: number): Promise<number> {
    await this.enter("skipTargets");
    return targetIds.filter((id) => this.outcome(runId, id, "SKIPPED", message, now) === "recorded").length;
  }

  async restartConflictClock(runId: string, targetId: string, now: number): Promise<TransitionOutcome> {
    await this.enter("restartConflictClock");
    const target = this.targets.get(runId)?.get(targetId);
    if (target === undefined) return "not-found";
    if (target.status !== "BLOCKED") return "lost-race";
    target.firstBlockedAt = now;
    target.updatedAt = now;
    return "recorded";
  }

  async recordPriorVersions(
    runId: string,
    targetId: string,
    priors: PriorVersion[],
  ): Promise<TransitionOutcome> {
    await this.enter("recordPriorVersions");
    const target = this.targets.get(runId)?.get(targetId);
    if (target === undefined) return "not-found";
    if (target.priorVersions !== undefined) return "already-recorded";
    target.priorVersions = copy(priors);
    return "recorded";
  }

  private append(runId: string, events: readonly RunHistoryEvent[]): void {
    if (events.length === 0) return;
    const history = this.events.get(runId) ?? new Map<string, RunHistoryEvent>();
    for (const event of events) history.set(historyKey(event), copy(event));
    this.events.set(runId, history);
  }

  private partition(runId: string): Map<string, Target> {
    let targets = this.targets.get(runId);
    if (targets === undefined) {
      targets = new Map();
      this.targets.set(runId, targets);
    }
    return targets;
  }

  /**
   * The stored target, if it is still as the caller read it (status and updatedAt) and ready by
   * its stored state: a BLOCKED target once its retryAt is due, a CLAIMED one once its lease is
   * over (like a DynamoDB condition, a missing attribute never compares true).
   */
  private claimable(expected: Target, now: number): Target | undefined {
    const target = this.targets.get(expected.runId)?.get(expected.id);
    if (target === undefined) return undefined;
    if (target.status !== expected.status || target.updatedAt !== expected.updatedAt) return undefined;
    switch (target.status) {
      case "PENDING":
        return target;
      case "BLOCKED":
        return target.retryAt !== undefined && target.retryAt <= now ? target : undefined;
      case "CLAIMED":
        return target.leaseExpiresAt !== undefined && target.leaseExpiresAt <= now ? target : undefined;
      default:
        return undefined;
    }
  }

  /** Claims keep the message and the backoff state (attempts, firstBlockedAt, retryAt). */
  private claim(target: Target, leaseMs: number, now: number): Target {
    target.status = "CLAIMED";
    target.leaseExpiresAt = now + leaseMs;
    target.updatedAt = now;
    return target;
  }

  private outcome(
    runId: string,
    targetId: string,
    status: OutcomeStatus,
    message: string,
    now: number,
  ): TransitionOutcome {
    const target = this.targets.get(runId)?.get(targetId);
    if (target === undefined) return "not-found";
    if (isTerminalTarget(target.status)) return "already-recorded";
    const run = this.runs.get(runId);
    if (run === undefined) return "not-found";
    if (target.status === "CLAIMED" || target.status === "SUBMITTED") {
      run.inFlight -= 1;
      moveDomains(run, domainsTaken([{ ...target, status: "PENDING" }]), -1);
    }
    const counts = run.counters[target.phaseIndex];
    if (counts !== undefined) counts[OUTCOME_FIELD[status]] += 1;
    this.mark(runId);
    target.status = status;
    target.message = message;
    target.updatedAt = now;
    delete target.leaseExpiresAt;
    delete target.retryAt;
    return "recorded";
  }
}

/** The adapter's spread condition: every domain the claim takes stays within the cap. */
function domainHasRoom(run: Run, taken: ReadonlyMap<string, number>): boolean {
  const cap = run.config.failureDomainSpread?.maxInFlight;
  if (cap === undefined) return true;
  return [...taken].every(([domain, k]) => (run.domainInFlight?.[domain] ?? 0) + k <= cap);
}

/** Moves each domain's in-flight counter by `sign` × its count, as the adapter's writes do. */
function moveDomains(run: Run, taken: ReadonlyMap<string, number>, sign: 1 | -1): void {
  if (taken.size === 0) return;
  const counts = { ...run.domainInFlight };
  for (const [domain, k] of taken) counts[domain] = (counts[domain] ?? 0) + sign * k;
  run.domainInFlight = counts;
}
