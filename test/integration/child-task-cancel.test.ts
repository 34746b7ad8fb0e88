/**
 * Stopping a running child task: CancelTask, the submitter's cancel (a cancelled run) and an
 * execution stopped underneath (AWS StopExecution / the local abort path) all end the task
 * TERMINATED, record its run target once and release the rack lock.
 */

import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoCommandSetStore } from "../../src/adapters/dynamodb/command-set-store.js";
import { DEFAULT_CHILD_TASK_SETTINGS } from "../../src/app/child-task/settings.js";
import { targetIdempotencyKey } from "../../src/app/ports.js";
import { updateRequestId } from "../../src/domain/bmc-protocol.js";
import { entryKey, updateAddress, updateParts } from "../../src/domain/command-sets.js";
import { queryRequestId } from "../../src/domain/component-verdict.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import { freezeComponents } from "../../src/domain/planner.js";
import { parseReport } from "../../src/domain/task-report.js";
import { updatePartOf } from "../support/domain-fixtures.js";
import { runWithTargets } from "../support/dynamodb-fixtures.js";
import {
  FAST_SETTINGS,
  fleetCaughtUp,
  type Harness,
  id,
  rack,
  startHarness,
  until,
  upgradeRequest,
  waitForTask,
} from "./child-task-harness.js";

const P = "ca000000";
const racks: InventoryRack[] = [1, 2, 3, 4].map((n) => rack(P, n, [{ type: "COMPUTE", count: 2 }]));

let h: Harness;
beforeAll(async () => {
  // Slow flashes (8 s, well inside a 30 s timeout): every task is mid-update when it is stopped.
  h = await startHarness({
    label: "ctc",
    racks,
    fleet: { defaults: { outcome: "succeed", updateMs: 8000 }, racks: {}, components: {} },
    settings: { updateTimeoutSeconds: 30 },
  });
});
afterAll(async () => {
  await h?.close();
});

// As GetTask shows a running task: its report live from its update set, progress included.
const updating = (t: { report: string }) =>
  parseReport(t.report).components.some((c) => c.status === "UPDATING" && (c.progress ?? 0) > 0);

describe("child task: cancel", () => {
  it("CancelTask stops the running execution: TERMINATED, components in flight TERMINATED, lock released, no more commands", async () => {
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(upgradeRequest([id(P, 1, 0)]));
    const taskId = taskIds[0]!;
    await waitForTask(h, taskId, updating);
    // A listing shows it live too (the update sets of running tasks read in one batch).
    const listed = await h.child.tasksApi.listTasks({
      activeOnly: true,
      withReport: true,
      page: { offset: 0, limit: 100 },
    });
    const running = listed.tasks.find((t) => t.id === taskId);
    expect(
      running !== undefined && parseReport(running.report).components.some((c) => c.status === "UPDATING"),
    ).toBe(true);
    const cancelled = await h.child.tasksApi.cancelTask(taskId.toUpperCase());
    expect(cancelled).toMatchObject({ id: taskId, status: "TERMINATED", message: "task cancelled" });
    expect(cancelled.finishedAt).toBeGreaterThan(0);
    expect(parseReport(cancelled.report).components.map((c) => c.status)).toEqual([
      "TERMINATED",
      "TERMINATED",
    ]);
    expect(await h.stores.locks.get(id(P, 1, 0))).toBeUndefined();
    // Nothing of the task runs any more: its execution ended with the cancel, and a step that was
    // in flight has returned. So once the fleet has caught up, it holds all the task will ever
    // send: one preflight query and one update per component, nothing after them.
    expect(h.child.executor.stats().running).toBe(0);
    await until("the stopped task's last step to return", () => h.child.executor.stats().stepsRunning === 0);
    const components = racks[0]!.components.map((c) => c.id);
    await fleetCaughtUp(h, components);
    const fleet = h.fleet.stats();
    for (const { id: c, type } of racks[0]!.components) {
      expect(fleet.doneByRequest[queryRequestId(taskId, c)], c).toBe(1);
      // Each stage's updates in its part of the update set (the request id names it).
      expect(fleet.updatesByRequest[updateRequestId(taskId, c, 0, updatePartOf(type))], c).toBe(1);
      expect(fleet.updatesByComponent[c], c).toBe(1);
    }
    expect((await h.child.tasksApi.getTasks([taskId]))[0]?.status).toBe("TERMINATED");
    // A wave step still in flight when the cancel landed (its Lambda running on after it), here a
    // retry of the wave (new request ids: a BMC would flash again), sends nothing: the cancel
    // closed the task's command sets, and the step reads no task.
    const late = await h.child.steps
      .handle({
        step: "sendWave",
        taskId,
        rackId: id(P, 1, 0),
        settings: { ...DEFAULT_CHILD_TASK_SETTINGS, ...FAST_SETTINGS },
        groups: [
          {
            stage: 0,
            name: "compute",
            componentIds: components,
            maxParallel: 2,
            steps: [{ action: "UPDATE_FIRMWARE", timeoutSeconds: 0, sleepSeconds: 0 }],
            facts: {
              types: Object.fromEntries(components.map((c) => [c, "COMPUTE" as const])),
              versions: Object.fromEntries(components.map((c) => [c, "2.0.0"])),
            },
          },
        ],
        cursor: { group: 0, wave: 0, step: 0, attempt: 1, more: true, retry: true, waitSeconds: 0 },
      })
      .catch((e: unknown) => e);
    expect(late).toMatchObject({ name: "TaskEnded", message: `task ${taskId} already ended` });
    const updates = await new DynamoCommandSetStore(
      DynamoDBDocumentClient.from(h.client),
      h.names.tasks,
    ).getUpdates(taskId, updateParts());
    expect(updates?.closedAt).toBeGreaterThan(0);
    expect(Object.keys(updates?.entries ?? {}).sort()).toEqual(
      components.map((c) => entryKey(updateAddress(taskId, 0), c)).sort(),
    );
    // Cancelling again returns the task unchanged.
    expect(await h.child.tasksApi.cancelTask(taskId)).toEqual((await h.child.tasksApi.getTasks([taskId]))[0]);
  });

  it("an unknown task is NotFound", async () => {
    await expect(h.child.tasksApi.cancelTask("ca000000-0000-4000-8000-999999999999")).rejects.toMatchObject({
      code: "NOT_FOUND",
      message: "task not found: ca000000-0000-4000-8000-999999999999",
    });
  });

  it("the submitter's cancel (a cancelled run) ends the child TERMINATED with the reason and records its target once", async () => {
    const runId = "ca100000-0000-4000-8000-000000000001";
    const { run, targets } = runWithTargets(runId, { phaseSizes: [1], status: "RUNNING" });
    const target = targets[0]!;
    target.rackId = id(P, 2, 0);
    target.componentsByType = freezeComponents(racks[1]!.components);
    await h.stores.runs.createRun(run, targets);
    expect(await h.stores.runs.claimTarget(target, 30_000, Date.now())).toBe("claimed");
    const submitted = await h.child.submitter.submit(
      {
        idempotencyKey: targetIdempotencyKey(target.id),
        runId,
        targetId: target.id,
        rackId: target.rackId,
        componentsByType: target.componentsByType,
        template: run.config.operation.firmware,
      },
      Date.now(),
    );
    if (submitted.kind !== "submitted") throw new Error(JSON.stringify(submitted));
    expect(await h.stores.runs.recordSubmitted(runId, target.id, submitted.taskId, Date.now())).toBe(
      "recorded",
    );
    await waitForTask(h, submitted.taskId, updating);
    await h.child.submitter.cancel(submitted.taskId, "operation run cancelled: maintenance");
    const task = await waitForTask(h, submitted.taskId);
    expect(task).toMatchObject({ status: "TERMINATED", message: "operation run cancelled: maintenance" });
    expect(await h.stores.runs.getTarget(runId, target.id)).toMatchObject({
      status: "TERMINATED",
      message: "operation run cancelled: maintenance",
    });
    const after = await h.stores.runs.getRun(runId);
    expect(after?.counters[0]).toEqual({ completed: 0, failed: 0, terminated: 1, skipped: 0 });
    expect(after?.inFlight).toBe(0);
    expect(await h.stores.locks.get(id(P, 2, 0))).toBeUndefined();
  });

  it("an execution stopped underneath the task (StopExecution) ends it TERMINATED through the abort path", async () => {
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(upgradeRequest([id(P, 3, 0)]));
    const running = await waitForTask(h, taskIds[0]!, updating);
    await h.child.executor.stop(running.executionId, "stopped from the console");
    const task = await waitForTask(h, taskIds[0]!);
    expect(task).toMatchObject({
      status: "TERMINATED",
      message: "task execution stopped: stopped from the console",
    });
    expect(await h.stores.locks.get(id(P, 3, 0))).toBeUndefined();
  });
});
