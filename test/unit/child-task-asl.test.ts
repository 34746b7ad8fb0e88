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
  callbackStateNames,
  loadChildTaskDefinition,
  TASK_STEPS_PLACEHOLDER,
  taskStateNames,
} from "../../src/adapters/stepfunctions/asl.js";
import type { StepName } from "../../src/app/child-task/settings.js";
import { JUDGE_EXITS } from "../../src/domain/step-errors.js";

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
const STEPS: StepName[] = [
  "acquireLock",
  "awaitQueries",
  "checkQueries",
  "sendWave",
  "awaitWave",
  "checkWave",
  "recordOutcome",
  "startExternalCheck",
  "judgeExternalCheck",
];
const CALLBACK = "arn:aws:states:::lambda:invoke.waitForTaskToken";

describe("child-task ASL", () => {
  // The validator compiles its JSON schemas on its first call: about 2 s of CPU on a quiet 2-core
  // machine, past vitest's 5 s default when the machine is loaded.
  it("is valid ASL once the placeholder is substituted, ARNs and paths checked", { timeout: 30_000 }, () => {
    const result = validate(structuredClone(machine), { checkArn: true, checkPaths: true });
    expect(result.errorsText("\n")).toBe("");
    expect(result.isValid).toBe(true);
  });

  it("every Task state calls the task-steps placeholder, with a `step` the handler knows", () => {
    expect(tasks.length).toBe(11);
    // A callback state invokes the function through the Lambda integration: its payload is the event.
    const eventOf = (state: AslState) =>
      state.Resource === CALLBACK ? (state.Parameters?.Payload as Record<string, unknown>) : state.Parameters;
    for (const [name, state] of tasks) {
      if (state.Resource === CALLBACK)
        expect(state.Parameters?.FunctionName, name).toBe(TASK_STEPS_PLACEHOLDER);
      else expect(state.Resource, name).toBe(TASK_STEPS_PLACEHOLDER);
      expect(STEPS, name).toContain(eventOf(state)?.step);
    }
    // …and each step is used by at least one state.
    expect(new Set(tasks.map(([, s]) => eventOf(s)?.step))).toEqual(new Set(STEPS));
    expect(taskStateNames(machine).sort()).toEqual(tasks.map(([n]) => n).sort());
    expect(JSON.stringify(machine)).not.toContain(TASK_STEPS_PLACEHOLDER);
    expect(JSON.stringify(machine).split(ARN).length - 1).toBe(11);
  });

  it("a wave waits for its results in AwaitWave (a task token the receiver sends back), its check after the wake-up or the timeout", () => {
    const s = raw.States;
    expect(callbackStateNames(raw)).toEqual([
      "AwaitPreflight",
      "AwaitExternalCheck",
      "AwaitWave",
      "AwaitNextWave",
    ]);
    const wait = s.AwaitWave as AslState;
    expect(wait.Resource).toBe(CALLBACK);
    // The plan beside the wave: what the Lambda needs to send a step its check made (`unsent`).
    expect(wait.Parameters?.Payload).toEqual({
      step: "awaitWave",
      "taskId.$": "$.taskId",
      "token.$": "$$.Task.Token",
      "wave.$": "$.plan.wave",
      "rackId.$": "$.rackId",
      "settings.$": "$.settings",
      "groups.$": "$.plan.groups",
      "cursor.$": "$.plan.cursor",
      // The definition whose wait judges the wave it was woken for (wave-judge.ts), and ends
      // through its Catch what it does not send.
      judge: true,
      exitsAsErrors: true,
    });
    // Its heartbeat is the net under a lost wake-up (the receiver sends one with each
    // acknowledgement or progress it stores); its timeout the wave's deadline.
    expect(wait.TimeoutSecondsPath).toBe("$.plan.wave.awaitTimeoutSeconds");
    expect(wait.HeartbeatSecondsPath).toBe("$.plan.wave.awaitSeconds");
    // A wake-up's output (the wave its wait stored as its resume, with the answers in it)
    // replaces the wave, and the state goes on to its twin, which judges it: one state a step;
    // a timeout's nothing: the plan goes on as it was, to the check.
    expect(wait.ResultPath).toBe("$.plan.wave");
    expect(wait.Next).toBe("AwaitNextWave");
    // Its timeouts (the heartbeat's, the deadline's) are the expected way to the check, never
    // retried; a token it could not store (or a wake-up of its own that failed), a store outage
    // and Lambda's own errors fall back to the poll's Wait, whose check tells sent from never
    // sent; the send's own failures (a closed set, a task misconfigured, publishing that kept
    // failing, credentials) end the task as they did from the check that sent. What the judge
    // does not send ends its wait with an error of its own: the task's last step, its outcome
    // recorded, to AlreadyFinished; a step handed to CheckWave, the error on the judged wave as
    // `checkNeeded` (so the check knows nothing was sent after it).
    expect(wait.Catch).toEqual([
      { ErrorEquals: ["States.Timeout", "States.HeartbeatTimeout"], ResultPath: null, Next: "CheckWave" },
      {
        ErrorEquals: [
          "WaitNotStored",
          "StoreUnavailableError",
          "Lambda.ServiceException",
          "Lambda.AWSLambdaException",
          "Lambda.SdkClientException",
          "Lambda.TooManyRequestsException",
          "Lambda.Unknown",
        ],
        ResultPath: null,
        Next: "WaitForWave",
      },
      { ErrorEquals: ["OutcomeRecorded"], ResultPath: null, Next: "AlreadyFinished" },
      { ErrorEquals: ["StepHandedOver"], ResultPath: "$.plan.wave.checkNeeded", Next: "CheckWave" },
      { ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: "RecordFailure" },
    ]);
    expect(Object.values(JUDGE_EXITS).sort()).toEqual(["OutcomeRecorded", "StepHandedOver"]);
    for (const r of wait.Retry as { ErrorEquals: string[] }[]) {
      expect(r.ErrorEquals).not.toContain("States.Timeout");
      expect(r.ErrorEquals).not.toContain("States.HeartbeatTimeout");
      // The judged step's failure and a cancel's closed set end the task (RecordFailure), as
      // CheckWave's did: never tried again.
      for (const ending of [
        "ComponentsFailed",
        "TaskEnded",
        "OutcomeRecorded",
        "StepHandedOver",
        "States.ALL",
        "States.TaskFailed",
      ])
        expect(r.ErrorEquals).not.toContain(ending);
    }
    // A publish that failed is retried (a new token; the entries stay, the published stay out).
    expect(wait.Retry).toContainEqual({
      ErrorEquals: ["BmcPublishError"],
      IntervalSeconds: 2,
      MaxAttempts: 4,
      BackoffRate: 2,
      JitterStrategy: "FULL",
    });
    expect(s.SendWave?.Next).toBe("AwaitWave");
    // AwaitNextWave is AwaitWave but for its Next (and its Comment): the two alternate, a woken
    // wave from one to the other, as a state may not name itself (ASL: "the name of another state").
    const { Next: _n, Comment: _c, ...waitBody } = wait;
    const { Next: twinNext, Comment: _tc, ...twinBody } = s.AwaitNextWave as AslState;
    expect(twinBody).toEqual(waitBody);
    expect(twinNext).toBe("AwaitWave");
    // A pending wave (the next step CheckWave started, or one still waiting) waits again.
    expect((s["WaveDone?"] as unknown as { Choices: unknown[] }).Choices[1]).toEqual({
      Variable: "$.plan.wave.done",
      BooleanEquals: false,
      Next: "AwaitWave",
    });
    expect(s.WaitForWave).toMatchObject({ SecondsPath: "$.plan.wave.waitSeconds", Next: "CheckWave" });
  });

  it("ends a wave inside CheckWave and makes the next step there (AwaitWave sends it): no FinishWave state, no SendWave between steps, the plan (groups, cursor, wave) in and out of $.plan", () => {
    const s = raw.States;
    expect(s.FinishWave).toBeUndefined();
    expect(s.CheckWave?.Parameters).toMatchObject({
      "groups.$": "$.plan.groups",
      "cursor.$": "$.plan.cursor",
      "wave.$": "$.plan.wave",
      sendNext: "wait",
      // After a judging wait timed out or failed, the next step may be out already (wave-check.ts `sentAlready`).
      nextMayBeSent: true,
    });
    expect(s.CheckWave?.ResultPath).toBe("$.plan");
    expect(s.SendWave?.ResultPath).toBe("$.plan.wave");
    // A task the last check ended goes to AlreadyFinished; a pending wave (the step the check
    // started) to AwaitWave; a done one as MoreWaves? would, without its transition: a retry's
    // backoff, SendWave (a check that started nothing), or RecordSuccess; a rack handed to an
    // external check to AwaitExternalCheck first, on either.
    // Only CheckWave comes here: a judging wait's ends go through its Catch, not this Choice.
    expect(s["WaveDone?"]).toEqual({
      Type: "Choice",
      Comment: expect.any(String),
      Choices: [
        { Variable: "$.plan.ended", IsPresent: true, Next: "AlreadyFinished" },
        { Variable: "$.plan.wave.done", BooleanEquals: false, Next: "AwaitWave" },
        { Variable: "$.plan.cursor.external", IsPresent: true, Next: "AwaitExternalCheck" },
        { Variable: "$.plan.cursor.retry", BooleanEquals: true, Next: "WaitBeforeRetry" },
        { Variable: "$.plan.cursor.more", BooleanEquals: true, Next: "SendWave" },
      ],
      Default: "RecordSuccess",
    });
    expect(s["MoreWaves?"]).toMatchObject({
      Choices: [
        { Variable: "$.plan.cursor.external", IsPresent: true, Next: "AwaitExternalCheck" },
        { Variable: "$.plan.cursor.retry", BooleanEquals: true, Next: "WaitBeforeRetry" },
        { Variable: "$.plan.cursor.more", BooleanEquals: true, Next: "SendWave" },
      ],
      Default: "RecordSuccess",
    });
  });

  it("AcquireLock sends the preflight's queries: its result is the poll state in $.plan, and no SendQueries state follows", () => {
    const s = raw.States;
    expect(s.SendQueries).toBeUndefined();
    expect(s.AcquireLock?.ResultPath).toBe("$.plan");
    expect((s["LockAcquired?"] as unknown as { Choices: unknown[] }).Choices).toEqual([
      { Variable: "$.plan.status", StringEquals: "acquired", Next: "AwaitPreflight" },
      { Variable: "$.plan.status", StringEquals: "waiting", Next: "WaitForLock" },
    ]);
    expect(s.WaitForLock?.SecondsPath).toBe("$.plan.waitSeconds");
    // The rack: its readiness is read beside the task.
    expect(s.CheckPreflight?.Parameters).toMatchObject({ "preflight.$": "$.plan", "rackId.$": "$.rackId" });
  });

  it("the preflight waits for its answers in AwaitPreflight (a task token the receiver sends back), then CheckPreflight; a not-ready loop polls through WaitForPreflight", () => {
    const s = raw.States;
    const wait = s.AwaitPreflight as AslState;
    expect(wait.Resource).toBe(CALLBACK);
    // The rack beside the poll state: what the Lambda needs to send the queries AcquireLock made.
    expect(s.AcquireLock?.Parameters).toMatchObject({ ask: "wait" });
    expect(wait.Parameters?.Payload).toEqual({
      step: "awaitQueries",
      "taskId.$": "$.taskId",
      "token.$": "$$.Task.Token",
      "preflight.$": "$.plan",
      "rackId.$": "$.rackId",
    });
    expect(wait.TimeoutSecondsPath).toBe("$.plan.awaitSeconds");
    // CheckPreflight reads the answers with the task: the wake-up's output is dropped, the poll
    // state goes on as it was.
    expect(wait.ResultPath).toBeNull();
    expect(wait.Next).toBe("CheckPreflight");
    // As AwaitWave's: its timeout to the check; a token not stored, a store outage and Lambda's
    // own errors to the poll (whose check asks the BMCs if the queries were never stored); the
    // send's failures (publishing that kept failing) to RecordFailure.
    expect(wait.Catch).toEqual([
      { ErrorEquals: ["States.Timeout"], ResultPath: null, Next: "CheckPreflight" },
      { ...((s.AwaitWave?.Catch ?? []) as Record<string, unknown>[])[1], Next: "WaitForPreflight" },
      { ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: "RecordFailure" },
    ]);
    // As AwaitWave's: it sends the queries, so a publish that failed is retried too.
    expect(wait.Retry).toEqual(s.AwaitWave?.Retry);
    expect((s["PreflightDone?"] as { Default?: string }).Default).toBe("WaitForPreflight");
    expect(s.WaitForPreflight).toMatchObject({ SecondsPath: "$.plan.waitSeconds", Next: "CheckPreflight" });
  });

  it('CheckPreflight makes the task\'s first step (sendFirst "wait": AwaitWave sends it) and PreflightDone? goes straight to AwaitWave with it; a done preflight that started nothing goes on to MoreWaves?', () => {
    const s = raw.States;
    expect(s.CheckPreflight?.Parameters).toMatchObject({ "preflight.$": "$.plan", sendFirst: "wait" });
    expect(s.CheckPreflight?.ResultPath).toBe("$.plan");
    expect(s["PreflightDone?"]).toMatchObject({
      Choices: [
        { Variable: "$.plan.wave", IsPresent: true, Next: "AwaitWave" },
        { Variable: "$.plan.done", BooleanEquals: true, Next: "MoreWaves?" },
      ],
      Default: "WaitForPreflight",
    });
    // AwaitWave reads the wave CheckPreflight returns in the plan (CheckWave its groups and cursor).
    expect(s.AwaitWave?.Parameters?.Payload).toMatchObject({ "wave.$": "$.plan.wave" });
  });

  it("uses only what both Step Functions and the local runner run: JSONPath, task tokens in the four callback states and a heartbeat in AwaitWave's and its twin's (local/step-functions.ts serves them), no variables or distributed maps", () => {
    expect(text.split("waitForTaskToken").length - 1).toBe(4);
    expect(text.split("$$.Task.Token").length - 1).toBe(4);
    expect(
      states.filter(([, s]) => "HeartbeatSecondsPath" in s || "HeartbeatSeconds" in s).map(([n]) => n),
    ).toEqual(["AwaitWave", "AwaitNextWave"]);
    for (const forbidden of [
      "QueryLanguage",
      "JSONata",
      '"Assign"',
      '"Arguments"',
      '"Output"',
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
      // A callback state's Catch leads to its check or its poll (above), whose own Catch records.
      if (
        record.has(name) ||
        name === "AwaitWave" ||
        name === "AwaitNextWave" ||
        name === "AwaitPreflight" ||
        name === "AwaitExternalCheck"
      )
        continue;
      expect(state.Catch, name).toEqual([
        { ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: "RecordFailure" },
      ]);
    }
    // The recorders retry anything; if they still fail, the execution fails and the status rule records it.
    for (const name of record) {
      const retry = raw.States[name]!.Retry as { ErrorEquals: string[] }[];
      expect(retry[0]?.ErrorEquals).toEqual(["States.ALL"]);
    }
    // The execution ends as its task did: FAILED fails it, a task ended otherwise meanwhile (a
    // cancel) ends it as finished.
    expect(raw.States.RecordFailure).toMatchObject({ ResultPath: "$.recorded", Next: "Failed?" });
    expect(raw.States["Failed?"]).toMatchObject({
      Type: "Choice",
      Choices: [{ Variable: "$.recorded.status", StringEquals: "FAILED", Next: "TaskFailed" }],
      Default: "AlreadyFinished",
    });
  });

  it("an external health check: MoreWaves? and WaveDone? send a cursor naming one to AwaitExternalCheck (a task token the check sends back, its own timeout), whose every ending is judged, then the loop goes on", () => {
    const s = raw.States;
    expect((s["MoreWaves?"]!.Choices as unknown[])[0]).toEqual({
      Variable: "$.plan.cursor.external",
      IsPresent: true,
      Next: "AwaitExternalCheck",
    });
    // The wave's own check ends a step that names a check: WaveDone? sends it there too, never on.
    expect((s["WaveDone?"]!.Choices as unknown[])[2]).toEqual({
      Variable: "$.plan.cursor.external",
      IsPresent: true,
      Next: "AwaitExternalCheck",
    });
    const wait = s.AwaitExternalCheck as AslState;
    expect(wait.Resource).toBe(CALLBACK);
    expect(wait.Parameters?.Payload).toEqual({
      step: "startExternalCheck",
      "taskId.$": "$.taskId",
      "rackId.$": "$.rackId",
      "token.$": "$$.Task.Token",
      "groups.$": "$.plan.groups",
      "cursor.$": "$.plan.cursor",
      "settings.$": "$.settings",
    });
    expect(wait.TimeoutSecondsPath).toBe("$.plan.cursor.external.timeoutSeconds");
    // The verdict, the timeout, a hand-over that failed and the check's SendTaskFailure alike go
    // to the judge, in the same place: the judge tells them apart.
    expect(wait.ResultPath).toBe("$.plan.checked");
    expect(wait.Catch).toEqual([
      { ErrorEquals: ["States.ALL"], ResultPath: "$.plan.checked", Next: "JudgeExternalCheck" },
    ]);
    expect(wait.Next).toBe("JudgeExternalCheck");
    for (const r of wait.Retry as { ErrorEquals: string[] }[]) {
      expect(r.ErrorEquals).not.toContain("States.Timeout");
      expect(r.ErrorEquals).not.toContain("States.HeartbeatTimeout");
    }
    const judge = s.JudgeExternalCheck as AslState;
    expect(judge.Parameters).toMatchObject({ step: "judgeExternalCheck", "checked.$": "$.plan.checked" });
    // The next cursor replaces the one naming the check; a fail is an error RecordFailure records.
    expect(judge).toMatchObject({ ResultPath: "$.plan.cursor", Next: "MoreWaves?" });
  });

  it("every state that publishes to BMCs retries BmcPublishError: AcquireLock (the preflight's queries), CheckPreflight (its re-asks), SendWave, CheckWave (the next step it starts)", () => {
    for (const name of ["AcquireLock", "CheckPreflight", "SendWave", "CheckWave"]) {
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
      if (last === "AlreadyFinished" && !path.includes("RecordFailure")) {
        // Finished before it started, or recorded by the last wave's check (`$.plan.ended`) or
        // by the AwaitWave (or its twin) that judged it (OutcomeRecorded).
        if (path.length === 3) expect(path).toEqual(["AcquireLock", "LockAcquired?", "AlreadyFinished"]);
        else
          expect([
            "CheckWave → WaveDone? → AlreadyFinished",
            "AwaitWave → AlreadyFinished",
            "AwaitNextWave → AlreadyFinished",
          ]).toContain(path.slice(path.at(-2) === "WaveDone?" ? -3 : -2).join(" → "));
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
