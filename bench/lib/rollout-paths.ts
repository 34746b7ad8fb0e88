/**
 * The two paths the rollout benchmark measures in one sitting: "after", the child-task definition
 * as it is (state-machines/child-task.asl.json), and "before", the same file with its wave loop as
 * it was before the steps started the next step themselves: CheckPreflight without `sendFirst` and
 * CheckWave without `sendNext`, so every step of a wave goes (CheckPreflight ─► PreflightDone? or
 * CheckWave ─► WaveDone?) ─► MoreWaves? ─► SendWave ─► AwaitWave. The steps still serve that
 * definition (executions started before a deployment keep theirs), so "before" is the old path on
 * today's code, not a model of it.
 */
import type { AslMachine, AslState } from "../../src/adapters/stepfunctions/asl.js";

export type RolloutPath = "before" | "after";

export function definitionFor(path: RolloutPath, current: AslMachine): AslMachine {
  if (path === "after") return current;
  const before = structuredClone(current);
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
