/**
 * A RunStore (src/app/ports.ts) whose every call takes the latency of the DynamoDB request the
 * adapter (src/adapters/dynamodb/) sends for it, drawn from a stated distribution on a clock that
 * may be virtual (bench/lib/virtual-time.ts). The call's effect lands at the end of its latency,
 * atomically (the in-memory store does each call in one step). With `serial`, requests are served
 * one at a time in arrival order, as the local moto serves them (its launcher's lock).
 *
 * Every call is counted by kind, by run item written, and by who made it (`scope`, e.g. "tick").
 */
import type { Clock, RunStore } from "../../src/app/ports.js";
import { drawLatency, type Latency } from "./virtual-time.js";

/** The DynamoDB request each RunStore method is (its usual path in the adapter). */
export const REQUEST_KIND = {
  createRun: "TransactWriteItems",
  getClientRequest: "GetItem",
  getRun: "GetItem",
  getRunForDispatch: "GetItem",
  getRunSecrets: "GetItem",
  listRuns: "Query",
  listTargets: "Query",
  getTarget: "GetItem",
  listActiveRunIds: "Query",
  listDueRuns: "Query",
  deferRun: "UpdateItem",
  saveRun: "UpdateItem",
  listRunEvents: "Query",
  listQueuedTargets: "Query",
  claimTarget: "TransactWriteItems",
  claimTargets: "TransactWriteItems",
  recordSubmitted: "UpdateItem",
  recordBlocked: "TransactWriteItems",
  recordOutcome: "TransactWriteItems",
  skipTargets: "TransactWriteItems",
  restartConflictClock: "UpdateItem",
  recordPriorVersions: "UpdateItem",
  recordLateFailure: "TransactWriteItems",
  appendRunEvent: "UpdateItem", // a PutItem: one single-item write, the same latency class
} as const satisfies Record<keyof RunStore, string>;

export type RequestKind = (typeof REQUEST_KIND)[keyof RunStore];

/** The methods whose write lands on the run item (the hot item: one per run). */
const RUN_ITEM_WRITES: ReadonlySet<keyof RunStore> = new Set<keyof RunStore>([
  "saveRun",
  "deferRun",
  "claimTarget",
  "claimTargets",
  "recordBlocked",
  "recordOutcome",
  "skipTargets",
  "recordLateFailure",
]);

export interface StoreCall {
  method: keyof RunStore;
  kind: RequestKind;
  runId: string | undefined;
  /** When the request was sent and when its answer came, on the store's clock. */
  sent: number;
  answered: number;
  writesRunItem: boolean;
  scope: string | undefined;
  /** saveRun only: the status it saved, when it saved. */
  saved?: string;
}

export interface LatencyStoreOptions {
  clock: Clock;
  /** Absent: no latency added (a real store answers in its own time). */
  latency?: Record<RequestKind, Latency>;
  random: () => number;
  serial?: boolean;
  /** Who is calling (e.g. "tick"), read at each call. */
  scope?: () => string | undefined;
  /** Told of every call once answered. */
  onCall?: (call: StoreCall) => void;
}

export function withLatency(store: RunStore, options: LatencyStoreOptions): RunStore {
  const { clock } = options;
  let serverFreeAt = Number.NEGATIVE_INFINITY;
  const wait = (ms: number) => new Promise<void>((resolve) => clock.after(ms, resolve));
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function" || !(property in REQUEST_KIND)) return value;
      const method = property as keyof RunStore;
      const kind = REQUEST_KIND[method];
      return async (...args: unknown[]) => {
        const sent = clock.now();
        const scope = options.scope?.();
        if (options.latency !== undefined) {
          const service = drawLatency(options.latency[kind], options.random);
          if (options.serial) {
            const start = Math.max(sent, serverFreeAt);
            serverFreeAt = start + service;
            await wait(serverFreeAt - sent);
          } else {
            await wait(service);
          }
        }
        const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        const first = args[0];
        const runId =
          typeof first === "string"
            ? first
            : Array.isArray(first)
              ? (first[0] as { runId?: string } | undefined)?.runId
              : ((first as { runId?: string; id?: string } | undefined)?.runId ??
                (method === "saveRun" ? (first as { id: string }).id : undefined));
        const writesRunItem = RUN_ITEM_WRITES.has(method) && !(method === "deferRun" && result === "moved");
        const call: StoreCall = { method, kind, runId, sent, answered: clock.now(), writesRunItem, scope };
        if (method === "saveRun" && result === "saved") call.saved = (first as { status: string }).status;
        options.onCall?.(call);
        return result;
      };
    },
  });
}
