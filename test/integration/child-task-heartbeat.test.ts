/**
 * AwaitWave's heartbeat through the real ASL: a wave whose BMC keeps reporting (an acknowledgement,
 * progress) stays in AwaitWave past its heartbeat interval, because the receiver sends the wait a
 * heartbeat with the reports it stores, and its one check follows the wake-up; reports stored in
 * one heartbeat interval, in batches of their own, send one heartbeat (none in the wait's own
 * first interval: its start was heard first); a wave heard from for no
 * interval times out into an early check, as the net under a lost wake-up.
 *
 * Real parts: moto, the broker, the IoT rule stand-in and the receiver, the local executor on the
 * one definition file. The BMC is the test: its update command is held back from the simulated
 * fleet (which answers the preflight's queries) and the test publishes the reports on the BMC's
 * topic. Time is the test's: the steps' and the receiver's clock, and the executor's callback
 * timers (movedTimers), so nothing here waits on the wall clock; each step waits for an observable
 * event (a command out, the wait's timers armed, a heartbeat counted).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BmcCommand, encodeBmcMessage, type UpdateCommand } from "../../src/domain/bmc-protocol.js";
import type { BmcAddress } from "../../src/domain/bmc-topics.js";
import { bmcEvtTopic } from "../../src/domain/bmc-topics.js";
import { movedTimers } from "../support/moved-timers.js";
import {
  computeUpdateRule,
  type Harness,
  id,
  rack,
  SUCCEEDING_FLEET,
  startHarness,
  until,
  upgradeRequest,
  waitForTask,
} from "./child-task-harness.js";

const P = "c3400000";
const racks = [
  ...[1, 2].map((n) => rack(P, n, [{ type: "COMPUTE" as const, count: 1 }])),
  rack(P, 3, [{ type: "COMPUTE" as const, count: 2 }]),
];
const fleet = SUCCEEDING_FLEET;
/** The update alone: one step, so the wave's wait and check are the task's only ones. */
const UPDATE_ONLY = computeUpdateRule("cb000000-0000-4000-8000-0000000000b7", "update-only");
/** The update of two components in one wave. */
const UPDATE_PAIR = computeUpdateRule("cb000000-0000-4000-8000-0000000000b8", "update-pair", 2);
/** The heartbeat interval: the executor's override of the wave's awaitSeconds, on the moved timers. */
const HEARTBEAT_MS = 60_000;

let h: Harness;
let now = Date.now();
const timers = movedTimers();
/** Update commands held back from the fleet: the test is their BMC. */
const updates: { to: BmcAddress; command: UpdateCommand }[] = [];

beforeAll(async () => {
  h = await startHarness({
    label: "cthb",
    racks,
    fleet,
    clock: () => now,
    callbackClock: timers,
    awaitTimeoutOverrideMs: HEARTBEAT_MS,
    wrapPublisher: (inner) => ({
      async publish(to: BmcAddress, command: BmcCommand) {
        if (command.type === "update") updates.push({ to, command });
        else await inner.publish(to, command);
      },
    }),
  });
  expect(await h.stores.policy.putRuleVersion(UPDATE_ONLY)).toBe("written");
  expect(await h.stores.policy.putRuleVersion(UPDATE_PAIR)).toBe("written");
});
afterAll(async () => {
  await h?.close();
});

/** Publishes a report as the update's BMC would, on its topic. */
async function report(update: { to: BmcAddress; command: UpdateCommand }, event: Record<string, unknown>) {
  const message = { v: 1, requestId: update.command.requestId, ...event };
  await h.broker.publish(bmcEvtTopic(update.to), encodeBmcMessage(message as never));
}

/**
 * Ten seconds on, each update's BMC reports success: the task completes; resolves with the
 * executor's figures once its steps are idle.
 */
async function completedBy(done: { command: UpdateCommand; to: BmcAddress }[], taskId: string) {
  now += 10_000;
  for (const u of done) await report(u, { type: "result", ok: true, version: u.command.targetVersion });
  const task = await waitForTask(h, taskId);
  await h.child.idle();
  expect(task.status).toBe("COMPLETED");
  return h.child.executor.stats();
}

/** Starts a task on rack `n`; resolves with its update once AwaitWave waits for it (both timers armed). */
async function waitingUpdate(n: number) {
  const sent = updates.length;
  const { taskIds } = await h.child.tasksApi.upgradeFirmware(
    upgradeRequest([id(P, n, 0)], { ruleId: UPDATE_ONLY.id }),
  );
  const update = await until("the update command", () => updates[sent]);
  // AwaitWave's heartbeat interval and its timeout (the step's deadline, an hour away).
  await until("AwaitWave's timers", () => timers.armed().includes(HEARTBEAT_MS));
  return { taskId: taskIds[0] as string, update };
}

describe("child task: a wave its BMC keeps reporting on waits for its wake-up (AwaitWave's heartbeat)", () => {
  it("an acknowledgement and progress keep the wait alive past its heartbeat interval; the result wakes it: one check", async () => {
    h.child.executor.resetStats();
    const { taskId, update } = await waitingUpdate(1);
    timers.advance(HEARTBEAT_MS / 2);
    // The ack in a heartbeat interval after the wait's own (a BMC slow to take the command).
    now += 60_000;
    await report(update, { type: "ack" });
    await until("the ack's heartbeat", () => h.child.executor.stats().heartbeats === 1);
    // Past the interval the wait started with: kept alive, no timeout fired.
    timers.advance(HEARTBEAT_MS * 0.75);
    expect(h.child.executor.stats().callbacks.timedOut).toBe(0);
    // Progress a while after the ack (the receiver writes it: FIRST_PROGRESS_AFTER_ACK_MS).
    now += 10_000;
    await report(update, { type: "progress", percent: 50 });
    await until("the progress's heartbeat", () => h.child.executor.stats().heartbeats === 2);
    timers.advance(HEARTBEAT_MS * 0.75);
    expect(h.child.executor.stats().callbacks.timedOut).toBe(0);
    const stats = await completedBy([update], taskId);
    // The preflight's wait and the wave's, both woken, and the wave's judge (the task's last
    // step: it records the outcome and ends its own wait, OutcomeRecorded); no CheckWave.
    expect(stats.callbacks).toEqual({ woken: 2, timedOut: 0, failed: 1 });
    expect([stats.byStep.awaitWave, stats.byStep.checkWave]).toEqual([2, undefined]);
  });

  it("two BMCs' acknowledgements in the wait's own heartbeat interval send none; their progress, in batches of their own in the next interval, sends one", async () => {
    h.child.executor.resetStats();
    const sent = updates.length;
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(
      upgradeRequest([id(P, 3, 0)], { ruleId: UPDATE_PAIR.id }),
    );
    const [u1, u2] = await until("both update commands", () =>
      updates.length >= sent + 2 ? [updates[sent], updates[sent + 1]] : undefined,
    );
    if (u1 === undefined || u2 === undefined) throw new Error("no update commands");
    await until("AwaitWave's timers", () => timers.armed().includes(HEARTBEAT_MS));
    // Both in the minute the wait started in (an interval is a minute at most): the receiver's
    // clock stays put, and the wait's start was heard first in it.
    const recorded = () => h.child.reportStats().recorded;
    const before = recorded();
    await report(u1, { type: "ack" });
    await until("the first acknowledgement stored", () => recorded() === before + 1);
    await report(u2, { type: "ack" });
    await until("the second acknowledgement stored, in a batch of its own", () => recorded() === before + 2);
    expect(h.child.executor.stats().heartbeats).toBe(0);
    now += 60_000;
    await report(u1, { type: "progress", percent: 50 });
    await until("the next interval's heartbeat", () => h.child.executor.stats().heartbeats === 1);
    await report(u2, { type: "progress", percent: 50 });
    await until("the second progress stored, in a batch of its own", () => recorded() === before + 4);
    expect(h.child.executor.stats().heartbeats).toBe(1);
    const stats = await completedBy([u1, u2], taskIds[0] as string);
    expect(stats.callbacks).toEqual({ woken: 2, timedOut: 0, failed: 1 });
    expect([stats.heartbeats, stats.byStep.awaitWave, stats.byStep.checkWave]).toEqual([1, 2, undefined]);
  });

  it("a wave heard from for no heartbeat interval times out into an early check, then waits again and is woken", async () => {
    h.child.executor.resetStats();
    const { taskId, update } = await waitingUpdate(2);
    timers.advance(HEARTBEAT_MS);
    expect(h.child.executor.stats().callbacks.timedOut).toBe(1);
    // The check finds the update pending (its deadline an hour away) and waits again.
    await until("the check and the second wait", () => h.child.executor.stats().byStep.awaitWave === 2);
    expect(h.child.executor.stats().byStep.checkWave).toBe(1);
    const stats = await completedBy([update], taskId);
    // The second wait is woken with the wave (its resume), and judges it in a third: one check.
    expect(stats.callbacks).toEqual({ woken: 2, timedOut: 1, failed: 1 });
    expect([stats.byStep.awaitWave, stats.byStep.checkWave]).toEqual([3, 1]);
    expect(stats.heartbeats).toBe(0);
  });
});
