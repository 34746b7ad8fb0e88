/**
 * The run history's test cases (src/domain/run-history.ts): a run as read, and the events the
 * write of one reducer event records (the real reducer, the new version set as the use cases do:
 * max(now, updatedAt + 1)).
 */
import type { Actor } from "../../src/domain/actor.js";
import type { RunHistoryEvent } from "../../src/domain/history-event.js";
import type { Run } from "../../src/domain/model.js";
import { historyEvents } from "../../src/domain/run-history.js";
import { type RunEvent, reduceRun } from "../../src/domain/run-machine.js";
import { runConfig } from "./domain-fixtures.js";
import { run as machineRun, NOW, type RunOverrides } from "./run-machine-cases.js";

export const ALICE: Actor = { name: "alice", source: "DECLARED", authenticated: false, subjectAltNames: [] };
export const OPS: Actor = {
  name: "ops",
  source: "CLIENT_CERTIFICATE",
  authenticated: true,
  subjectAltNames: ["DNS:ops.example.com"],
};

export const baseConfig = runConfig({
  selector: { kind: "percentage", percentage: 50, seed: "sel-seed" },
  ordering: { kind: "random", seed: "ord-seed" },
  safetyGates: [{ kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 2 }],
  phasePlan: { kind: "equal", phaseCount: 2 },
});

/**
 * A RUNNING two-phase run [4, 4] at phase 0, started at T0, nothing done: the reducer tests' run
 * (run-machine-cases.ts) on this configuration, with a counter for each phase.
 */
export function run(over: RunOverrides = {}): Run {
  const { counters = [], config = {}, ...rest } = over;
  return machineRun({
    ...rest,
    config: { ...baseConfig, ...config },
    counters: [0, 1].map((i) => counters[i] ?? {}),
  });
}

/** The reducer's write for `event` at `now`, then its history. */
export function written(before: Run, event: RunEvent, now = NOW, actor?: Actor): RunHistoryEvent[] {
  const result = reduceRun(before, event, now);
  if (!result.ok) throw result.error;
  if (!result.write) throw new Error("the reducer wrote nothing");
  const after = { ...result.run, updatedAt: Math.max(now, before.updatedAt + 1) };
  return historyEvents(before, after, event, now, actor);
}

export const kinds = (events: RunHistoryEvent[]) => events.map((e) => [e.kind, e.message]);
export const evaluate: RunEvent = { type: "evaluate" };
