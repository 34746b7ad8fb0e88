/**
 * Which part of a rollout a piece of work belongs to, for the benchmarks' per-step tables: an
 * AsyncLocalStorage scope that the benchmark (and the local stand-ins' hooks it passes) set around
 * each child-task step, each batch of BMC reports, each dispatcher pass and each submission. Every
 * DynamoDB call made inside inherits the scope through the async context, so the capacity meter
 * (capacity-meter.ts, `tagOf`) can file it under that part without anything in src/ knowing.
 *
 *   await inScope({ part: "preflight" }, () => steps.handle(event));
 *   currentScope()?.part   // "preflight", in any call made by that step
 *
 * Scopes nest: the innermost wins, so a submission made inside a dispatcher pass counts as "submit".
 */
import { AsyncLocalStorage } from "node:async_hooks";

export interface WorkScope {
  /** The row of the per-step table: "claim", "preflight", "wave 3 (COMPUTE)", … */
  part: string;
  /** The refill chain this work belongs to (bench/dispatch.ts), if any. */
  chain?: RefillChain;
  /** Within a chain's pass, which of its (parallel) submissions this is. */
  submission?: number;
}

/** One freed slot's path, from a task's end to the next submission (bench/dispatch.ts). */
export interface RefillChain {
  id: number;
  /** performance.now() at the task's end. */
  startedAt: number;
  /** DynamoDB calls made in the chain, in the order they were sent: start and end times, operation. */
  calls: { op: string; table: string; start: number; end: number; submission?: number }[];
  /** performance.now() when the chain's pass called StartExecution (the submission), once. */
  submittedAt?: number;
  /** Which submission made it: its calls count, those of the others submitted beside it do not. */
  submittedBy?: number;
}

const storage = new AsyncLocalStorage<WorkScope>();

export function inScope<T>(scope: WorkScope, fn: () => T): T {
  const outer = storage.getStore();
  // A new chain starts clean; otherwise the chain (and which submission of it) carries on inside.
  const inherited =
    scope.chain === undefined && outer?.chain !== undefined
      ? { chain: outer.chain, ...(outer.submission === undefined ? {} : { submission: outer.submission }) }
      : {};
  return storage.run({ ...inherited, ...scope }, fn);
}

export function currentScope(): WorkScope | undefined {
  return storage.getStore();
}

/**
 * Sequential round trips of a chain up to its submission: its calls grouped into rounds, a round
 * being calls in flight together (one started before the round's earlier calls all ended). Calls
 * sent in parallel (Promise.all) count once; calls after the submission do not count, nor those
 * of the other targets the same pass submitted beside the one that took the slot first.
 */
export function roundTrips(chain: RefillChain): { op: string; table: string }[][] {
  const until = chain.submittedAt ?? Number.POSITIVE_INFINITY;
  const calls = chain.calls
    .filter((c) => c.start < until && (c.submission === undefined || c.submission === chain.submittedBy))
    .sort((a, b) => a.start - b.start);
  const rounds: { op: string; table: string }[][] = [];
  let roundEnd = Number.NEGATIVE_INFINITY;
  for (const call of calls) {
    if (call.start >= roundEnd) {
      rounds.push([]);
      roundEnd = call.end;
    } else {
      roundEnd = Math.max(roundEnd, call.end);
    }
    rounds[rounds.length - 1]!.push({ op: call.op, table: call.table });
  }
  return rounds;
}

/** The logical table of a call ("Runs", "Targets", …), from its TableName or its first item's. */
export function tableOf(input: Record<string, unknown>): string {
  const direct = input.TableName as string | undefined;
  if (direct !== undefined) return logicalName(direct);
  const batch = (input.RequestItems ?? {}) as Record<string, unknown>;
  const first = Object.keys(batch)[0];
  if (first !== undefined) return logicalName(first);
  const items = (input.TransactItems ?? []) as Record<string, { TableName?: string }>[];
  const names = new Set(
    items.flatMap((i) => Object.values(i).map((op) => logicalName(op?.TableName ?? "?"))),
  );
  return [...names].sort().join("+");
}

function logicalName(table: string): string {
  for (const name of ["Runs", "Targets", "Tasks", "Inventory", "RackLocks"]) {
    if (table.endsWith(name)) return name;
  }
  return table;
}
