/**
 * The manual controls' test world (src/app/controls.ts): a run in a given state on the in-memory
 * RunStore, the controls on it with a scripted submitter, and the FailedPrecondition they refuse with.
 */
import { createControls } from "../../src/app/controls.js";
import type { Run, RunStatus, Target } from "../../src/domain/model.js";
import { clockOf } from "./clock.js";
import { uuid } from "./dynamodb-fixtures.js";
import { MemoryRunStore } from "./memory-stores.js";
import { type RunState, runInState, T0 } from "./run-states.js";
import { ScriptedSubmitter } from "./scripted-submitter.js";

export const RUN = uuid(1, "c0a70000");
export const INVALID = "operation run is not in a valid state for the requested operation";

export async function world(
  state: RunState,
  options: {
    store?: MemoryRunStore;
    cancelBudgetMs?: number;
    dispatch?: (runId: string) => Promise<unknown>;
  } = {},
) {
  const runs = options.store ?? new MemoryRunStore();
  const { run, targets } = runInState(RUN, state);
  await runs.createRun(run, targets);
  runs.calls.reset();
  const clock = { now: T0 + 5000 };
  const submitter = new ScriptedSubmitter();
  const logs: string[] = [];
  const dispatched: string[] = [];
  const controls = createControls({
    runs,
    submitter,
    clock: clockOf(() => clock.now),
    log: (line) => void logs.push(line),
    dispatch:
      options.dispatch ??
      (async (runId) => {
        dispatched.push(runId);
      }),
    ...(options.cancelBudgetMs === undefined ? {} : { cancelBudgetMs: options.cancelBudgetMs }),
  });
  return {
    runs,
    run,
    targets,
    clock,
    submitter,
    logs,
    dispatched,
    controls,
    stored: async () => (await runs.getRun(RUN)) as Run,
    target: async (i: number) => (await runs.getTarget(RUN, targets[i]!.id)) as Target,
  };
}

export const refused = (detail: string) => ({
  code: "FAILED_PRECONDITION",
  message: `${INVALID}: ${detail}`,
});
export const TERMINAL: RunStatus[] = ["COMPLETED", "CANCELLED", "FAILED", "COMPLETED_WITH_FAILURES"];
