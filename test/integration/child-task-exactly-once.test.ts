/**
 * No double flash: with StartExecution retried, a submission retried after a crash, concurrent
 * duplicate submissions, a step retried after it published, and duplicate and late BMC reports,
 * every component receives each update command exactly once per task (counted by the simulator).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoCommandSetStore } from "../../src/adapters/dynamodb/command-set-store.js";
import { DynamoFirmwareRecorder } from "../../src/adapters/dynamodb/firmware-version-recorder.js";
import { DynamoTaskSecretStore } from "../../src/adapters/dynamodb/task-secret-store.js";
import type { StepEvent, WaveState } from "../../src/app/child-task/settings.js";
import { createTaskService, taskIdForKey } from "../../src/app/child-task/task-service.js";
import type { TaskExecutor } from "../../src/app/ports.js";
import { targetIdempotencyKey } from "../../src/app/ports.js";
import { encodeBmcMessage, updateRequestId } from "../../src/domain/bmc-protocol.js";
import { decodeBmcEvent } from "../../src/domain/bmc-protocol-decode.js";
import { BMC_EVT_TOPIC_FILTER, parseBmcTopic } from "../../src/domain/bmc-topics.js";
import { parseCommandRequestId } from "../../src/domain/command-sets.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { ComponentsForType } from "../../src/domain/model.js";
import { freezeComponents } from "../../src/domain/planner.js";
import type { Task } from "../../src/domain/task.js";
import { initialReport, parseReport, serializeReport } from "../../src/domain/task-report.js";
import { updatePartOf } from "../support/domain-fixtures.js";
import { runWithTargets } from "../support/dynamodb-fixtures.js";
import { everyImage } from "../support/memory-images.js";
import {
  FAST_SETTINGS,
  fleetCaughtUp,
  type Harness,
  HEALTHY_FLEET_SETTINGS,
  rack,
  startHarness,
  until,
  waitForTask,
} from "./child-task-harness.js";

const P = "e1000000";
const SHAPE = [
  { type: "COMPUTE" as const, count: 3 },
  { type: "NVSWITCH" as const, count: 1 },
  { type: "POWERSHELF" as const, count: 1 },
];
const racks: InventoryRack[] = [1, 2, 3].map((n) => rack(P, n, SHAPE));
const woken: string[] = [];

/** How long the test waits for its three tasks to end: what its own 60 s limit leaves. */
const TASKS_MS = 45_000;

let h: Harness;
/** First results whose duplicate and late report have both been handled by the IoT rule stand-in. */
let lateReports = 0;
beforeAll(async () => {
  h = await startHarness({
    label: "cte",
    racks,
    fleet: { defaults: { outcome: "succeed", updateMs: 40 }, racks: {}, components: {} },
    // No BMC here hangs, so no BMC timeout may end a wave.
    settings: HEALTHY_FLEET_SETTINGS,
    waker: { wake: async (runId) => void woken.push(runId) },
  });
  // Every first result a BMC publishes is followed by a duplicate and, once the first is stored,
  // by a LATE contradicting result for the same request (a confused BMC, or a redelivery). Late
  // means after the first was stored: two results racing through the queue (concurrent batches,
  // as SQS's are) are stored in whichever order they land, and the first stored wins.
  const sets = new DynamoCommandSetStore(h.stores.doc, h.names.tasks);
  const seen = new Set<string>();
  await h.broker.subscribe(BMC_EVT_TOPIC_FILTER, async (topic, payload) => {
    const decoded = decodeBmcEvent(payload);
    const where = parseBmcTopic(topic);
    if (!decoded.ok || decoded.value.type !== "result" || where === undefined) return;
    if (seen.has(decoded.value.requestId)) return;
    seen.add(decoded.value.requestId);
    await h.broker.publish(topic, payload);
    const address = parseCommandRequestId(decoded.value.requestId);
    if (address === undefined) throw new Error(`not a command's request id: ${decoded.value.requestId}`);
    await until(
      `the first result of ${decoded.value.requestId} stored`,
      async () =>
        (await sets.get(address.taskId, address.family, address.part))?.entries[address.entry]?.result !==
        undefined,
    );
    await h.broker.publish(
      topic,
      encodeBmcMessage({
        v: 1,
        type: "result",
        requestId: decoded.value.requestId,
        ok: false,
        version: "0.0.1",
        error: { code: "LATE", message: "a late contradicting report" },
      }),
    );
    lateReports += 1;
  });
});
afterAll(async () => {
  await h?.close();
});

function byType(r: InventoryRack): ComponentsForType[] {
  return freezeComponents(r.components);
}

async function runAndTargets() {
  const runId = "e2000000-0000-4000-8000-000000000001";
  const { run, targets } = runWithTargets(runId, { phaseSizes: [3], status: "RUNNING", maxConcurrent: 3 });
  targets.forEach((t, i) => {
    t.rackId = racks[i]!.id;
    t.componentsByType = byType(racks[i]!);
  });
  await h.stores.runs.createRun(run, targets);
  const now = Date.now();
  for (const t of targets) expect(await h.stores.runs.claimTarget(t, 30_000, now)).toBe("claimed");
  return { run, targets };
}

/** An executor whose first start() "crashes" (throws before Step Functions was reached). */
function crashingOnce(inner: TaskExecutor): TaskExecutor & { crashes: number } {
  const wrapper = {
    crashes: 0,
    async start(task: Task) {
      if (wrapper.crashes === 0) {
        wrapper.crashes += 1;
        throw new Error("dispatcher crashed before StartExecution returned");
      }
      return inner.start(task);
    },
    stop: (executionId: string, cause: string) => inner.stop(executionId, cause),
    executionIdFor: (taskId: string) => h.child.executor.executionIdFor(taskId),
  };
  return wrapper;
}

describe("child task: exactly one update command per component per task", () => {
  it("retried submissions, a retried StartExecution, a re-run step and duplicate/late reports flash each component once", async () => {
    const { run, targets } = await runAndTargets();
    const [t1, t2, t3] = targets as [(typeof targets)[0], (typeof targets)[0], (typeof targets)[0]];
    const template = run.config.operation.firmware;
    const request = (t: typeof t1) => ({
      idempotencyKey: targetIdempotencyKey(t.id),
      runId: run.id,
      targetId: t.id,
      rackId: t.rackId,
      componentsByType: t.componentsByType,
      template,
    });
    const startsBefore = h.child.executor.stats().started;

    // t1: the first submission crashes after taking the lock and creating the task, before its
    // execution started; the retry (a later dispatcher pass) must find the same task and start it.
    const crashing = crashingOnce(h.child.executor);
    const service = createTaskService({
      images: everyImage,
      tasks: h.stores.tasks,
      runs: h.stores.runs,
      locks: h.stores.locks,
      inventory: h.stores.inventory,
      secrets: new DynamoTaskSecretStore(h.stores.doc, h.names.tasks, h.cipher),
      commands: new DynamoCommandSetStore(h.stores.doc, h.names.tasks),
      firmware: new DynamoFirmwareRecorder(h.stores.doc, h.names.inventory),
      executor: crashing,
      clock: Date.now,
      newId: () => {
        throw new Error("run children never use a random id");
      },
    });
    await expect(service.submitter.submit(request(t1), Date.now())).rejects.toThrow("dispatcher crashed");
    expect(await h.stores.locks.get(t1.rackId)).toMatchObject({
      owner: taskIdForKey(targetIdempotencyKey(t1.id)),
    });
    const retried = await service.submitter.submit(request(t1), Date.now());
    expect(retried).toEqual({ kind: "submitted", taskId: taskIdForKey(targetIdempotencyKey(t1.id)) });

    // t2: two dispatchers submit the same target at once.
    const [a, b] = await Promise.all([
      h.child.submitter.submit(request(t2), Date.now()),
      h.child.submitter.submit(request(t2), Date.now()),
    ]);
    expect(a).toEqual(b);

    // t3: submitted once, then StartExecution is retried directly while it runs.
    const s3 = await h.child.submitter.submit(request(t3), Date.now());
    if (s3.kind !== "submitted") throw new Error(JSON.stringify(s3));
    const [task3] = await h.stores.tasks.getTasks([s3.taskId]);
    const first = await h.child.executor.start(task3!);
    const again = await h.child.executor.start(task3!);
    expect(again).toEqual(first);

    const taskIds = [retried, a, s3].map((s) => (s as { taskId: string }).taskId);
    // Their end, however long a loaded machine takes within the test's own 60 s: the three tasks'
    // ~160 state transitions take 3-5 s quiet and 5-14 s at load 12-16 with the test at nice 19,
    // past waitForTask's 20 s in heavier stretches (a task still in its third stage at 20 s).
    const done = await Promise.all(taskIds.map((tid) => waitForTask(h, tid, undefined, TASKS_MS)));
    expect(done.map((t) => t.status)).toEqual(["COMPLETED", "COMPLETED", "COMPLETED"]);
    await h.child.idle();
    expect(h.child.executor.stats().started - startsBefore).toBe(3);

    // A finished task's submission is answered from the idempotency key: nothing restarts.
    expect(await h.child.submitter.submit(request(t1), Date.now())).toEqual(retried);

    // A SendWave invoked twice (Step Functions retrying after a Lambda error, when the first
    // invocation had in fact published) sends the unanswered commands again under the same
    // request ids, and each BMC flashes once. A fresh task on rack 1, driven by hand: no
    // execution, just the step, twice.
    const manual: Task = {
      ...(await h.stores.tasks.getTasks([taskIds[0]!]))[0]!,
      id: "e3000000-0000-4000-8000-000000000001",
      status: "RUNNING",
      report: serializeReport(
        initialReport(
          racks[0]!.components.map((c) => ({ id: c.id, type: c.type })),
          "3.0.0",
          false,
        ),
      ),
    };
    delete manual.idempotencyKey;
    delete manual.runId;
    delete manual.targetId;
    expect((await h.stores.tasks.createTask(manual)).created).toBe(true);
    const groups = [
      {
        stage: 2,
        name: "compute",
        componentIds: racks[0]!.components.filter((c) => c.type === "COMPUTE").map((c) => c.id),
        maxParallel: FAST_SETTINGS.maxParallel ?? 4,
        steps: [{ action: "UPDATE_FIRMWARE" as const, timeoutSeconds: 0, sleepSeconds: 0 }],
      },
    ];
    const wave: StepEvent = {
      step: "sendWave",
      taskId: manual.id,
      rackId: manual.rackId,
      settings: { ...(FAST_SETTINGS as Required<typeof FAST_SETTINGS>) },
      groups,
      cursor: { group: 0, wave: 0, step: 0, attempt: 0, more: true, retry: false, waitSeconds: 0 },
    };
    const firstSend = (await h.child.steps.handle(wave)) as WaveState;
    const secondSend = (await h.child.steps.handle(wave)) as WaveState;
    expect(secondSend.deadline).toBe(firstSend.deadline);
    expect(firstSend.componentIds).toEqual(groups[0]!.componentIds);
    await fleetCaughtUp(h, groups[0]!.componentIds);
    for (const componentId of groups[0]!.componentIds) {
      // Received once or twice: the second send skips a component whose answer was stored between
      // the two sends (on a loaded machine the fleet answers that fast), and sends the rest again
      // under the same request id. Whichever, each is flashed once (below).
      const received = h.fleet.stats().updatesByRequest[updateRequestId(manual.id, componentId)];
      expect([1, 2], `component ${componentId}`).toContain(received);
    }
    expect(h.fleet.stats().flashesByTask[manual.id]).toBe(groups[0]!.componentIds.length);
    await h.stores.locks.release(manual.rackId, manual.id);

    const stats = h.fleet.stats();
    for (const [i, r] of racks.entries()) {
      for (const component of r.components) {
        // Rack 1's COMPUTE trays also got the hand-driven task's command (once or twice each, above).
        const extra =
          i === 0 && component.type === "COMPUTE"
            ? (stats.updatesByRequest[updateRequestId(manual.id, component.id)] ?? 0)
            : 0;
        expect(stats.updatesByComponent[component.id], `component ${component.id}`).toBe(1 + extra);
        expect(
          stats.updatesByRequest[updateRequestId(taskIds[i]!, component.id, 0, updatePartOf(component.type))],
        ).toBe(1);
      }
      expect(stats.flashesByTask[taskIds[i]!]).toBe(r.components.length);
    }
    // The duplicate and late reports arrived and changed nothing.
    // Reports reach the receiver in batches (the queue's window): wait until it has judged them.
    await until(
      "the duplicate and late reports",
      () => lateReports >= 15 + 3 && h.child.reportStats().ignored >= 30,
    );
    expect(lateReports).toBe(15 + 3); // 15 task components + the hand-driven wave of 3
    expect(h.child.reportStats().ignored).toBeGreaterThanOrEqual(30);
    for (const t of done) {
      expect(
        parseReport(t.report).components.every((x) => x.status === "COMPLETED" && x.versionAfter === "2.0.0"),
      ).toBe(true);
    }

    // Each target recorded exactly once; the run's counters moved by three; slots freed.
    const after = await h.stores.runs.getRun(run.id);
    expect(after?.counters[0]).toEqual({ completed: 3, failed: 0, terminated: 0, skipped: 0 });
    expect(after?.inFlight).toBe(0);
    for (const t of targets) {
      expect(await h.stores.runs.getTarget(run.id, t.id)).toMatchObject({
        status: "COMPLETED",
        message: "upgraded 5 components to 2.0.0",
      });
      expect(await h.stores.locks.get(t.rackId)).toBeUndefined();
    }
    expect(woken.filter((w) => w === run.id)).toHaveLength(3);
  });
});
