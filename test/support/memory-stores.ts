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
 * store, `interleave` slips another writer in between a caller's read and its write. The run
 * store lives in bench/lib/memory-run-store.ts (the fleet simulation runs on it too).
 */

import { CallCounter } from "../../bench/lib/memory-run-store.js";
import {
  ACTIVE_TASK_STATUSES,
  type AcquireOutcome,
  type CreateTaskOutcome,
  type InventoryStore,
  type ListTasksOptions,
  type RackLockStore,
  type ReleaseOutcome,
  type SaveTaskOutcome,
  type ScopeRack,
  type TaskStore,
} from "../../src/app/ports.js";
import { FlowError } from "../../src/domain/errors.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { Page } from "../../src/domain/list-queries.js";
import type { ComponentType } from "../../src/domain/model.js";
import type { Task } from "../../src/domain/task.js";

export { MemoryRunStore } from "../../bench/lib/memory-run-store.js";

const copy = <T>(value: T): T => structuredClone(value);

/** Newest first (createdAt desc), ties by id desc: the order of every "byCreated" index. */
const newestFirst = (a: { createdAt: number; id: string }, b: { createdAt: number; id: string }): number =>
  b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

const byId = (a: { id: string }, b: { id: string }): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

const pageOf = <T>(items: T[], page: Page): T[] => items.slice(page.offset, page.offset + page.limit);

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

  async listRacks(page: Page): Promise<{ racks: InventoryRack[]; total: number }> {
    this.calls.add("listRacks");
    const all = [...this.racks.values()].sort(byId);
    return { racks: all.slice(page.offset, page.offset + page.limit).map(copy), total: all.length };
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
