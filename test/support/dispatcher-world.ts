/**
 * The dispatcher's unit-test world: a run in a given state on the in-memory RunStore (held to the
 * same contract as the DynamoDB one), a scripted submitter, a clock, and recording metrics.
 */
import { createControls } from "../../src/app/controls.js";
import { createDispatcher, type PassResult } from "../../src/app/dispatcher.js";
import type { DispatchMetricName, Metrics } from "../../src/app/observability.js";
import type { Run, SafetyGate, Target } from "../../src/domain/model.js";
import { clockOf } from "./clock.js";
import { uuid } from "./dynamodb-fixtures.js";
import { MemoryRunStore } from "./memory-stores.js";
import { type RunState, runInState, T0 } from "./run-states.js";
import { ScriptedSubmitter } from "./scripted-submitter.js";

export const RUN = uuid(1, "d15a0000");
export const HOUR = 3_600_000;
export const FAIL_ONE: SafetyGate = { kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 };
export const key = (t: Target) => `operation-run-target:${t.id}`;

export function recordingMetrics() {
  const added: [DispatchMetricName, number][] = [];
  let flushes = 0;
  const sink: Metrics = {
    add: (name, value) => void added.push([name, value]),
    flush: () => void flushes++,
  };
  return { sink, added, flushes: () => flushes };
}

/** One run in `state` in a fresh store, a dispatcher and controls over it; call counts start at 0. */
export async function world(state: RunState, options: { store?: MemoryRunStore; at?: number } = {}) {
  const runs = options.store ?? new MemoryRunStore();
  const { run, targets } = runInState(RUN, state);
  await runs.createRun(run, targets);
  const clock = { now: T0 + (options.at ?? 1000) };
  const submitter = new ScriptedSubmitter();
  const logs: string[] = [];
  const metrics = recordingMetrics();
  const deps = {
    runs,
    submitter,
    clock: clockOf(() => clock.now),
    log: (line: string) => void logs.push(line),
  };
  const dispatcher = createDispatcher({ ...deps, metrics: metrics.sink });
  const controls = createControls(deps);
  runs.calls.reset();
  return {
    runs,
    targets,
    clock,
    submitter,
    logs,
    metrics,
    dispatcher,
    controls,
    pass: () => dispatcher.dispatchRun(RUN),
    stored: async () => (await runs.getRun(RUN)) as Run,
    target: async (i: number) => (await runs.getTarget(RUN, targets[i]!.id)) as Target,
    statuses: () => Promise.all(targets.map(async (t) => (await runs.getTarget(RUN, t.id))?.status)),
  };
}

export const passResult = (decision: PassResult["decision"], rest: Partial<PassResult> = {}): PassResult => ({
  runId: RUN,
  decision,
  submitted: 0,
  blocked: 0,
  failed: 0,
  ...rest,
});
