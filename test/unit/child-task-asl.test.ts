/**
 * The ONE child-task definition: valid ASL (asl-validator, the validator aws-local-stepfunctions
 * itself uses), JSONPath only and free of what the local runner lacks, every Task state on the
 * task-steps placeholder with a `step` the handler knows, and every failure path leading to a state
 * that records the outcome (and so releases the rack lock).
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import {
  type AslMachine,
  type AslState,
  allStates,
  CHILD_TASK_ASL_PATH,
  loadChildTaskDefinition,
  TASK_STEPS_PLACEHOLDER,
  taskStateNames,
} from "../../src/adapters/stepfunctions/asl.js";
import type { StepName } from "../../src/app/child-task/settings.js";

const require = createRequire(import.meta.url);
const validate = require("asl-validator") as (
  definition: unknown,
  options?: { checkPaths?: boolean; checkArn?: boolean },
) => { isValid: boolean; errorsText: (separator?: string) => string };

const text = readFileSync(CHILD_TASK_ASL_PATH, "utf8");
const raw = JSON.parse(text) as AslMachine;
const ARN = "arn:aws:lambda:eu-west-1:123456789012:function:flow-task-steps";
const machine = loadChildTaskDefinition(ARN);
const states = allStates(raw);
const tasks = states.filter(([, s]) => s.Type === "Task");
// sendQueries and finishWave serve executions of earlier definitions only: AcquireLock sends the
// preflight's queries, CheckWave ends its wave.
const STEPS: StepName[] = ["acquireLock", "checkQueries", "sendWave", "checkWave", "recordOutcome"];

describe("child-task ASL", () => {
  it("is valid ASL once the placeholder is substituted, ARNs and paths checked", () => {
    const result = validate(structuredClone(machine), { checkArn: true, checkPaths: true });
    expect(result.errorsText("\n")).toBe("");
    expect(result.isValid).toBe(true);
  });

  it("every Task state calls the task-steps placeholder, with a `step` the handler knows", () => {
    expect(tasks.length).toBe(6);
    for (const [name, state] of tasks) {
      expect(state.Resource, name).toBe(TASK_STEPS_PLACEHOLDER);
      expect(STEPS, name).toContain(state.Parameters?.step);
    }
    // …and each step is used by at least one state.
    expect(new Set(tasks.map(([, s]) => s.Parameters?.step))).toEqual(new Set(STEPS));
    expect(taskStateNames(machine).sort()).toEqual(tasks.map(([n]) => n).sort());
    expect(JSON.stringify(machine)).not.toContain(TASK_STEPS_PLACEHOLDER);
    expect(JSON.stringify(machine).split(ARN).length - 1).toBe(6);
  });

  it("ends a wave inside CheckWave: no FinishWave state, the plan (groups, cursor, wave) in and out of $.plan", () => {
    const s = raw.States;
    expect(s.FinishWave).toBeUndefined();
    expect(s.CheckWave?.Parameters).toMatchObject({
      "groups.$": "$.plan.groups",
      "cursor.$": "$.plan.cursor",
      "wave.$": "$.plan.wave",
    });
    expect(s.CheckWave?.ResultPath).toBe("$.plan");
    expect(s.SendWave?.ResultPath).toBe("$.plan.wave");
    // A task the last check ended goes to AlreadyFinished; a done wave straight to MoreWaves?.
    expect((s["WaveDone?"] as unknown as { Choices: unknown[] }).Choices).toEqual([
      { Variable: "$.plan.ended", IsPresent: true, Next: "AlreadyFinished" },
      { Variable: "$.plan.wave.done", BooleanEquals: true, Next: "MoreWaves?" },
    ]);
  });

  it("AcquireLock sends the preflight's queries: its result is the poll state in $.plan, and no SendQueries state follows", () => {
    const s = raw.States;
    expect(s.SendQueries).toBeUndefined();
    expect(s.AcquireLock?.ResultPath).toBe("$.plan");
    expect((s["LockAcquired?"] as unknown as { Choices: unknown[] }).Choices).toEqual([
      { Variable: "$.plan.status", StringEquals: "acquired", Next: "WaitForPreflight" },
      { Variable: "$.plan.status", StringEquals: "waiting", Next: "WaitForLock" },
    ]);
    expect(s.WaitForLock?.SecondsPath).toBe("$.plan.waitSeconds");
    expect(s.CheckPreflight?.Parameters).toMatchObject({ "preflight.$": "$.plan" });
  });

  it("uses only what both Step Functions and aws-local-stepfunctions run: JSONPath, no task tokens, heartbeats, variables or distributed maps", () => {
    for (const forbidden of [
      "QueryLanguage",
      "JSONata",
      '"Assign"',
      '"Arguments"',
      '"Output"',
      "HeartbeatSeconds",
      "waitForTaskToken",
      "$$.Task.Token",
      "DISTRIBUTED",
      "ItemReader",
      "ItemBatcher",
      "ResultWriter",
    ]) {
      expect(text, forbidden).not.toContain(forbidden);
    }
    // No Map at all: groups and waves are a Choice loop (see the state's Comment for why).
    expect(states.filter(([, s]) => s.Type === "Map")).toEqual([]);
  });

  it("every Task state but the recorders catches everything into RecordFailure", () => {
    const record = new Set(["RecordSuccess", "RecordFailure"]);
    for (const [name, state] of tasks) {
      if (record.has(name)) continue;
      expect(state.Catch, name).toEqual([
        { ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: "RecordFailure" },
      ]);
    }
    // The recorders retry anything; if they still fail, the execution fails and the status rule records it.
    for (const name of record) {
      const retry = raw.States[name]!.Retry as { ErrorEquals: string[] }[];
      expect(retry[0]?.ErrorEquals).toEqual(["States.ALL"]);
    }
    expect(raw.States.RecordFailure?.Next).toBe("TaskFailed");
  });

  it("every state that publishes to BMCs retries BmcPublishError: AcquireLock (the preflight's queries), CheckPreflight (its re-asks), SendWave", () => {
    for (const name of ["AcquireLock", "CheckPreflight", "SendWave"]) {
      expect((raw.States[name]!.Retry as unknown[])[1], name).toEqual({
        ErrorEquals: ["BmcPublishError"],
        IntervalSeconds: 2,
        MaxAttempts: 4,
        BackoffRate: 2,
        JitterStrategy: "FULL",
      });
    }
  });

  it("every Task state but the recorders (which retry anything) rides out a store outage: StoreUnavailableError is retried first, with backoff", () => {
    const record = new Set(["RecordSuccess", "RecordFailure"]);
    for (const [name] of tasks) {
      if (record.has(name)) continue;
      expect((raw.States[name]!.Retry as unknown[])[0], name).toEqual({
        ErrorEquals: ["StoreUnavailableError"],
        IntervalSeconds: 1,
        MaxAttempts: 10,
        BackoffRate: 2,
        MaxDelaySeconds: 30,
        JitterStrategy: "FULL",
      });
    }
  });

  it("every path to an end passes a recorder, except the no-op for a task that was already finished and the last check's own record", () => {
    // Walk the top-level graph: from StartAt, every terminal state is reached only via RecordSuccess/RecordFailure.
    const next = (s: AslState): string[] => {
      const out: string[] = [];
      if (typeof s.Next === "string") out.push(s.Next);
      for (const c of (s.Choices as { Next: string }[] | undefined) ?? []) out.push(c.Next);
      if (typeof s.Default === "string") out.push(s.Default);
      for (const c of (s.Catch as { Next: string }[] | undefined) ?? []) out.push(c.Next);
      return out;
    };
    const ends: string[][] = [];
    const walk = (name: string, path: string[]) => {
      if (path.includes(name)) return; // loops (waits) end nowhere new
      const state = raw.States[name]!;
      const here = [...path, name];
      const targets = next(state);
      if (state.End === true || state.Type === "Succeed" || state.Type === "Fail") ends.push(here);
      for (const t of targets) walk(t, here);
    };
    walk(raw.StartAt, []);
    for (const path of ends) {
      const last = path[path.length - 1];
      if (last === "AlreadyFinished") {
        // Finished before it started, or recorded by the last wave's check (`$.plan.ended`).
        const tail = path.slice(-4).join(" → ");
        if (path.length === 3) expect(path).toEqual(["AcquireLock", "LockAcquired?", "AlreadyFinished"]);
        else expect(tail).toBe("WaitForWave → CheckWave → WaveDone? → AlreadyFinished");
        continue;
      }
      expect(
        path.some((n) => n === "RecordSuccess" || n === "RecordFailure"),
        path.join(" → "),
      ).toBe(true);
    }
    expect(ends.length).toBeGreaterThan(3);
  });
});
