/**
 * AwaitWave judges the step it was woken for and sends the next, through the real ASL on moto with
 * MQTT (src/app/child-task/wave-judge.ts): every wait stores its wave (its resume) with its token,
 * the wake-up hands it back with the answers, and the next wait's invocation (AwaitWave and
 * AwaitNextWave in turn) checks the step and sends the one after it, so a step is one state and
 * one task-steps invocation, counted by the local executor:
 * - the update alone over a small rack: 1 state and 1 invocation a step, no CheckWave or
 *   WaveDone?, the last step's outcome recorded by its judge, whose wait ends with OutcomeRecorded
 *   (AlreadyFinished straight after it); a step that fails is judged there too, its
 *   ComponentsFailed caught into RecordFailure;
 * - a publish that fails in a judging wait is retried there: the same answers judged to the same
 *   cursor, the same commands under the same request ids, each out once, the retry's token and
 *   resume stored in place of the failed try's; a Lambda error or a store outage after its send
 *   likewise (its commands sent again under the same request ids: the BMC flashes once);
 * - a judging wait that timed out (its BMC silent): CheckWave judges the step again from the
 *   state's answers and goes on with the next step as sent, from the deadline its stored commands
 *   carry (one read), so the BMC that never answers fails at that deadline, not a timeout later.
 * Retries, failures and external checks still take CheckWave's path (child-task-rules,
 * child-task-external-check); a cancel while a judging wait runs: child-task-one-write.
 */
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UPDATE_ONLY_RULE } from "../../bench/lib/rollout-rules.js";
import { DynamoCommandSetStore } from "../../src/adapters/dynamodb/command-set-store.js";
import type { StepEvent, WaveState } from "../../src/app/child-task/settings.js";
import type { BmcCommandPublisher } from "../../src/app/ports.js";
import { type BmcCommand, encodeBmcMessage, type UpdateCommand } from "../../src/domain/bmc-protocol.js";
import type { BmcAddress } from "../../src/domain/bmc-topics.js";
import { bmcEvtTopic } from "../../src/domain/bmc-topics.js";
import { entryKey, updateAddress } from "../../src/domain/command-sets.js";
import type { OperationRule } from "../../src/domain/operation-rules.js";
import { parseReport } from "../../src/domain/task-report.js";
import { movedTimers } from "../support/moved-timers.js";
import {
  computeUpdateRule,
  type Harness,
  HEALTHY_FLEET_SETTINGS,
  id,
  rack,
  SMALL_RACK,
  SUCCEEDING_FLEET,
  startHarness,
  until,
  upgradeRequest,
  waitForTask,
} from "./child-task-harness.js";

const fleet = SUCCEEDING_FLEET;

/** The update of two compute trays, one at a time: two steps (waves) in one record of the update set. */
const TWO_WAVES = computeUpdateRule("cb000000-0000-4000-8000-0000000000c2", "two-waves");

/** The update of the compute trays, then a 1-s sleep: the judge of the update hands the sleep on. */
const UPDATE_THEN_SLEEP: OperationRule = {
  ...TWO_WAVES,
  id: "cb000000-0000-4000-8000-0000000000c3",
  name: "update-then-sleep",
  stages: [
    {
      name: "compute",
      componentTypes: ["COMPUTE"],
      maxParallel: 0,
      steps: [
        { action: "UPDATE_FIRMWARE", timeoutSeconds: 3_600, sleepSeconds: 0 },
        { action: "SLEEP", timeoutSeconds: 0, sleepSeconds: 1 },
      ],
    },
  ],
};

type AwaitEvent = Extract<StepEvent, { step: "awaitWave" }>;
const judging = (e: AwaitEvent) => e.judge === true && e.wave.answers !== undefined;

describe("AwaitWave judges the step it was woken for and sends the next", () => {
  const P = "c5000000";
  let h: Harness;
  const entered: { taskId: string; name: string; input: unknown }[] = [];
  const waits: AwaitEvent[] = [];
  beforeAll(async () => {
    h = await startHarness({
      label: "ctj",
      racks: [rack(P, 1, SMALL_RACK), rack(P, 2, SMALL_RACK), rack(P, 3, [{ type: "COMPUTE", count: 2 }])],
      fleet,
      settings: HEALTHY_FLEET_SETTINGS,
      // Every wait's net far past the test: it ends in time only if each wait was woken.
      awaitTimeoutOverrideMs: 600_000,
      onStateEntered: (taskId, state) =>
        entered.push({ taskId, name: state.name, input: structuredClone(state.input) }),
      aroundStep: (event, run) => {
        if (event.step === "awaitWave") waits.push(structuredClone(event));
        return run();
      },
    });
    expect(await h.stores.policy.putRuleVersion(UPDATE_ONLY_RULE)).toBe("written");
    expect(await h.stores.policy.putRuleVersion(UPDATE_THEN_SLEEP)).toBe("written");
  });
  afterAll(async () => {
    await h?.close();
  });

  it("the update alone over a small rack (3 steps): 1 state and 1 task-steps invocation a step (AwaitWave and AwaitNextWave in turn), no CheckWave or WaveDone?, the last step's outcome recorded by its judge", async () => {
    h.child.executor.resetStats();
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(
      upgradeRequest([id(P, 1, 0)], { ruleId: UPDATE_ONLY_RULE.id }),
    );
    const taskId = taskIds[0] as string;
    const task = await waitForTask(h, taskId);
    await h.child.idle();
    expect(task.status).toBe("COMPLETED");
    expect(parseReport(task.report).components.every((c) => c.status === "COMPLETED")).toBe(true);
    expect(h.fleet.stats().flashes).toBe(SMALL_RACK.reduce((n, s) => n + s.count, 0));
    const stats = h.child.executor.stats();
    const STEPS = 3;
    // The task's own: AcquireLock, LockAcquired?, AwaitPreflight, CheckPreflight, PreflightDone?,
    // AlreadyFinished; the first step's sending AwaitWave; then 1 a step, its judge's wait.
    expect(stats.stateTransitions).toBe(6 + 1 + STEPS);
    expect(stats.taskInvocations).toBe(3 + 1 + STEPS);
    expect(stats.byStep).toEqual({ acquireLock: 1, awaitQueries: 1, checkQueries: 1, awaitWave: STEPS + 1 });
    // Every wait woken (the preflight's, each step's) but the last judge's own, which ends with
    // OutcomeRecorded (SendTaskFailure), caught to AlreadyFinished.
    expect(stats.callbacks).toEqual({ woken: 1 + STEPS, timedOut: 0, failed: 1 });
    // The first wait sends the first step; each later one judges the step before it, at that
    // step's own cursor (the wave's, from its resume: `$.plan.cursor` stays where the preflight left it).
    expect(waits.map(judging)).toEqual([false, true, true, true]);
    expect(waits.slice(1).map((e) => e.wave.cursor?.group)).toEqual([0, 1, 2]);
    expect(waits.slice(1).every((e) => e.cursor?.group === 0)).toBe(true);
    const names = entered.filter((s) => s.taskId === taskId).map((s) => s.name);
    expect(names.slice(-5)).toEqual([
      "AwaitWave",
      "AwaitNextWave",
      "AwaitWave",
      "AwaitNextWave",
      "AlreadyFinished",
    ]);
    expect(names).not.toContain("WaveDone?");
    expect(names).not.toContain("CheckWave");
    expect(names).not.toContain("RecordSuccess");
  });

  it("a step that fails is judged in the wait woken with its answers: its ComponentsFailed goes from that wait (AwaitNextWave) to RecordFailure, the task FAILED naming the component", async () => {
    const broken = id(P, 2, 1);
    h.fleet.setConfig({ ...fleet, components: { [broken]: { outcome: "fail" } } });
    try {
      const { taskIds } = await h.child.tasksApi.upgradeFirmware(
        upgradeRequest([id(P, 2, 0)], { ruleId: UPDATE_ONLY_RULE.id }),
      );
      const taskId = taskIds[0] as string;
      const task = await waitForTask(h, taskId);
      await h.child.idle();
      expect(task.status).toBe("FAILED");
      expect(task.message).toContain(`component ${broken} `);
      const names = entered.filter((s) => s.taskId === taskId).map((s) => s.name);
      expect(names.slice(-5)).toEqual([
        "AwaitWave",
        "AwaitNextWave",
        "RecordFailure",
        "Failed?",
        "TaskFailed",
      ]);
      expect(names).not.toContain("CheckWave");
      expect(names).not.toContain("WaveDone?");
    } finally {
      h.fleet.setConfig(fleet);
    }
  });

  it("a sleep next is handed to CheckWave straight from the judging wait (StepHandedOver, caught onto the wave as `checkNeeded`), no WaveDone? between", async () => {
    h.child.executor.resetStats();
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(
      upgradeRequest([id(P, 3, 0)], { ruleId: UPDATE_THEN_SLEEP.id }),
    );
    const taskId = taskIds[0] as string;
    const task = await waitForTask(h, taskId);
    await h.child.idle();
    expect(task.status).toBe("COMPLETED");
    const mine = entered.filter((s) => s.taskId === taskId);
    const names = mine.map((s) => s.name);
    // The update sent by AwaitWave, judged by AwaitNextWave, which hands the sleep on; CheckWave
    // makes it, AwaitWave waits it out (its timeout), and the sleep's check records the outcome.
    expect(names.slice(names.indexOf("AwaitWave"))).toEqual([
      "AwaitWave",
      "AwaitNextWave",
      "CheckWave",
      "WaveDone?",
      "AwaitWave",
      "CheckWave",
      "WaveDone?",
      "AlreadyFinished",
    ]);
    const handed = mine.find((s) => s.name === "CheckWave")?.input as { plan: { wave: WaveState } };
    expect(handed.plan.wave.checkNeeded).toEqual({ Error: "StepHandedOver", Cause: "a sleep is next" });
    expect(handed.plan.wave.answers).toBeDefined();
    expect(h.child.executor.stats().callbacks).toEqual({ woken: 2, timedOut: 1, failed: 1 });
  });
});

/** TWO_WAVES upgraded on the rack `id(P, 1, 0)` names, to the task's end (the stack idle after it). */
async function twoWavesToTheEnd(h: Harness, P: string) {
  expect(await h.stores.policy.putRuleVersion(TWO_WAVES)).toBe("written");
  const { taskIds } = await h.child.tasksApi.upgradeFirmware(
    upgradeRequest([id(P, 1, 0)], { ruleId: TWO_WAVES.id }),
  );
  const taskId = taskIds[0] as string;
  const task = await waitForTask(h, taskId);
  await h.child.idle();
  return { taskId, task };
}

describe("a publish that fails in a judging wait", () => {
  it("is retried there: the same answers judged the same way, the next step's commands under the same request ids (each out once), the retry's token and resume stored", async () => {
    const P = "c5100000";
    const waits: AwaitEvent[] = [];
    const published = new Map<string, number>();
    const updates: string[] = [];
    let failed = 0;
    const failOnce = (inner: BmcCommandPublisher): BmcCommandPublisher => ({
      async publish(to, command) {
        const requestId = (command as { requestId: string }).requestId;
        if (command.type === "update" && !updates.includes(requestId)) updates.push(requestId);
        // The second wave's update (sent by the wait that judges the first), its first try.
        if (command.type === "update" && updates.indexOf(requestId) === 1 && failed++ === 0)
          throw Object.assign(new Error(`publishing ${requestId} failed: throttled`), {
            name: "BmcPublishError",
          });
        await inner.publish(to, command);
        published.set(requestId, (published.get(requestId) ?? 0) + 1);
      },
    });
    const h = await startHarness({
      label: "ctjp",
      racks: [rack(P, 1, [{ type: "COMPUTE", count: 2 }])],
      fleet,
      settings: HEALTHY_FLEET_SETTINGS,
      awaitTimeoutOverrideMs: 600_000,
      wrapPublisher: failOnce,
      aroundStep: (event, run) => {
        if (event.step === "awaitWave") waits.push(structuredClone(event));
        return run();
      },
    });
    try {
      const { taskId, task } = await twoWavesToTheEnd(h, P);
      expect(task.status).toBe("COMPLETED");
      expect(failed).toBeGreaterThan(1);
      expect(h.fleet.stats().flashes).toBe(2);
      expect(updates).toHaveLength(2);
      expect([...published.values()].every((n) => n === 1)).toBe(true);
      // Sent the first; judged the first and failed sending the second; retried (a new token):
      // the same wave judged, the second sent; judged the second, the last.
      expect(waits.map(judging)).toEqual([false, true, true, true]);
      const [, tried, retried] = waits as [AwaitEvent, AwaitEvent, AwaitEvent];
      expect(retried.token).not.toBe(tried.token);
      expect(retried.wave).toEqual(tried.wave);
      expect(h.child.executor.stats().byStep.checkWave).toBeUndefined();
      // Both waves' commands are in the stage's record: the wait stored last is the retry's, with
      // the second wave's resume (its cursor; no answers).
      const store = new DynamoCommandSetStore(DynamoDBDocumentClient.from(h.client), h.names.tasks);
      const set = await store.get(taskId, "u", 0);
      expect(set?.wake?.token).toBe(retried.token);
      const resume = set?.wake?.resume as (WaveState & { answers?: unknown }) | undefined;
      expect(resume?.cursor).toMatchObject({ group: 0, wave: 1, step: 0 });
      expect(resume?.answers).toBeUndefined();
      expect(Object.keys(set?.entries ?? {})).toHaveLength(2);
    } finally {
      await h.close();
    }
  });
});

describe("a judging wait whose Lambda fails after its send (Lambda.Unknown, StoreUnavailableError)", () => {
  for (const error of ["Lambda.Unknown", "StoreUnavailableError"] as const) {
    it(`${error} is retried there: the same answers judged the same way, the same request id sent again (the BMC flashes once), the retry's token and resume stored`, async () => {
      const P = error === "Lambda.Unknown" ? "c5300000" : "c5310000";
      const waits: AwaitEvent[] = [];
      const published: string[] = [];
      let failed = false;
      const h = await startHarness({
        label: `ctjl${error[0]}`,
        racks: [rack(P, 1, [{ type: "COMPUTE", count: 2 }])],
        fleet,
        settings: HEALTHY_FLEET_SETTINGS,
        awaitTimeoutOverrideMs: 600_000,
        wrapPublisher: (inner) => ({
          async publish(to, command) {
            await inner.publish(to, command);
            if (command.type === "update") published.push(command.requestId);
          },
        }),
        aroundStep: async (event, run) => {
          if (event.step !== "awaitWave") return run();
          waits.push(structuredClone(event));
          const out = await run();
          // The first judging wait: its send done (written and published), then its Lambda fails.
          if (judging(event) && !failed) {
            failed = true;
            throw Object.assign(new Error("injected after the send"), { name: error });
          }
          return out;
        },
      });
      try {
        const { taskId, task } = await twoWavesToTheEnd(h, P);
        expect(task.status).toBe("COMPLETED");
        // The second wave's update went out again under its one request id (unless its result was
        // in before the retry: then not again, and the retry woke its own wait); its BMC flashed once.
        expect(new Set(published).size).toBe(2);
        expect(published.filter((r) => r === published[0])).toHaveLength(1);
        expect(published.length).toBeLessThanOrEqual(3);
        expect(h.fleet.stats().flashes).toBe(2);
        expect(waits.map(judging)).toEqual([false, true, true, true]);
        const [, tried, retried] = waits as [AwaitEvent, AwaitEvent, AwaitEvent];
        expect(retried.token).not.toBe(tried.token);
        expect(retried.wave).toEqual(tried.wave);
        const store = new DynamoCommandSetStore(DynamoDBDocumentClient.from(h.client), h.names.tasks);
        const set = await store.get(taskId, "u", 0);
        expect(set?.wake?.token).toBe(retried.token);
        expect((set?.wake?.resume as WaveState | undefined)?.cursor).toMatchObject({ wave: 1 });
        expect(h.child.executor.stats().byStep.checkWave).toBeUndefined();
      } finally {
        await h.close();
      }
    });
  }
});

describe("a judging wait that timed out, its next step sent and its BMC silent", () => {
  const P = "c5200000";
  let h: Harness;
  let now = Date.now();
  const timers = movedTimers();
  const HEARTBEAT_MS = 60_000;
  const updates: { to: BmcAddress; command: UpdateCommand }[] = [];
  const entered: { name: string; input: unknown }[] = [];
  beforeAll(async () => {
    h = await startHarness({
      label: "ctjt",
      racks: [rack(P, 1, [{ type: "COMPUTE", count: 2 }])],
      fleet,
      clock: () => now,
      callbackClock: timers,
      awaitTimeoutOverrideMs: HEARTBEAT_MS,
      onStateEntered: (_, state) => entered.push(structuredClone(state)),
      // The updates are held back from the fleet (which answers the preflight): the test is their BMC.
      wrapPublisher: (inner) => ({
        async publish(to: BmcAddress, command: BmcCommand) {
          if (command.type === "update") updates.push({ to, command });
          else await inner.publish(to, command);
        },
      }),
    });
    expect(await h.stores.policy.putRuleVersion(TWO_WAVES)).toBe("written");
  });
  afterAll(async () => {
    await h?.close();
  });

  it("CheckWave judges the step again and goes on with the next as sent, from its commands' deadline: the silent BMC fails at that deadline", async () => {
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(
      upgradeRequest([id(P, 1, 0)], { ruleId: TWO_WAVES.id }),
    );
    const taskId = taskIds[0] as string;
    const first = await until("the first wave's update", () => updates[0]);
    await until("its wait's timers", () => timers.armed().includes(HEARTBEAT_MS));
    // The first BMC answers: the wait is woken, and the next AwaitWave judges it and sends the second.
    await h.broker.publish(
      bmcEvtTopic(first.to),
      encodeBmcMessage({
        v: 1,
        type: "result",
        requestId: first.command.requestId,
        ok: true,
        version: first.command.targetVersion,
      } as never),
    );
    const second = await until("the second wave's update", () => updates[1]);
    await until("the judging wait's timers", () =>
      h.child.executor.stats().stepsRunning === 0 && timers.armed().includes(HEARTBEAT_MS) ? true : undefined,
    );
    const store = new DynamoCommandSetStore(DynamoDBDocumentClient.from(h.client), h.names.tasks);
    const stored = (await store.get(taskId, "u", 0))?.entries[
      entryKey(updateAddress(taskId, 0, 0), second.to.componentId)
    ];
    if (stored === undefined) throw new Error("the second wave's command is not stored");
    // Its BMC says nothing; 1,000 s on, the wait's heartbeat runs out: CheckWave.
    now += 1_000_000;
    const checked = entered.length;
    timers.advance(HEARTBEAT_MS);
    const after = await until("the check's next AwaitWave", () =>
      entered.slice(checked).find((s, i, all) => s.name === "AwaitWave" && all[i - 2]?.name === "CheckWave"),
    );
    const wave = (after.input as { plan: { wave: WaveState; cursor: { wave: number } } }).plan;
    // The second wave as sent (no `unsent`: nothing is sent again), its deadline its command's,
    // not the check's clock + the step's timeout, the wait's timeout until then.
    expect(wave.cursor.wave).toBe(1);
    expect(wave.wave.unsent).toBeUndefined();
    expect(wave.wave.deadline).toBe(stored.deadline);
    expect(wave.wave.awaitTimeoutSeconds).toBe(Math.ceil((stored.deadline - now) / 1000));
    await until("the second wait's timers", () =>
      h.child.executor.stats().stepsRunning === 0 && timers.armed().includes(HEARTBEAT_MS) ? true : undefined,
    );
    // Just past that deadline, the next check fails the silent BMC.
    now = stored.deadline + 1_000;
    timers.advance(HEARTBEAT_MS);
    const task = await waitForTask(h, taskId);
    await h.child.idle();
    expect(task.status).toBe("FAILED");
    const component = parseReport(task.report).components.find((c) => c.id === second.to.componentId);
    expect(component?.error?.name).toBe("BmcUnreachable");
    // Each update out once: the check took the second as sent.
    expect(updates.map((u) => u.command.requestId)).toEqual([
      first.command.requestId,
      second.command.requestId,
    ]);
  });
});
