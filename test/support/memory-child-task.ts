/**
 * In-memory stores of the child task, typed from the ports (src/app/ports.ts) so they cannot drift,
 * for fast tests of the task path that need no DynamoDB. Each keeps the contract its port states
 * (optimistic saves, idempotency keys, first result wins) and nothing more; the DynamoDB adapters'
 * own tests (test/integration) prove the real ones.
 */
import type { BmcRequestStore, RackLockStore, TaskSecretStore, TaskStore } from "../../src/app/ports.js";
import { ACTIVE_TASK_STATUSES, requestKey } from "../../src/app/ports.js";
import type { BmcRequestRecord } from "../../src/domain/component-verdict.js";
import type { FirmwareAuthentication, Task } from "../../src/domain/model.js";

export function memoryTaskStore(): TaskStore & { all(): Task[] } {
  const tasks = new Map<string, Task>();
  const byKey = new Map<string, string>();
  return {
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
      const stored = tasks.get(task.id);
      if (stored === undefined) return "not-found";
      if (stored.updatedAt !== expectedUpdatedAt) return "stale";
      tasks.set(task.id, structuredClone(task));
      return "saved";
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

/** Reports land only on records that exist; progress only rises; the first result or answer stays. */
export function memoryRequestStore(): BmcRequestStore {
  const records = new Map<string, BmcRequestRecord>();
  return {
    async open(request) {
      const key = requestKey(request.componentId, request.requestId);
      const existing = records.get(key);
      if (existing !== undefined) return structuredClone(existing);
      records.set(key, { ...request });
      return { ...request };
    },
    async markPublished(componentId, requestId, now) {
      const record = records.get(requestKey(componentId, requestId));
      if (record === undefined) throw new Error(`no request record ${componentId}#${requestId}`);
      record.publishedAt ??= now;
    },
    async recordEvent(componentId, event, now) {
      const record = records.get(requestKey(componentId, event.requestId));
      if (record === undefined) return "ignored";
      switch (event.type) {
        case "ack":
          if (record.ackedAt !== undefined) return "ignored";
          record.ackedAt = now;
          return "recorded";
        case "progress":
          if (record.result !== undefined || (record.progress ?? -1) >= event.percent) return "ignored";
          record.progress = event.percent;
          record.ackedAt ??= now;
          return "recorded";
        case "result":
          if (record.result !== undefined || record.kind !== "update") return "ignored";
          record.result = event.ok
            ? { ok: true, version: event.version }
            : { ok: false, version: event.version, error: { ...event.error } };
          record.ackedAt ??= now;
          return "recorded";
        case "status":
          if (record.status !== undefined || record.kind !== "query") return "ignored";
          record.status = { version: event.version };
          return "recorded";
      }
    },
    // As the adapter's condition has it: no record, or one with its answer, is 'answered'.
    async reopen(componentId, requestId, window) {
      const record = records.get(requestKey(componentId, requestId));
      if (record === undefined || record.result !== undefined || record.status !== undefined)
        return "answered";
      delete record.publishedAt;
      record.sentAt = window.sentAt;
      record.deadline = window.deadline;
      return "reopened";
    },
    async get(keys) {
      const found = new Map<string, BmcRequestRecord>();
      for (const { componentId, requestId } of keys) {
        const record = records.get(requestKey(componentId, requestId));
        if (record !== undefined) found.set(requestKey(componentId, requestId), structuredClone(record));
      }
      return found;
    },
  };
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
