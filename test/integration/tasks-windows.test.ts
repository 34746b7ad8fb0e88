/**
 * A plain UpgradeFirmware task's maintenance window, on the local child-task machinery (the real
 * ASL on aws-local-stepfunctions, the simulated fleet) with an injected clock: WAITING until its
 * start_time, FAILED when not started by its end_time, and a task already running when end_time
 * passes runs to its end. Time moves only when the test moves it; progress is observed through
 * step counters and task states, never by sleeping.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_START_DELAY_MS } from "../../src/app/child-task/task-service.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import { TestClock } from "../support/fake-submitter.js";
import {
  type Harness,
  HEALTHY_FLEET_SETTINGS,
  id,
  queriesOf,
  rack,
  runOnRack,
  startHarness,
  until,
  upgradeRequest,
  waitForTask,
} from "./child-task-harness.js";

const P = "ac000000";
const racks: InventoryRack[] = [1, 2, 3, 4, 5].map((n) => rack(P, n, [{ type: "COMPUTE", count: 1 }]));
const clock = new TestClock(Date.parse("2026-11-20T08:00:00Z"));
const HOUR = 3_600_000;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    label: "twin",
    racks,
    settings: HEALTHY_FLEET_SETTINGS,
    // Rack 3 flashes for 1.5 s (real time): long enough to move the clock past its end_time mid-flash.
    fleet: {
      defaults: { outcome: "succeed", updateMs: 40 },
      racks: { [id(P, 3, 0)]: { outcome: "succeed", updateMs: 1_500 } },
      components: {},
    },
    clock: clock.read,
  });
});
afterAll(async () => {
  await h?.close();
});

const steps = (name: string) => h.child.executor.stats().byStep[name] ?? 0;

describe("UpgradeFirmware with a maintenance window", () => {
  it("start_time ahead: WAITING 'waiting for maintenance window: opens at …', no lock, no BMC command; then it runs", async () => {
    await h.child.idle();
    const start = clock.now + HOUR;
    const polled = steps("acquireLock");
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(
      upgradeRequest([id(P, 1, 0)], { startTime: start, endTime: start + HOUR }),
    );
    const waiting = (await h.child.tasksApi.getTasks(taskIds))[0];
    expect(waiting).toMatchObject({
      status: "WAITING",
      message: "waiting for maintenance window: opens at 2026-11-20T09:00:00Z",
      startTime: start,
      endTime: start + HOUR,
    });
    expect(await h.stores.locks.get(id(P, 1, 0))).toBeUndefined();
    // Three AcquireLocks: the first two found the start ahead and sent the task back to wait.
    await until("three AcquireLock polls", () => steps("acquireLock") >= polled + 3);
    // No BMC was asked anything while the task waited.
    expect(await queriesOf(h, taskIds[0]!)).toBeUndefined();
    expect((await h.child.tasksApi.getTasks(taskIds))[0]?.status).toBe("WAITING");
    clock.now = start;
    const done = await waitForTask(h, taskIds[0]!);
    expect(done).toMatchObject({ status: "COMPLETED", startedAt: start });
  });

  it("not started by end_time (a queued task behind a busy rack): FAILED 'maintenance window closed before the task started'", async () => {
    await h.stores.locks.acquire(id(P, 2, 0), "someone-else", 10 * HOUR, clock.now);
    const end = clock.now + HOUR;
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(
      upgradeRequest([id(P, 2, 0)], {
        endTime: end,
        queueOptions: { conflictStrategy: "QUEUE", queueTimeoutSeconds: 3 * 3600 },
      }),
    );
    const polled = steps("acquireLock");
    await until("two AcquireLock polls", () => steps("acquireLock") >= polled + 2);
    expect((await h.child.tasksApi.getTasks(taskIds))[0]?.status).toBe("WAITING");
    clock.now = end;
    const failed = await waitForTask(h, taskIds[0]!);
    expect(failed).toMatchObject({
      status: "FAILED",
      message: "maintenance window closed before the task started",
    });
    expect(await h.stores.locks.get(id(P, 2, 0))).toMatchObject({ owner: "someone-else" });
    await h.stores.locks.release(id(P, 2, 0), "someone-else");
  });

  it("a task already running when end_time passes runs to its end", async () => {
    const end = clock.now + 1_000;
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(
      upgradeRequest([id(P, 3, 0)], { endTime: end }),
    );
    const running = await waitForTask(h, taskIds[0]!, (t) => t.status === "RUNNING");
    // The preflight's check sends the first wave; AwaitWave then waits for it.
    const waits = steps("awaitWave");
    await until("the update wave to be sent", () => steps("awaitWave") > waits);
    // Past end_time while the BMC flashes (but well within the update timeout).
    clock.now = end + 500;
    const done = await waitForTask(h, taskIds[0]!);
    expect(done).toMatchObject({ status: "COMPLETED", startedAt: running.startedAt });
    expect(done.finishedAt).toBeGreaterThan(end);
  });

  it("a run's child carries no window: claimed in time, it runs even with the run's end_time past", async () => {
    // The run's template, as the dispatcher hands it over; the run's window bounded the claim.
    // The run and its target exist: the child keeps the rack's prior versions on that target.
    const target = await runOnRack(h, "ac000000-2222-4000-8000-000000000005", racks[4] as InventoryRack);
    const template = { ...upgradeRequest([]), startTime: clock.now + HOUR, endTime: clock.now - 1 };
    const outcome = await h.child.submitter.submit(
      {
        idempotencyKey: `operation-run-target:${target.id}`,
        runId: target.runId,
        targetId: target.id,
        rackId: id(P, 5, 0),
        componentsByType: [{ type: "COMPUTE", componentIds: [id(P, 5, 1)] }],
        template: { ...template, targetSpec: undefined },
      },
      clock.now,
    );
    if (outcome.kind !== "submitted") throw new Error(`not submitted: ${JSON.stringify(outcome)}`);
    const done = await waitForTask(h, outcome.taskId);
    expect(done).toMatchObject({ status: "COMPLETED" });
    expect(done.startTime).toBeUndefined();
    expect(done.endTime).toBeUndefined();
  });

  it("is validated: end_time already past, end not after start, start more than 5 h ahead", async () => {
    const request = (extra: Record<string, unknown>) => upgradeRequest([id(P, 4, 0)], extra);
    await expect(h.child.tasksApi.upgradeFirmware(request({ endTime: clock.now }))).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: "end_time: maintenance window already closed",
    });
    await expect(
      h.child.tasksApi.upgradeFirmware(request({ startTime: clock.now + HOUR, endTime: clock.now + HOUR })),
    ).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: "end_time: end_time must be after start_time",
    });
    await expect(
      h.child.tasksApi.upgradeFirmware(request({ startTime: clock.now + MAX_START_DELAY_MS + 1 })),
    ).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message:
        "start_time: must be at most 5h0m0s from now: a task waits for its start inside its child-task execution, whose timeout bounds the wait",
    });
  });
});
