/**
 * The in-memory RunStore (src/app/ports.ts), shared by the tests (test/support/memory-stores.ts
 * re-exports it with the other in-memory stores) and the fleet simulation (bench/fleet.ts). It
 * `implements` the port with no cast, so a port change breaks it at compile time, and it follows
 * the DynamoDB adapter's observable behaviour, down to what a transition keeps and what it clears:
 * the contract suites in test/support/contracts/ run against both.
 *
 * Every method does its whole work after its last await, so each call is one atomic step, like one
 * conditional write or one transaction. Values go in and come out as copies: a caller that mutates
 * what it read changes nothing stored. The runs and their history are here; the claims and target
 * transitions are memory-target-transitions.ts's, the due schedule memory-due-schedule.ts's.
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
  DueRun,
  ListTargetsOptions,
  RunListEntry,
  RunStore,
  SaveRunOutcome,
  TransitionOutcome,
} from "../../src/app/ports.js";
import { FlowError } from "../../src/domain/errors.js";
import type { RunHistoryEvent } from "../../src/domain/history-event.js";
import type { Page } from "../../src/domain/list-queries.js";
import {
  type FirmwareAuthentication,
  isTerminalRun,
  type OutcomeCounts,
  type OutcomeStatus,
  type PriorVersion,
  type Run,
  type Target,
} from "../../src/domain/model.js";
import { MemoryDueSchedule } from "./memory-due-schedule.js";
import { isActiveRun, MemoryTargetTransitions } from "./memory-target-transitions.js";

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
// Runs and their history

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
  /** The adapter's dueMark, dueAt and the due index. */
  private readonly schedule = new MemoryDueSchedule();
  private readonly transitions = new MemoryTargetTransitions(this.runs, this.targets, this.schedule);

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
    this.schedule.start(run.id, isActiveRun(stored));
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
    return { run: copy(run), schedule: this.schedule.of(runId) };
  }

  async listDueRuns(until: number): Promise<DueRun[]> {
    await this.enter("listDueRuns");
    return this.schedule.due(until);
  }

  async deferRun(runId: string, expectedMark: number, dueAt: number | undefined): Promise<DeferOutcome> {
    await this.enter("deferRun");
    return this.schedule.defer(runId, expectedMark, dueAt);
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
    this.schedule.mark(run.id, !isActiveRun(stored));
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
    this.schedule.mark(run.id);
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

  // Claims and transitions: bench/lib/memory-target-transitions.ts.

  async listQueuedTargets(
    runId: string,
    phaseIndex: number,
    pendingLimit: number,
  ): Promise<{ held: Target[]; pending: Target[] }> {
    await this.enter("listQueuedTargets");
    return this.transitions.listQueuedTargets(runId, phaseIndex, pendingLimit);
  }

  async claimTarget(expected: Target, leaseMs: number, now: number, until?: number): Promise<ClaimOutcome> {
    await this.enter("claimTarget");
    return this.transitions.claimTarget(expected, leaseMs, now, until);
  }

  async claimTargets(
    expected: Target[],
    leaseMs: number,
    now: number,
    until?: number,
  ): Promise<BatchClaimResult> {
    await this.enter("claimTargets");
    return this.transitions.claimTargets(expected, leaseMs, now, until);
  }

  async recordSubmitted(
    runId: string,
    targetId: string,
    taskId: string,
    now: number,
    message?: string,
  ): Promise<TransitionOutcome> {
    await this.enter("recordSubmitted");
    return this.transitions.recordSubmitted(runId, targetId, taskId, now, message);
  }

  async recordBlocked(
    runId: string,
    targetId: string,
    blocked: BlockedUpdate,
    now: number,
  ): Promise<TransitionOutcome> {
    await this.enter("recordBlocked");
    return this.transitions.recordBlocked(runId, targetId, blocked, now);
  }

  async recordOutcome(
    runId: string,
    targetId: string,
    status: OutcomeStatus,
    message: string,
    now: number,
  ): Promise<TransitionOutcome> {
    await this.enter("recordOutcome");
    return this.transitions.recordOutcome(runId, targetId, status, message, now);
  }

  async skipTargets(runId: string, targetIds: string[], message: string, now: number): Promise<number> {
    await this.enter("skipTargets");
    return this.transitions.skipTargets(runId, targetIds, message, now);
  }

  async restartConflictClock(runId: string, targetId: string, now: number): Promise<TransitionOutcome> {
    await this.enter("restartConflictClock");
    return this.transitions.restartConflictClock(runId, targetId, now);
  }

  async recordPriorVersions(
    runId: string,
    targetId: string,
    priors: PriorVersion[],
  ): Promise<TransitionOutcome> {
    await this.enter("recordPriorVersions");
    return this.transitions.recordPriorVersions(runId, targetId, priors);
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
}
