/**
 * The rows of the rollout benchmark's per-step table, and which row each piece of work belongs to:
 * a child-task step (by its event), a state the execution entered (by its name and input), or a
 * DynamoDB call (by the scope it was made in and its table). Knows the state and step names of
 * the child-task definition (state-machines/child-task.asl.json) and of the one before 2026-12-01,
 * so the same benchmark file measures every path of rollout-paths.ts in one sitting.
 */
import { tableOf } from "./work-scope.js";

export const PART = {
  create: "create (the run)",
  claim: "claim",
  submit: "submit",
  lock: "lock",
  preflight: "preflight",
  reports: "BMC reports",
  /** The receiver's writes that store no result and no answer: acknowledgements and progress alone. */
  news: "BMC reports: acks, progress only",
  outcome: "outcome",
  bookkeeping: "run bookkeeping",
} as const;

/** Table order: the fixed rows around the waves, which come in the order first seen. */
export function orderParts(parts: Iterable<string>): string[] {
  const fixedBefore: string[] = [PART.create, PART.claim, PART.submit, PART.lock, PART.preflight];
  const fixedAfter: string[] = [PART.reports, PART.news, PART.outcome, PART.bookkeeping];
  const all = [...new Set(parts)];
  const waves = all.filter((p) => p.startsWith("wave ")).sort(waveOrder);
  const others = all.filter(
    (p) => !p.startsWith("wave ") && !fixedBefore.includes(p) && !fixedAfter.includes(p),
  );
  return [
    ...fixedBefore.filter((p) => all.includes(p)),
    ...waves,
    ...fixedAfter.filter((p) => all.includes(p)),
    ...others,
  ];
}

function waveOrder(a: string, b: string): number {
  const n = (s: string) =>
    (s.match(/^wave (\d+)(?:\.(\d+))?(?: \([^)]*\))?(?: (\d+)\/)?/) ?? [])
      .slice(1)
      .map((x) => Number(x ?? 0));
  const [a1 = 0, a2 = 0, a3 = 0] = n(a);
  const [b1 = 0, b2 = 0, b3 = 0] = n(b);
  return a1 - b1 || a2 - b2 || a3 - b3 || a.localeCompare(b);
}

/** What a rule step is for, as the per-kind rows name it. */
export const STEP_KINDS = ["flash", "activation", "bring-up", "health check", "verify", "sleep"] as const;
export type StepKind = (typeof STEP_KINDS)[number];

export function stepKind(action: unknown): StepKind {
  switch (action) {
    case "UPDATE_FIRMWARE":
      return "flash";
    case "RESET_BMC":
    case "POWER_CYCLE_HOST":
    case "AC_CYCLE":
      return "activation";
    case "WAIT_BRING_UP":
      return "bring-up";
    case "CHECK_HEALTH":
      return "health check";
    case "SLEEP":
      return "sleep";
    default:
      return "verify";
  }
}

/** The kind of a wave part's step ("wave 3 (compute) 2/3 activation" → activation). */
export function kindOfPart(part: string): StepKind | undefined {
  return STEP_KINDS.find((k) => part.startsWith("wave ") && part.endsWith(` ${k}`));
}

interface GroupLike {
  stage?: number;
  name?: string;
  type?: string;
  steps?: { action?: string }[];
}

/**
 * "wave 3 (compute) 2/3 activation" for group g (0-based) of the plan, wave w (0-based) when a
 * group has several, step s (0-based) of the group's rule steps, when the plan names them.
 */
export function waveLabel(
  groups: readonly GroupLike[] | undefined,
  group: number,
  wave = 0,
  step?: number,
): string {
  const g = groups?.[group];
  const name = g?.name ?? g?.type?.toLowerCase() ?? "?";
  const label = `wave ${group + 1}${wave > 0 ? `.${wave + 1}` : ""} (${name})`;
  const steps = g?.steps;
  if (step === undefined || steps === undefined || steps[step] === undefined) return label;
  return `${label} ${step + 1}/${steps.length} ${stepKind(steps[step]?.action)}`;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === "object" && v !== null ? (v as Obj) : {});

/** The group index of a wave state (its stage, looked up in the plan's groups). */
function groupOfWave(groups: readonly GroupLike[] | undefined, wave: Obj): number {
  const stage = wave.stage as number | undefined;
  const i = groups?.findIndex((g, index) => (g.stage ?? index) === stage) ?? -1;
  return i >= 0 ? i : Number(stage ?? 0);
}

/**
 * The part of a wave in flight: its group by its stage, its step by its own index; the wave's
 * number within the group from the cursor when the cursor is the same step's (a check that started
 * the next step returns the next cursor with it: then the wave's own step is the cursor's).
 */
function waveOfState(groups: readonly GroupLike[] | undefined, wave: Obj, cursor: Obj): string {
  const group = groupOfWave(groups, wave);
  const sameGroup = Number(cursor.group ?? -1) === group;
  return waveLabel(groups, group, sameGroup ? Number(cursor.wave ?? 0) : 0, Number(wave.step ?? 0));
}

/** Remembers each task's plan (its groups) from the events that carry it, for steps that do not. */
export class PartLabeller {
  private readonly groupsByTask = new Map<string, GroupLike[]>();

  /**
   * After a step call: the plan a done preflight returns (its groups), for the first step's wait,
   * whose event carries the wave alone and may run before the state's entry is seen.
   */
  afterStep(event: Obj, result: unknown): void {
    const groups = obj(result).groups;
    if (event.step === "checkQueries" && Array.isArray(groups))
      this.groupsByTask.set(String(event.taskId ?? ""), groups as GroupLike[]);
  }

  /** The part of a child-task step call. */
  ofStep(event: Obj): string {
    const taskId = String(event.taskId ?? "");
    const groups = (event.groups as GroupLike[] | undefined) ?? this.groupsByTask.get(taskId);
    if (event.groups !== undefined) this.groupsByTask.set(taskId, event.groups as GroupLike[]);
    switch (event.step) {
      case "acquireLock":
        return PART.lock;
      case "sendQueries":
      case "awaitQueries":
      case "checkQueries":
        return PART.preflight;
      case "sendWave":
      case "finishWave": {
        const c = obj(event.cursor);
        return waveLabel(groups, Number(c.group ?? 0), Number(c.wave ?? 0), Number(c.step ?? 0));
      }
      case "awaitWave":
      case "checkWave":
        return waveOfState(groups, obj(event.wave), obj(event.cursor));
      case "recordOutcome":
        return PART.outcome;
      default:
        return String(event.step);
    }
  }

  /** The part of a state the execution entered (for its transition). */
  ofState(taskId: string, name: string, input: unknown): string {
    const state = obj(input);
    const plan = obj(state.plan);
    const groups = (plan.groups as GroupLike[] | undefined) ?? this.groupsByTask.get(taskId);
    if (plan.groups !== undefined) this.groupsByTask.set(taskId, plan.groups as GroupLike[]);
    switch (name) {
      case "AlreadyFinished":
        // After the last step's judge or check recorded the task (OutcomeRecorded from a wait,
        // whose input has the wave; `ended` from a check), or a task ended before it ran.
        return plan.ended !== undefined || plan.wave !== undefined ? PART.outcome : PART.lock;
      case "AcquireLock":
      case "LockAcquired?":
      case "WaitForLock":
        return PART.lock;
      case "SendQueries":
      case "AwaitPreflight":
      case "WaitForPreflight":
      case "CheckPreflight":
      case "PreflightDone?":
        return PART.preflight;
      case "AwaitWave":
      case "AwaitNextWave":
      case "WaitForWave":
      case "CheckWave":
      case "WaveDone?":
        // The wave in flight is the plan's (`$.plan.wave`; `$.wave` in the definition before).
        return waveOfState(groups, obj(plan.wave ?? state.wave), obj(plan.cursor));
      case "MoreWaves?":
      case "WaitBeforeRetry":
      case "SendWave":
      case "FinishWave": {
        const c = obj(plan.cursor);
        if (name === "MoreWaves?" && c.more !== true) return PART.outcome;
        return waveLabel(groups, Number(c.group ?? 0), Number(c.wave ?? 0), Number(c.step ?? 0));
      }
      default:
        return PART.outcome;
    }
  }
}

/**
 * The row a DynamoDB call is filed under: the rack lock's table is always "lock"; in a dispatcher
 * pass, the claim queue and the claim transactions are "claim" and the rest (the run's reads and
 * status, recordSubmitted, the active-runs index) "run bookkeeping"; in AcquireLock, the
 * preflight's query set is "preflight" (it sends the queries); in a wave's check, the inventory's
 * verified versions and the ending transaction are "outcome" (the last wave's check records the
 * task's outcome itself), but the image records an update's commands carry (on the Inventory
 * table too) are the step's own; of the BMC reports' writes, those that store no result and no
 * answer (acknowledgements and progress alone) are a row of their own; anywhere else, the scope's.
 */
export function partOfCall(scope: string | undefined, operation: string, input: Obj): string {
  const table = tableOf(input);
  // A transaction that writes the lock with other tables belongs to its scope (submit's lock + task).
  if (table === "RackLocks") return PART.lock;
  if (
    scope?.startsWith("wave ") &&
    ((table === "Inventory" && !readsImages(input)) || operation === "TransactWriteItems")
  )
    return PART.outcome;
  if (scope === PART.reports && operation === "UpdateItem" && !storesAnswer(input)) return PART.news;
  if (scope === PART.lock && /^cmds#.*#q$/.test(String(obj(input.Key).id ?? ""))) return PART.preflight;
  const part = scope ?? PART.bookkeeping;
  if (part !== "dispatch") return part;
  if (operation === "Query" && table === "Targets") return PART.claim;
  if (operation === "TransactWriteItems" && table === "Runs+Targets") return PART.claim;
  return PART.bookkeeping;
}

/**
 * A command set write that stores a result or an answer: it sets an entry's `r` or `q`
 * (src/adapters/dynamodb/command-set-store.ts `record`; a progress write names `r` too, in its
 * condition only).
 */
function storesAnswer(input: Obj): boolean {
  const expression = String(input.UpdateExpression ?? "");
  return Object.entries(obj(input.ExpressionAttributeNames)).some(
    ([placeholder, name]) => (name === "r" || name === "q") && expression.includes(`.${placeholder} =`),
  );
}

/** A read of firmware image records (their keys `image#…`, on the Inventory table: images.ts). */
function readsImages(input: Obj): boolean {
  const keys = Object.values(obj(input.RequestItems)).flatMap(
    (r) => (obj(r).Keys as unknown[] | undefined) ?? [],
  );
  const key = obj(input.Key);
  return [...keys, key].some((k) => String(obj(k).pk ?? "").startsWith("image#"));
}
