/**
 * The paths the rollout benchmark measures in one sitting:
 * - "after": the child-task definition as it is (state-machines/child-task.asl.json);
 * - "choice": that file as it was before AwaitWave and AwaitNextWave went on to each other
 *   (`withoutErrorExits`): a woken wave passes WaveDone? on its way back to AwaitWave, and the
 *   judge wakes its wait with the wave marked `ended` or `checkNeeded` for that Choice to route;
 * - "twowrites": that file as it was before AwaitWave sent its step (and before it judged the
 *   wave it was woken for: `withoutJudge`): the checks send the next
 *   step themselves (CheckPreflight's `sendFirst` and CheckWave's `sendNext` true: its commands
 *   written, then published) and AwaitWave stores its token in a write of its own, a token it
 *   could not store (any error but its timeouts) falling back to WaitForWave's poll; likewise
 *   AcquireLock sends the preflight's queries (no `ask`), and reads its task (no `input`, the
 *   execution's input with the task the submitter carried), and AwaitPreflight stores its token alone;
 * - "timeout": that file as it was before AwaitWave's heartbeat: its wait times out after
 *   `awaitSeconds` (TimeoutSecondsPath), whatever the wave's BMCs report, so a 10-minute flash
 *   times out once into an early check (bench/lib/production-model.ts);
 * - "before": that, and its wave loop as it was before the steps started the next step:
 *   CheckPreflight without `sendFirst` and CheckWave without `sendNext`, so every step of a wave
 *   goes (CheckPreflight ─► PreflightDone? or CheckWave ─► WaveDone?) ─► MoreWaves? ─► SendWave ─►
 *   AwaitWave.
 * The steps still serve those definitions (executions started before a deployment keep theirs),
 * so an older path is the old path on today's code, not a model of it.
 */
import type { AslMachine, AslState } from "../../src/adapters/stepfunctions/asl.js";

export type RolloutPath = "before" | "timeout" | "twowrites" | "choice" | "after";

/** Whether the path's AwaitWave is kept waiting by the receiver's heartbeats. */
export const heartbeats = (path: RolloutPath): boolean =>
  path === "after" || path === "choice" || path === "twowrites";

export function definitionFor(path: RolloutPath, current: AslMachine): AslMachine {
  if (path === "after") return current;
  if (path === "choice") return withoutErrorExits(current);
  const twoWrites = withTwoWrites(current);
  if (path === "twowrites") return twoWrites;
  const before = withoutHeartbeat(twoWrites);
  if (path === "timeout") return before;
  const states = before.States as Record<string, AslState & Record<string, unknown>>;
  const check = states.CheckWave;
  const done = states["WaveDone?"];
  const preflight = states.CheckPreflight;
  const preflightDone = states["PreflightDone?"];
  if (check === undefined || done === undefined || preflight === undefined || preflightDone === undefined)
    throw new Error("no CheckWave, WaveDone?, CheckPreflight or PreflightDone? state");
  const { sendNext: _, ...parameters } = check.Parameters ?? {};
  check.Parameters = parameters;
  done.Choices = [
    { Variable: "$.plan.ended", IsPresent: true, Next: "AlreadyFinished" },
    { Variable: "$.plan.wave.done", BooleanEquals: true, Next: "MoreWaves?" },
  ];
  done.Default = "AwaitWave";
  const { sendFirst: __, ...preflightParameters } = preflight.Parameters ?? {};
  preflight.Parameters = preflightParameters;
  preflightDone.Choices = [{ Variable: "$.plan.done", BooleanEquals: true, Next: "MoreWaves?" }];
  preflightDone.Default = "WaitForPreflight";
  return before;
}

/** The definition with AwaitWave as before its heartbeat: a timeout of `awaitSeconds`, caught alone. */
function withoutHeartbeat(current: AslMachine): AslMachine {
  const older = structuredClone(current);
  const wait = older.States.AwaitWave as (AslState & Record<string, unknown>) | undefined;
  if (wait === undefined) throw new Error("no AwaitWave state");
  wait.TimeoutSecondsPath = "$.plan.wave.awaitSeconds";
  delete wait.HeartbeatSecondsPath;
  wait.Catch = (wait.Catch as { ErrorEquals: string[] }[]).map((c) =>
    c.ErrorEquals.includes("States.Timeout") ? { ...c, ErrorEquals: ["States.Timeout"] } : c,
  );
  return older;
}

/**
 * The definition as it was before AwaitWave sent its step: the checks send it (`sendFirst`,
 * `sendNext` true), AwaitWave's Payload is the wave alone (its Lambda stores the token in a write
 * of its own), retries no publish, and falls back to the poll on any error but its timeouts.
 */
function withTwoWrites(current: AslMachine): AslMachine {
  const older = withoutJudge(current);
  const states = older.States as Record<string, AslState & Record<string, unknown>>;
  const { CheckWave: check, CheckPreflight: preflight, AwaitWave: wait, AcquireLock: lock } = states;
  const { AwaitPreflight: queries } = states;
  if (check === undefined || preflight === undefined || wait === undefined)
    throw new Error("no CheckWave, CheckPreflight or AwaitWave state");
  if (lock === undefined || queries === undefined) throw new Error("no AcquireLock or AwaitPreflight state");
  check.Parameters = { ...check.Parameters, sendNext: true };
  preflight.Parameters = { ...preflight.Parameters, sendFirst: true };
  // AcquireLock sends the queries (and, as before, gets no input: it reads its task); AwaitPreflight
  // stores its token alone.
  const { ask: _, "input.$": ___, ...lockParameters } = lock.Parameters ?? {};
  lock.Parameters = lockParameters;
  const asking = queries.Parameters as { Payload: Record<string, unknown> };
  const { "rackId.$": __, ...queriesPayload } = asking.Payload;
  queries.Parameters = { ...asking, Payload: queriesPayload };
  queries.Retry = (queries.Retry as { ErrorEquals: string[] }[]).filter(
    (r) => !r.ErrorEquals.includes("BmcPublishError"),
  );
  queries.Catch = [
    { ErrorEquals: ["States.Timeout"], ResultPath: null, Next: "CheckPreflight" },
    { ErrorEquals: ["States.ALL"], ResultPath: null, Next: "WaitForPreflight" },
  ];
  const parameters = wait.Parameters as { Payload: Record<string, unknown> };
  const { step, "taskId.$": taskId, "token.$": token, "wave.$": wave } = parameters.Payload;
  wait.Parameters = {
    ...parameters,
    Payload: { step, "taskId.$": taskId, "token.$": token, "wave.$": wave },
  };
  wait.Retry = (wait.Retry as { ErrorEquals: string[] }[]).filter(
    (r) => !r.ErrorEquals.includes("BmcPublishError"),
  );
  wait.Catch = [
    { ErrorEquals: ["States.Timeout", "States.HeartbeatTimeout"], ResultPath: null, Next: "CheckWave" },
    { ErrorEquals: ["States.ALL"], ResultPath: null, Next: "WaitForWave" },
  ];
  return older;
}

/**
 * The definition as it was before AwaitWave and AwaitNextWave went on to each other: one AwaitWave,
 * its Next WaveDone?, which routes the judge's marks (`$.plan.wave.ended` to AlreadyFinished,
 * `$.plan.wave.checkNeeded` to CheckWave) and sends a woken wave back to AwaitWave; no
 * `exitsAsErrors`, so the judge wakes its wait with those marks instead of ending it with an error.
 */
function withoutErrorExits(current: AslMachine): AslMachine {
  const older = structuredClone(current);
  const states = older.States as Record<string, AslState & Record<string, unknown>>;
  const { AwaitWave: wait, "WaveDone?": done } = states;
  if (wait === undefined || done === undefined || states.AwaitNextWave === undefined)
    throw new Error("no AwaitWave, AwaitNextWave or WaveDone? state");
  delete states.AwaitNextWave;
  const parameters = wait.Parameters as { Payload: Record<string, unknown> };
  const { exitsAsErrors: _, ...payload } = parameters.Payload;
  wait.Parameters = { ...parameters, Payload: payload };
  wait.Catch = (wait.Catch as { ErrorEquals: string[] }[]).filter(
    (c) => !c.ErrorEquals.includes("OutcomeRecorded") && !c.ErrorEquals.includes("StepHandedOver"),
  );
  wait.Next = "WaveDone?";
  const [ended, ...rest] = done.Choices as { Variable: string }[];
  done.Choices = [
    ended,
    { Variable: "$.plan.wave.ended", IsPresent: true, Next: "AlreadyFinished" },
    { Variable: "$.plan.wave.checkNeeded", IsPresent: true, Next: "CheckWave" },
    ...rest,
  ];
  return older;
}

/**
 * The definition as it was before AwaitWave judged the wave it was woken for: its wake-up's output
 * is the answers alone, on the wave (`$.plan.wave.answers`), CheckWave judges every step (no
 * `nextMayBeSent`: nothing before it sent the next step), and WaveDone? has no judging marks to read.
 */
function withoutJudge(current: AslMachine): AslMachine {
  const older = withoutErrorExits(current);
  const states = older.States as Record<string, AslState & Record<string, unknown>>;
  const { CheckWave: check, AwaitWave: wait, "WaveDone?": done } = states;
  if (check === undefined || wait === undefined || done === undefined)
    throw new Error("no CheckWave, AwaitWave or WaveDone? state");
  const parameters = wait.Parameters as { Payload: Record<string, unknown> };
  const { judge: _, ...payload } = parameters.Payload;
  wait.Parameters = { ...parameters, Payload: payload };
  wait.ResultPath = "$.plan.wave.answers";
  wait.Next = "CheckWave";
  const { nextMayBeSent: __, ...checkParameters } = check.Parameters ?? {};
  check.Parameters = checkParameters;
  done.Choices = (done.Choices as { Variable: string }[]).filter(
    (c) => c.Variable !== "$.plan.wave.ended" && c.Variable !== "$.plan.wave.checkNeeded",
  );
  return older;
}
