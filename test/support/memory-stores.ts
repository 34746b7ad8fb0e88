/**
 * In-memory fakes of the storage ports (src/app/ports.ts) for use-case tables that run in
 * milliseconds. Each one `implements` its port with no cast, so a port change breaks it at compile
 * time, and each follows the DynamoDB adapter's observable behaviour, down to what a transition
 * keeps and what it clears. The contract suites in test/support/contracts/ run against both: the
 * fakes in test/unit/memory-stores.test.ts, DynamoDB on moto in
 * test/integration/store-contracts.test.ts. A behaviour asserted there holds for both.
 *
 * Every method does its whole work after its last await, so each call is one atomic step, like one
 * conditional write or one transaction. Values go in and come out as copies: a caller that mutates
 * what it read changes nothing stored.
 *
 * `calls` counts the port calls made on a store (a call a store makes on itself is not counted),
 * so a test can say "nothing was written" or "one batch claim, no single claims". On the run
 * store, `interleave` slips another writer in between a caller's read and its write.
 */
import {
  ACTIVE_TASK_STATUSES,
  type AcquireOutcome,
  type BatchClaimResult,
  type BlockedUpdate,
  type ClaimOutcome,
  type ClientRequestRecord,
  type CreateRunOptions,
  type CreateRunOutcome,
  type CreateTaskOutcome,
  type InventoryStore,
  type ListTargetsOptions,
  type ListTasksOptions,
  type RackLockStore,
  type ReleaseOutcome,
  type RunListEntry,
  type RunStore,
  type SaveRunOutcome,
  type SaveTaskOutcome,
  type ScopeRack,
  type TaskStore,
  type TransitionOutcome,
} from "../../src/app/ports.js";
import { FlowError } from "../../src/domain/errors.js";
import {
  type ComponentType,
  type FirmwareAuthentication,
  type InventoryRack,
  isTerminalTarget,
  type OutcomeCounts,
  type OutcomeStatus,
  type Page,
  type Run,
  type Target,
  type Task,
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

class CallCounter<Name extends string> {
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
  "recordSubmitted",
  "recordBlocked",
  "recordOutcome",
  "skipTargets",
  "restartConflictClock",
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
    if (request !== undefined) {
      // The commit's condition: the id is free, or its earlier use has expired (judged at createdAt).
      const held = this.clientRequests.get(request.id);
      if (held !== undefined && held.expiresAt > run.createdAt) return { outcome: "request-id-taken" };
      this.clientRequests.set(request.id, {
        runId: run.id,
        fingerprint: request.fingerprint,
        expiresAt: request.expiresAt,
      });
    }
    const { authentication, ...firmware } = run.config.operation.firmware;
    const stored = copy(run);
    stored.config.operation.firmware = copy(firmware);
    this.runs.set(run.id, stored);
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
    for (const field of ["startedAt", "finishedAt"] as const) {
      const value = run[field];
      if (value === undefined) delete stored[field];
      else stored[field] = value;
    }
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
      run.inFlight += 1;
    }
    this.claim(target, leaseMs, now);
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
    run.inFlight += k;
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
    if (target.status === "CLAIMED" || target.status === "SUBMITTED") run.inFlight -= 1;
    const counts = run.counters[target.phaseIndex];
    if (counts !== undefined) counts[OUTCOME_FIELD[status]] += 1;
    target.status = status;
    target.message = message;
    target.updatedAt = now;
    delete target.leaseExpiresAt;
    delete target.retryAt;
    return "recorded";
  }
}

// ---------------------------------------------------------------------------------------------
// Tasks

export class MemoryTaskStore implements TaskStore {
  readonly calls = new CallCounter<keyof TaskStore>();
  private readonly tasks = new Map<string, Task>();
  /** idempotency key → task id, written with the task (never a key without its task). */
  private readonly keys = new Map<string, string>();

  async createTask(task: Task): Promise<CreateTaskOutcome> {
    this.calls.add("createTask");
    const key = task.idempotencyKey;
    const existingId = key === undefined ? undefined : this.keys.get(key);
    const existing = existingId === undefined ? undefined : this.tasks.get(existingId);
    if (existing !== undefined) return { created: false, task: copy(existing) };
    if (this.tasks.has(task.id)) throw new FlowError("ALREADY_EXISTS", `task ${task.id} already exists`);
    this.tasks.set(task.id, copy(task));
    if (key !== undefined) this.keys.set(key, task.id);
    return { created: true, task: copy(task) };
  }

  async getTasks(ids: string[]): Promise<Task[]> {
    this.calls.add("getTasks");
    return ids.flatMap((id) => {
      const task = this.tasks.get(id);
      return task === undefined ? [] : [copy(task)];
    });
  }

  async getTaskByIdempotencyKey(key: string): Promise<Task | undefined> {
    this.calls.add("getTaskByIdempotencyKey");
    const id = this.keys.get(key);
    const task = id === undefined ? undefined : this.tasks.get(id);
    return task === undefined ? undefined : copy(task);
  }

  async listTasks(options: ListTasksOptions): Promise<{ tasks: Task[]; total: number }> {
    this.calls.add("listTasks");
    const all = [...this.tasks.values()]
      .filter(
        (t) =>
          (options.rackId === undefined || t.rackId === options.rackId) &&
          (!options.activeOnly || ACTIVE_TASK_STATUSES.has(t.status)) &&
          (options.componentId === undefined || t.componentIds.includes(options.componentId)),
      )
      .sort(newestFirst);
    return { tasks: pageOf(all, options.page).map(copy), total: all.length };
  }

  async saveTask(task: Task, expectedUpdatedAt: number): Promise<SaveTaskOutcome> {
    this.calls.add("saveTask");
    const stored = this.tasks.get(task.id);
    if (stored === undefined) return "not-found";
    if (stored.updatedAt !== expectedUpdatedAt) return "stale";
    this.tasks.set(task.id, copy(task));
    return "saved";
  }
}

// ---------------------------------------------------------------------------------------------
// Inventory

export class MemoryInventoryStore implements InventoryStore {
  readonly calls = new CallCounter<keyof InventoryStore>();
  private readonly racks = new Map<string, InventoryRack>();
  /**
   * Pointers as the adapter keeps them: componentId → rackId and "TYPE#externalId" → rackId,
   * overwritten by later imports and checked against the rack on read, so a pointer left behind
   * by a re-import that moved a component is harmless.
   */
  private readonly componentRack = new Map<string, string>();
  private readonly externalComponentRack = new Map<string, string>();

  constructor(racks: InventoryRack[] = []) {
    this.put(racks);
  }

  async upsertRacks(racks: InventoryRack[]): Promise<void> {
    this.calls.add("upsertRacks");
    this.put(racks);
  }

  async loadAll(): Promise<InventoryRack[]> {
    this.calls.add("loadAll");
    return [...this.racks.values()].sort(byId).map(copy);
  }

  async getRacksByIds(ids: string[]): Promise<InventoryRack[]> {
    this.calls.add("getRacksByIds");
    return this.byIds(ids);
  }

  async getRacksByNames(names: string[]): Promise<InventoryRack[]> {
    this.calls.add("getRacksByNames");
    return this.eachValue(names, (rack, name) => rack.name === name);
  }

  async getRacksByExternalIds(externalIds: string[]): Promise<InventoryRack[]> {
    this.calls.add("getRacksByExternalIds");
    return this.eachValue(externalIds, (rack, externalId) => rack.externalId === externalId);
  }

  async getRacksByNvlDomain(
    ref: { by: "id"; id: string } | { by: "name"; name: string },
  ): Promise<InventoryRack[]> {
    this.calls.add("getRacksByNvlDomain");
    return ref.by === "id"
      ? this.eachValue([ref.id], (rack, id) => rack.nvlDomain?.id === id)
      : this.eachValue([ref.name], (rack, name) => rack.nvlDomain?.name === name);
  }

  async getRacksByComponentIds(componentIds: string[]): Promise<Map<string, InventoryRack>> {
    this.calls.add("getRacksByComponentIds");
    const rackIds = new Set(componentIds.flatMap((id) => this.componentRack.get(id) ?? []));
    const result = new Map<string, InventoryRack>();
    for (const rack of this.byIds([...rackIds])) {
      for (const c of rack.components) if (componentIds.includes(c.id)) result.set(c.id, rack);
    }
    return result;
  }

  async getRacksByComponentExternalId(type: ComponentType, externalId: string): Promise<InventoryRack[]> {
    this.calls.add("getRacksByComponentExternalId");
    return [...this.racks.values()]
      .filter((rack) => rack.components.some((c) => c.type === type && c.externalId === externalId))
      .sort(byId)
      .map(copy);
  }

  async listScopeRacks(qualifies: (rack: ScopeRack) => boolean, limit: number): Promise<ScopeRack[]> {
    this.calls.add("listScopeRacks");
    const scope: ScopeRack[] = [];
    for (const rack of [...this.racks.values()].sort(byId)) {
      if (scope.length >= limit) break;
      const narrow: ScopeRack = {
        id: rack.id,
        name: rack.name,
        components: rack.components.map((c) => ({ id: c.id, type: c.type })),
      };
      if (rack.externalId !== undefined) narrow.externalId = rack.externalId;
      if (qualifies(narrow)) scope.push(narrow);
    }
    return scope;
  }

  private put(racks: InventoryRack[]): void {
    for (const rack of racks) {
      this.racks.set(rack.id, copy(rack));
      for (const c of rack.components) {
        this.componentRack.set(c.id, rack.id);
        if (c.externalId !== undefined) this.externalComponentRack.set(`${c.type}#${c.externalId}`, rack.id);
      }
    }
  }

  /** In the order asked; unknown ids skipped. */
  private byIds(ids: string[]): InventoryRack[] {
    return ids.flatMap((id) => {
      const rack = this.racks.get(id);
      return rack === undefined ? [] : [copy(rack)];
    });
  }

  /** Each distinct value in order; its racks by id (one index query per value in the adapter). */
  private eachValue(values: string[], has: (rack: InventoryRack, value: string) => boolean): InventoryRack[] {
    const racks = [...this.racks.values()].sort(byId);
    return [...new Set(values)].flatMap((value) => racks.filter((rack) => has(rack, value)).map(copy));
  }
}

// ---------------------------------------------------------------------------------------------
// Rack locks

export class MemoryRackLockStore implements RackLockStore {
  readonly calls = new CallCounter<keyof RackLockStore>();
  /** Expired locks stay until taken over (DynamoDB's TTL deletes them hours later). */
  private readonly locks = new Map<string, { owner: string; expiresAt: number }>();

  async acquire(rackId: string, owner: string, ttlMs: number, now: number): Promise<AcquireOutcome> {
    this.calls.add("acquire");
    const lock = this.locks.get(rackId);
    if (lock !== undefined && lock.expiresAt > now && lock.owner !== owner) return "held";
    this.locks.set(rackId, { owner, expiresAt: now + ttlMs });
    return "acquired";
  }

  async release(rackId: string, owner: string): Promise<ReleaseOutcome> {
    this.calls.add("release");
    if (this.locks.get(rackId)?.owner !== owner) return "not-held";
    this.locks.delete(rackId);
    return "released";
  }

  async get(rackId: string): Promise<{ owner: string; expiresAt: number } | undefined> {
    this.calls.add("get");
    const lock = this.locks.get(rackId);
    return lock === undefined ? undefined : { ...lock };
  }
}
