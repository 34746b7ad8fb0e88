/**
 * The refill path under wake-ups on DynamoDB (moto): three dispatchers (three processes, each
 * with its own memory of the run's phase), every child task's ending waking all three, tasks of
 * seeded random lengths. However the passes interleave, the run's max_concurrent_targets is never
 * exceeded (counted where it matters: child tasks running at once), it is reached, and every
 * target is started once and counted once.
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DynamoStores } from "../../src/adapters/dynamodb/index.js";
import { systemClock } from "../../src/adapters/system-clock.js";
import { recordTaskOutcome } from "../../src/app/child-task/outcome.js";
import { createTaskService } from "../../src/app/child-task/task-service.js";
import { createDispatcher, type Dispatcher } from "../../src/app/dispatcher.js";
import type { RunWaker, TaskExecutor } from "../../src/app/ports.js";
import type { Task } from "../../src/domain/task.js";
import { runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { everyImage } from "../support/memory-images.js";
import { freshStores } from "../support/moto.js";
import { testRandom } from "../support/seeded-random.js";
import { testEndpoint } from "../support/test-endpoint.js";

let drop: () => Promise<void>;
let stores: DynamoStores;

beforeAll(async () => {
  ({ stores, drop } = await freshStores(testEndpoint(), "refill"));
});
afterAll(() => drop());

const unused = () => {
  throw new Error("not used by this test");
};

describe("the refill path under wake-ups", () => {
  it("3 dispatchers woken by every ending, 24 targets, limit 4: never more than 4 tasks at once, 4 reached, each target started and counted once", async () => {
    const random = testRandom();
    const { run, targets } = runWithTargets(uuid(1, "ef000000"), { phaseSizes: [24], maxConcurrent: 4 });
    await stores.runs.createRun(run, targets);

    let running = 0;
    let most = 0;
    const starts = new Map<string, number>();
    // Every pass, tick and ending this test sets off, awaited before it ends (the tables go after).
    const work = new Set<Promise<unknown>>();
    const track = (p: Promise<unknown>) => {
      work.add(p);
      void p.catch(() => undefined).finally(() => work.delete(p));
    };
    const dispatchers: Dispatcher[] = [];
    let finished: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (finished = resolve));
    const waker: RunWaker = {
      async wake(runId) {
        for (const d of dispatchers)
          track(d.dispatchRun(runId).then((r) => r.decision === "finished" && finished()));
      },
    };
    // No task ends before 4 run at once (so the limit is reached, not by luck of timing); from then
    // on each ends after a random few milliseconds.
    let openGate: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const outcome = {
      tasks: stores.tasks,
      runs: stores.runs,
      locks: stores.locks,
      // These tasks flash nothing: no update set, no versions.
      commands: {
        get: async () => undefined,
        getUpdates: async () => undefined,
        getMany: async () => new Map(),
        close: async () => {},
      },
      firmware: { record: async () => {} },
      clock: Date.now,
      waker,
    };
    const executor: TaskExecutor = {
      async start(task: Task) {
        starts.set(task.id, (starts.get(task.id) ?? 0) + 1);
        if (starts.get(task.id)! > 1) return { executionId: task.id };
        running++;
        most = Math.max(most, running);
        if (running === 4) openGate();
        const ms = random.int(40);
        track(
          gate
            .then(() => new Promise((resolve) => setTimeout(resolve, ms)))
            .then(() => {
              running--;
              return recordTaskOutcome(outcome, task.id, { status: "COMPLETED", message: "done" });
            }),
        );
        return { executionId: task.id };
      },
      async stop() {},
    };
    const service = createTaskService({
      images: everyImage,
      ...outcome,
      inventory: { getRacksByIds: async () => [] } as never,
      secrets: { put: unused, get: unused },
      executor,
      newId: unused,
    });
    for (let i = 0; i < 3; i++)
      dispatchers.push(
        createDispatcher({ runs: stores.runs, submitter: service.submitter, clock: systemClock }),
      );
    // The tick as the safety net the product has; the wake-ups do the refilling.
    const ticker = setInterval(() => track(dispatchers[0]!.tick()), 1000);
    try {
      track(dispatchers[0]!.dispatchRun(run.id));
      await done;
    } finally {
      clearInterval(ticker);
      while (work.size > 0) await Promise.allSettled([...work]);
    }

    expect(most).toBe(4);
    expect([...starts.values()]).toEqual(Array.from({ length: 24 }, () => 1));
    expect(await stores.runs.getRun(run.id)).toMatchObject({
      status: "COMPLETED",
      inFlight: 0,
      counters: [{ completed: 24, failed: 0, terminated: 0, skipped: 0 }],
    });
  });
});
