/**
 * In-memory stores of the child task, typed from the ports (src/app/ports.ts) so they cannot drift,
 * for fast tests of the task path that need no DynamoDB. Each keeps the contract its port states
 * (optimistic saves, idempotency keys, first result wins) and nothing more; the DynamoDB adapters'
 * own tests (test/integration) prove the real ones.
 */
import type { CommandSetStore, RackLockStore, TaskSecretStore, TaskStore } from "../../src/app/ports.js";
import { ACTIVE_TASK_STATUSES } from "../../src/app/ports.js";
import {
  type CommandEntry,
  type CommandFamily,
  type CommandSet,
  closedRecords,
  type EntryWrite,
  mergeParts,
  type WaitToStore,
} from "../../src/domain/command-sets.js";
import type { FirmwareAuthentication } from "../../src/domain/model.js";
import type { Task } from "../../src/domain/task.js";

/**
 * With `locks`, the store also has saveTaskWithLock: the task's save and the lock's take, both or
 * neither, as near as a fake gets (the task checked first: the adapter answers 'stale' before 'held').
 */
export function memoryTaskStore(locks?: RackLockStore): TaskStore & { all(): Task[] } {
  const tasks = new Map<string, Task>();
  const byKey = new Map<string, string>();
  const save = (task: Task, expectedUpdatedAt: number): "saved" | "stale" | "not-found" => {
    const stored = tasks.get(task.id);
    if (stored === undefined) return "not-found";
    if (stored.updatedAt !== expectedUpdatedAt) return "stale";
    tasks.set(task.id, structuredClone(task));
    return "saved";
  };
  const withLock: Pick<TaskStore, "saveTaskWithLock"> =
    locks === undefined
      ? {}
      : {
          async saveTaskWithLock(task, expectedUpdatedAt, lockTtlMs, now) {
            const stored = tasks.get(task.id);
            if (stored === undefined) return "not-found";
            if (stored.updatedAt !== expectedUpdatedAt) return "stale";
            // A fake's approximation of one transaction: a save between the take and the write
            // (a cancel in that moment) would leave the lock taken; the adapter's test covers it.
            if ((await locks.acquire(task.rackId, task.id, lockTtlMs, now)) === "held") return "held";
            return save(task, expectedUpdatedAt);
          },
        };
  return {
    ...withLock,
    all: () => [...tasks.values()].map((t) => structuredClone(t)),
    async createTask(task) {
      const existing = task.idempotencyKey === undefined ? undefined : byKey.get(task.idempotencyKey);
      if (existing !== undefined)
        return { created: false, task: structuredClone(tasks.get(existing) as Task) };
      tasks.set(task.id, structuredClone(task));
      if (task.idempotencyKey !== undefined) byKey.set(task.idempotencyKey, task.id);
      return { created: true, task: structuredClone(task) };
    },
    async getTasks(ids) {
      return ids.flatMap((id) => {
        const task = tasks.get(id);
        return task === undefined ? [] : [structuredClone(task)];
      });
    },
    async getTaskByIdempotencyKey(key) {
      const id = byKey.get(key);
      return id === undefined ? undefined : structuredClone(tasks.get(id));
    },
    async listTasks(options) {
      const matching = [...tasks.values()]
        .filter((t) => options.rackId === undefined || t.rackId === options.rackId)
        .filter((t) => options.componentId === undefined || t.componentIds.includes(options.componentId))
        .filter((t) => !options.activeOnly || ACTIVE_TASK_STATUSES.has(t.status))
        .sort((a, b) => b.createdAt - a.createdAt || b.id.localeCompare(a.id));
      const page = matching.slice(options.page.offset, options.page.offset + options.page.limit);
      return { tasks: page.map((t) => structuredClone(t)), total: matching.length };
    },
    async saveTask(task, expectedUpdatedAt) {
      return save(task, expectedUpdatedAt);
    },
  };
}

export function memoryLockStore(): RackLockStore {
  const locks = new Map<string, { owner: string; expiresAt: number }>();
  return {
    async acquire(rackId, owner, ttlMs, now) {
      const held = locks.get(rackId);
      if (held !== undefined && held.owner !== owner && held.expiresAt > now) return "held";
      locks.set(rackId, { owner, expiresAt: now + ttlMs });
      return "acquired";
    },
    async release(rackId, owner) {
      if (locks.get(rackId)?.owner !== owner) return "not-held";
      locks.delete(rackId);
      return "released";
    },
    async get(rackId) {
      const held = locks.get(rackId);
      return held === undefined ? undefined : { ...held };
    },
  };
}

/**
 * Command sets as the adapter keeps them: an entry already there keeps what it holds; a batch of
 * report writes is all or nothing under the same rules (every entry exists, the first result or
 * answer wins, progress only rises and only before a result, a lone ack only once).
 */
export function memoryCommandSetStore(): CommandSetStore & { writes: number } {
  const sets = new Map<string, CommandSet>();
  const keyOf = (taskId: string, family: CommandFamily, part?: number) =>
    part === undefined ? `${taskId}#${family}` : `${taskId}#${family}.${part}`;
  const created = (taskId: string, family: CommandFamily, part?: number): CommandSet =>
    sets.get(keyOf(taskId, family, part)) ?? {
      taskId,
      family,
      entries: {},
      ...(part === undefined ? {} : { part }),
    };
  const merged = (taskId: string, family: CommandFamily, parts: readonly number[]) => {
    const first = sets.get(keyOf(taskId, family));
    if (family !== "u") return first;
    return mergeParts(
      first,
      parts.map((part) => sets.get(keyOf(taskId, family, part))),
    );
  };
  const store = {
    writes: 0,
    async open(
      taskId: string,
      family: CommandFamily,
      entries: Record<string, CommandEntry>,
      part?: number,
      wake?: WaitToStore,
      rackId?: string,
    ) {
      store.writes += 1;
      const set = created(taskId, family, part);
      if (set.closedAt !== undefined) return structuredClone(set);
      if (rackId !== undefined) set.rackId ??= rackId;
      for (const [key, entry] of Object.entries(entries)) set.entries[key] ??= structuredClone(entry);
      if (wake !== undefined) {
        set.wake = { token: wake.token, keys: [...wake.keys] };
        if (wake.heartbeatSeconds !== undefined) set.wake.heartbeatSeconds = wake.heartbeatSeconds;
        if (wake.startedAt !== undefined) set.wake.startedAt = wake.startedAt;
        if (wake.resume !== undefined) set.wake.resume = structuredClone(wake.resume);
      }
      sets.set(keyOf(taskId, family, part), set);
      return structuredClone(set);
    },
    async close(taskId: string, now: number, parts: readonly number[]) {
      for (const { family, part } of closedRecords(parts)) {
        store.writes += 1;
        const set = created(taskId, family, part);
        set.closedAt ??= now;
        sets.set(keyOf(taskId, family, part), set);
      }
    },
    async markPublished(
      taskId: string,
      family: CommandFamily,
      keys: readonly string[],
      now: number,
      part?: number,
    ) {
      if (keys.length === 0) return;
      store.writes += 1;
      const set = sets.get(keyOf(taskId, family, part));
      for (const key of keys) {
        const entry = set?.entries[key];
        if (entry === undefined) throw new Error(`no command ${taskId}#${family}#${key}`);
        entry.publishedAt ??= now;
      }
    },
    async get(taskId: string, family: CommandFamily, part?: number) {
      const set = sets.get(keyOf(taskId, family, part));
      return set === undefined ? undefined : structuredClone(set);
    },
    async getUpdates(taskId: string, parts: readonly number[]) {
      const set = merged(taskId, "u", parts);
      return set === undefined ? undefined : structuredClone(set);
    },
    async getMany(taskIds: readonly string[], family: CommandFamily, parts: readonly number[] = []) {
      const found = new Map<string, CommandSet>();
      for (const taskId of taskIds) {
        const set = merged(taskId, family, parts);
        if (set !== undefined) found.set(taskId, structuredClone(set));
      }
      return found;
    },
    async reopen(
      taskId: string,
      family: CommandFamily,
      windows: Record<string, { sentAt: number; deadline: number }>,
      part?: number,
    ) {
      if (Object.keys(windows).length === 0) return;
      store.writes += 1;
      for (const [key, window] of Object.entries(windows)) {
        const entry = sets.get(keyOf(taskId, family, part))?.entries[key];
        if (entry === undefined) throw new Error(`no command ${taskId}#${family}#${key}`);
        delete entry.publishedAt;
        entry.sentAt = window.sentAt;
        entry.deadline = window.deadline;
      }
    },
    async awaitAnswers(taskId: string, family: CommandFamily, wake: WaitToStore, part?: number) {
      store.writes += 1;
      const set = sets.get(keyOf(taskId, family, part));
      if (set === undefined) return undefined;
      set.wake = { token: wake.token, keys: [...wake.keys] };
      if (wake.heartbeatSeconds !== undefined) set.wake.heartbeatSeconds = wake.heartbeatSeconds;
      if (wake.startedAt !== undefined) set.wake.startedAt = wake.startedAt;
      if (wake.resume !== undefined) set.wake.resume = structuredClone(wake.resume);
      return structuredClone(set);
    },
    async record(
      taskId: string,
      family: CommandFamily,
      writes: Record<string, EntryWrite>,
      options: { returnSet?: boolean; part?: number; heardAt?: number; rackId?: string } = {},
    ) {
      store.writes += 1;
      const set = sets.get(keyOf(taskId, family, options.part));
      if (set === undefined) return { outcome: "refused" as const };
      // Reports from a rack's topic only onto that rack's commands (a set of before: any).
      const otherRack =
        options.rackId !== undefined && set.rackId !== undefined && set.rackId !== options.rackId;
      const allowed =
        !otherRack &&
        Object.entries(writes).every(([key, w]) => {
          const e = set.entries[key];
          if (e === undefined) return false;
          if (w.result !== undefined && e.result !== undefined) return false;
          if (w.status !== undefined && e.status !== undefined) return false;
          if (
            w.progress !== undefined &&
            (e.result !== undefined || (e.progress ?? -1) >= w.progress.percent)
          )
            return false;
          const lone = w.result === undefined && w.status === undefined && w.progress === undefined;
          return !(lone && w.ackedAt !== undefined && e.ackedAt !== undefined);
        });
      if (!allowed) return { outcome: "refused" as const, set: structuredClone(set) };
      for (const [key, w] of Object.entries(writes)) {
        const e = set.entries[key] as CommandEntry;
        if (w.result !== undefined) {
          e.result = structuredClone(w.result.value);
          e.resultAt = w.result.at;
        }
        if (w.status !== undefined) e.status = structuredClone(w.status);
        if (w.progress !== undefined) {
          e.progress = w.progress.percent;
          e.progressAt = w.progress.at;
        }
        if (w.ackedAt !== undefined) e.ackedAt ??= w.ackedAt;
      }
      if (options.heardAt !== undefined) {
        const before = set.heard?.at;
        set.heard = { at: options.heardAt, ...(before === undefined ? {} : { before }) };
      }
      return options.returnSet === true
        ? { outcome: "written" as const, set: structuredClone(set) }
        : { outcome: "written" as const };
    },
  };
  return store;
}

/**
 * `commands` with the wait every `open` was given (its fifth argument: undefined for a write of
 * commands alone) recorded in `opened`, in order: the tests of a step's one write count them.
 */
export function recordingOpens<S extends Pick<CommandSetStore, "open">>(
  commands: S,
): { commands: S; opened: unknown[] } {
  const opened: unknown[] = [];
  const open: CommandSetStore["open"] = (...args) => {
    opened.push(args[4]);
    return commands.open(...args);
  };
  return { commands: { ...commands, open }, opened };
}

export function memorySecretStore(): TaskSecretStore {
  const secrets = new Map<string, FirmwareAuthentication>();
  return {
    async put(taskId, authentication) {
      secrets.set(taskId, structuredClone(authentication));
    },
    async get(taskId) {
      const found = secrets.get(taskId);
      return found === undefined ? undefined : structuredClone(found);
    },
  };
}
