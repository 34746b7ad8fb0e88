/**
 * Crashes: a dispatcher "killed" at each step of the claim path (the wrapped port does its real
 * work, then throws, as if the process died right after; or throws before, as if it died right
 * before). With a controllable clock, after the claim lease runs out a healthy dispatcher finishes
 * the run, and no target ever gets a second child task.
 */

import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDynamoStores, type DynamoStores } from "../../src/adapters/dynamodb/index.js";
import { createDispatcher } from "../../src/app/dispatcher.js";
import type { ChildTaskSubmitter, RunStore } from "../../src/app/ports.js";
import type { Run } from "../../src/domain/model.js";
import { CLAIM_LEASE_MS } from "../../src/domain/target-machine.js";
import { clockOf } from "../support/clock.js";
import { runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { FakeSubmitter, type RackBehaviour, TestClock } from "../support/fake-submitter.js";
import { freshTables, testClient } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

let client: DynamoDBClient;
let drop: () => Promise<void>;
let stores: DynamoStores;
let seq = 0;

beforeAll(async () => {
  client = testClient(testEndpoint());
  const tables = await freshTables(client, "crash");
  drop = tables.drop;
  stores = createDynamoStores(client, tables.names);
});
afterAll(async () => {
  await drop();
  client.destroy();
});

class Killed extends Error {
  override name = "Killed";
}

type Step = "claimTargets" | "submit" | "recordSubmitted" | "recordBlocked" | "recordOutcome(FAILED)";

/** A RunStore whose `step` method dies once for the first target, after (or before) doing its work. */
function dyingStore(
  runs: RunStore,
  step: Step,
  when: "before" | "after",
  state: { died: boolean },
): RunStore {
  const method = step === "recordOutcome(FAILED)" ? "recordOutcome" : step;
  return new Proxy(runs, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== method || typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        if (state.died) return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        state.died = true;
        if (when === "before") throw new Killed(`killed before ${step}`);
        await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        throw new Killed(`killed after ${step}`);
      };
    },
  });
}

function dyingSubmitter(
  submitter: ChildTaskSubmitter,
  when: "before" | "after",
  state: { died: boolean },
): ChildTaskSubmitter {
  return {
    submit: async (request, now) => {
      if (state.died) return submitter.submit(request, now);
      state.died = true;
      if (when === "before") throw new Killed("killed before submit");
      await submitter.submit(request, now);
      throw new Killed("killed after submit");
    },
    cancel: (taskId, reason) => submitter.cancel(taskId, reason),
  };
}

async function crashScenario(step: Step, when: "before" | "after", behaviour: RackBehaviour) {
  const id = uuid(++seq, "c0000000");
  const { run, targets } = runWithTargets(id, { phaseSizes: [3], maxConcurrent: 2 });
  run.config.conflictRetry = {
    retryTimeoutMs: 3_600_000,
    initialRetryDelayMs: 1_000,
    maxRetryDelayMs: 1_000,
  };
  await stores.runs.createRun(run, targets);
  const clock = new TestClock();
  let conflicts = 0;
  const submitter = new FakeSubmitter({
    runs: stores.runs,
    clock: clock.read,
    behaviour: (rackId) => {
      // A conflict hits only the first submission (the retry succeeds); a rejection is permanent
      // for the first rack, so its retry after the crash is rejected again and recorded.
      if (behaviour.kind === "conflict") return conflicts++ === 0 ? behaviour : { kind: "hang" };
      if (behaviour.kind === "reject") return rackId === targets[0]!.rackId ? behaviour : { kind: "hang" };
      return behaviour;
    },
  });
  const state = { died: false };
  const dying = createDispatcher({
    runs: step === "submit" ? stores.runs : dyingStore(stores.runs, step, when, state),
    submitter: step === "submit" ? dyingSubmitter(submitter, when, state) : submitter,
    clock: clockOf(clock.read),
  });
  const healthy = createDispatcher({ runs: stores.runs, submitter, clock: clockOf(clock.read) });
  const get = async () => (await stores.runs.getRun(id)) as Run;

  await dying.dispatchRun(id).catch((error: unknown) => {
    if (!(error instanceof Killed)) throw error;
  });
  expect(state.died).toBe(true);
  await submitter.settle();
  // Within the lease a healthy pass neither re-claims nor exceeds the limit.
  clock.advance(1_000);
  await healthy.dispatchRun(id);
  expect((await get()).inFlight).toBeLessThanOrEqual(2);

  // Past the lease the healthy dispatcher takes over; tasks are finished by hand until done.
  clock.advance(CLAIM_LEASE_MS + 1);
  for (let i = 0; i < 20; i++) {
    await healthy.dispatchRun(id);
    await submitter.settle();
    const current = await get();
    expect(current.inFlight).toBeLessThanOrEqual(2);
    if (current.status !== "RUNNING" && current.status !== "PENDING") break;
    for (const task of submitter.tasks.values()) {
      if (task.status === "RUNNING") await submitter.finish(task.targetId, "COMPLETED");
    }
    clock.advance(CLAIM_LEASE_MS + 1);
  }
  return { id, targets, submitter, run: await get() };
}

const HANG: RackBehaviour = { kind: "hang" };

describe("dispatcher crashes: killed at each step, recovered after the lease, no second child task", () => {
  const cases: [Step, "before" | "after", RackBehaviour, Run["status"]][] = [
    // A pass claims its batch in one claimTargets transaction (claimTarget only after a lost race).
    ["claimTargets", "after", HANG, "COMPLETED"],
    ["submit", "before", HANG, "COMPLETED"],
    ["submit", "after", HANG, "COMPLETED"],
    ["recordSubmitted", "before", HANG, "COMPLETED"],
    ["recordSubmitted", "after", HANG, "COMPLETED"],
    ["recordBlocked", "before", { kind: "conflict", times: 1 }, "COMPLETED"],
    [
      "recordOutcome(FAILED)",
      "before",
      { kind: "reject", message: "rack has no BMC" },
      "COMPLETED_WITH_FAILURES",
    ],
  ];
  for (const [step, when, behaviour, final] of cases) {
    it(`killed ${when} ${step}: the run ends ${final}, every target started at most once`, async () => {
      const r = await crashScenario(step, when, behaviour);
      expect(r.run.status).toBe(final);
      expect(r.run.inFlight).toBe(0);
      expect(r.submitter.duplicateStarts()).toEqual([]);
      const outcomes = r.run.counters[0]!;
      expect(outcomes.completed + outcomes.failed).toBe(3);
      if (final === "COMPLETED") expect(r.submitter.starts.size).toBe(3);
      else {
        expect(outcomes.failed).toBe(1);
        expect(await stores.runs.getTarget(r.id, r.targets[0]!.id)).toMatchObject({
          status: "FAILED",
          message: "rack has no BMC",
        });
      }
    });
  }

  it("a task that finishes while its target is still CLAIMED (recording died) counts once; the late re-claim starts nothing", async () => {
    const id = uuid(++seq, "c0000000");
    const { run, targets } = runWithTargets(id, { phaseSizes: [1], maxConcurrent: 1 });
    await stores.runs.createRun(run, targets);
    const clock = new TestClock();
    const submitter = new FakeSubmitter({
      runs: stores.runs,
      clock: clock.read,
      behaviour: () => ({ kind: "hang" }),
    });
    const state = { died: false };
    const dying = createDispatcher({
      runs: dyingStore(stores.runs, "recordSubmitted", "before", state),
      submitter,
      clock: clockOf(clock.read),
    });
    await dying.dispatchRun(id);
    expect((await stores.runs.getTarget(id, targets[0]!.id))?.status).toBe("CLAIMED");
    await submitter.finish(targets[0]!.id, "COMPLETED");
    const healthy = createDispatcher({ runs: stores.runs, submitter, clock: clockOf(clock.read) });
    clock.advance(CLAIM_LEASE_MS + 1);
    await healthy.dispatchRun(id);
    const done = (await stores.runs.getRun(id)) as Run;
    expect(done).toMatchObject({ status: "COMPLETED", inFlight: 0 });
    expect(done.counters[0]).toEqual({ completed: 1, failed: 0, terminated: 0, skipped: 0 });
    expect(submitter.starts.get(`operation-run-target:${targets[0]!.id}`)).toBe(1);
  });
});
