/**
 * Ports of tasks, the inventory, firmware policy (baselines, rules, readiness) and rack locks.
 * The rules every port follows are in src/app/ports.ts, which re-exports them all.
 */
import type { BaselineKey, FirmwareBaseline } from "../../domain/firmware-baselines.js";
import type { ComponentReadiness, InventoryComponent, InventoryRack } from "../../domain/inventory.js";
import type { Page } from "../../domain/list-queries.js";
import type { ComponentType, OutcomeStatus, PriorVersion } from "../../domain/model.js";
import type { OperationRule } from "../../domain/operation-rules.js";
import type { Task, TaskStatus } from "../../domain/task.js";

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
  /**
   * saveTask and the rack's lock for the task (as RackLockStore.acquire(task.rackId, task.id,
   * lockTtlMs, now)) in ONE transaction, both or neither: the child task's start (its lock and
   * its RUNNING write) in one round trip instead of two. The task moved since
   * `expectedUpdatedAt` → 'stale' (or 'not-found'), nothing written, whoever holds the lock;
   * another owner's live lock → 'held', nothing written. Optional: a store without it leaves the
   * step taking the lock, then saving the task.
   */
  saveTaskWithLock?(
    task: Task,
    expectedUpdatedAt: number,
    lockTtlMs: number,
    now: number,
  ): Promise<SaveTaskOutcome | "held">;
  /**
   * saveTask and RunStore.recordPriorVersions(prior.runId, prior.targetId, prior.priors) in ONE
   * transaction, both or neither: the preflight's report and what the rack ran before, kept on its
   * run's target, in one round trip instead of two. As recordPriorVersions, the versions are set
   * once, on a target in any state: a target that has some keeps them (a retried or re-driven
   * preflight, which may read versions a flash already changed, saves the task alone). The task
   * moved since `expectedUpdatedAt` → 'stale' (or 'not-found'), nothing written; no such target
   * → 'target-gone', nothing written. Optional: a store without it leaves the step saving the
   * task, then recording the versions.
   */
  saveTaskWithPriorVersions?(
    task: Task,
    expectedUpdatedAt: number,
    prior: RunChildPriors,
  ): Promise<SaveTaskOutcome | "target-gone">;
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
  /**
   * saveTaskWithOutcome and the versions the ending verified, on the rack's inventory item, in
   * ONE transaction, all or nothing: FirmwareVersionRecorder.record's write where `at` names every
   * component (each version at its index, conditional on that index still holding its component),
   * into the inventory the recorder writes. 'stale', 'not-found' and 'separately' as
   * saveTaskWithOutcome, whatever the inventory holds. 'inventory-moved': only the inventory's
   * condition failed (an import moved the components, the rack's item is gone); nothing written:
   * the caller saves the ending without them (saveTaskWithOutcome) and records them as without
   * this method. Optional: a store without it leaves the versions to the recorder.
   */
  saveTaskWithOutcomeAndVersions?(
    task: Task,
    expectedUpdatedAt: number,
    outcome: RunChildOutcome,
    versions: readonly VersionAt[],
  ): Promise<SaveTaskOutcome | "separately" | "inventory-moved">;
}

/** A version a task verified, and its component's index in the rack's inventory item (the preflight's). */
export interface VersionAt {
  componentId: string;
  version: string;
  at: number;
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

/** What a run child ran before its run flashed it, as the task store keeps it on the run's target. */
export interface RunChildPriors {
  runId: string;
  targetId: string;
  priors: PriorVersion[];
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
 * Only `loadAll` (the local stack's start) reads the whole table; ListRacks pages (`listRacks`).
 */
export interface InventoryStore {
  /** Creates or replaces each rack (with its component lookups). Idempotent. */
  upsertRacks(racks: InventoryRack[]): Promise<void>;
  /** Every rack, sorted by id: a Scan of the whole table (the local stack's fleet at start). */
  loadAll(): Promise<InventoryRack[]>;
  /** One page of the racks sorted by id, and how many there are (ListRacks): never the whole table. */
  listRacks(page: Page): Promise<{ racks: InventoryRack[]; total: number }>;
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
  /** The rack's components as the inventory holds them (one strongly consistent read of the rack). */
  rackComponents(rackId: string): Promise<InventoryComponent[]>;
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
