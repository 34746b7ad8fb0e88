/**
 * One write a step for its commands and its wait's token, through the real ASL on moto with MQTT:
 * CheckPreflight and CheckWave make the next step, AwaitWave's Lambda writes its entries and its
 * token in one UpdateItem and publishes. Every command-set write is filed under the step that made
 * it (a scope around each step, as the rollout benchmark files them), and every command published
 * is counted by its request id:
 * - the definition as it is: one write a step, made by AwaitWave; the checks write no command set;
 *   the preflight's queries are written with AwaitPreflight's token, AcquireLock writes none;
 * - the definition before (the checks and AcquireLock send, the waits store their tokens apart)
 *   still completes on today's steps, two writes a step;
 * - a wait that failed before its write (never sent) falls back to the poll, whose check sends the
 *   step itself (a sending wait's) or makes it again for AwaitWave to send (a judging wait's next);
 *   one that failed after it (sent, its token lost) is judged there, a judging wait's next step
 *   taken as sent: either way every command goes out once and the task completes;
 * - a cancel between the check's decision and the wait's write: the wait's write is refused, the
 *   step sends nothing, the task ends TERMINATED with the operator's message.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installCapacityMeter } from "../../bench/lib/capacity-meter.js";
import { definitionFor } from "../../bench/lib/rollout-paths.js";
import { currentScope, inScope } from "../../bench/lib/work-scope.js";
import { loadChildTaskDefinition } from "../../src/adapters/stepfunctions/asl.js";
import type { StepEvent } from "../../src/app/child-task/settings.js";
import type { BmcCommandPublisher } from "../../src/app/ports.js";
import { parseReport } from "../../src/domain/task-report.js";
import {
  type Harness,
  HEALTHY_FLEET_SETTINGS,
  id,
  rack,
  SMALL_RACK,
  SUCCEEDING_FLEET,
  startHarness,
  upgradeRequest,
  waitForTask,
} from "./child-task-harness.js";

/** The default rule over SMALL_RACK at maxParallel 4: three groups of three steps each. */
const STEPS = 9;
const fleet = SUCCEEDING_FLEET;

/** A harness on `definition` whose command-set writes are filed by step and publishes counted. */
async function metered(
  label: string,
  prefix: string,
  racks: number,
  options: {
    definition?: ReturnType<typeof loadChildTaskDefinition>;
    around?: (event: StepEvent, run: () => Promise<unknown>) => Promise<unknown>;
  } = {},
) {
  const published = new Map<string, number>();
  const count = (publisher: BmcCommandPublisher): BmcCommandPublisher => ({
    publish: async (address, command) => {
      await publisher.publish(address, command);
      const requestId = (command as { requestId: string }).requestId;
      published.set(requestId, (published.get(requestId) ?? 0) + 1);
    },
  });
  const h = await startHarness({
    label,
    racks: Array.from({ length: racks }, (_, i) => rack(prefix, i + 1, SMALL_RACK)),
    fleet,
    settings: HEALTHY_FLEET_SETTINGS,
    awaitTimeoutOverrideMs: 600_000,
    wrapPublisher: count,
    aroundStep: (event, run) =>
      inScope({ part: event.step }, () => (options.around ? options.around(event, run) : run())),
    ...(options.definition ? { definition: options.definition } : {}),
  });
  const meter = installCapacityMeter(h.client, {
    tagOf: (operation, input) =>
      operation === "UpdateItem" && String((input.Key as { id?: unknown })?.id).startsWith("cmds#")
        ? currentScope()?.part
        : undefined,
  });
  /** Command-set UpdateItems by the step that made them (the receiver's are not a step's). */
  const writes = () =>
    Object.fromEntries(
      Object.entries(meter.snapshot().byTag).map(([step, t]) => [step, t.byOperation.UpdateItem?.calls ?? 0]),
    );
  return { h, published, writes };
}

async function upgraded(h: Harness, rackId: string) {
  const { taskIds } = await h.child.tasksApi.upgradeFirmware(upgradeRequest([rackId]));
  const task = await waitForTask(h, taskIds[0] as string);
  await h.child.idle();
  return task;
}

const UPDATES_A_RACK = 6;

describe("one write a step for its commands and its wait's token", () => {
  let h: Harness;
  let published: Map<string, number>;
  let writes: () => Record<string, number>;
  const P = "c4000000";
  beforeAll(async () => {
    ({ h, published, writes } = await metered("ctow", P, 1));
  });
  afterAll(async () => {
    await h?.close();
  });

  it("the definition as it is: each step's commands and token in AwaitWave's one write; the checks write no command set; every command out once", async () => {
    const task = await upgraded(h, id(P, 1, 0));
    expect(task.status).toBe("COMPLETED");
    expect(parseReport(task.report).components.every((c) => c.status === "COMPLETED")).toBe(true);
    const w = writes();
    expect(w.awaitWave).toBe(STEPS);
    expect(w.checkWave ?? 0).toBe(0);
    expect(w.checkQueries ?? 0).toBe(0);
    // The preflight's queries likewise: made by AcquireLock, written with AwaitPreflight's token.
    expect(w.acquireLock ?? 0).toBe(0);
    expect(w.awaitQueries).toBe(1);
    expect(h.fleet.stats().flashes).toBe(UPDATES_A_RACK);
    expect([...published.values()].every((n) => n === 1)).toBe(true);
    const stats = h.child.executor.stats();
    // The preflight's wait and each step's (the one that sends it, woken to judge it) woken; the
    // last step's judge records the outcome and ends its own wait (OutcomeRecorded): no CheckWave.
    expect(stats.callbacks).toEqual({ woken: 1 + STEPS, timedOut: 0, failed: 1 });
    expect([stats.byStep.awaitWave, stats.byStep.checkWave]).toEqual([STEPS + 1, undefined]);
    expect(stats.byStep.sendWave).toBeUndefined();
  });
});

describe("executions of the definition before (the checks send; AwaitWave stores its token apart)", () => {
  it("complete on today's steps: two writes a step, the check's and the wait's; every command out once", async () => {
    const P = "c4100000";
    const { h, published, writes } = await metered("ctowb", P, 1, {
      definition: definitionFor("twowrites", loadChildTaskDefinition()),
    });
    try {
      const task = await upgraded(h, id(P, 1, 0));
      expect(task.status).toBe("COMPLETED");
      const w = writes();
      expect(w.awaitWave).toBe(STEPS);
      expect((w.checkWave ?? 0) + (w.checkQueries ?? 0)).toBe(STEPS);
      expect([w.acquireLock, w.awaitQueries]).toEqual([1, 1]);
      expect(h.fleet.stats().flashes).toBe(UPDATES_A_RACK);
      expect([...published.values()].every((n) => n === 1)).toBe(true);
      expect(h.child.executor.stats().callbacks).toEqual({ woken: STEPS + 1, timedOut: 0, failed: 0 });
    } finally {
      await h.close();
    }
  });
});

describe("a wait that failed falls back to the poll, whose check tells sent from never sent", () => {
  /** AwaitWave's `n`-th call (from 0) fails with WaitNotStored, before or after its own work. */
  const failingWait = (n: number, when: "before" | "after") => {
    let waits = 0;
    return async (event: StepEvent, run: () => Promise<unknown>) => {
      if (event.step !== "awaitWave" || waits++ !== n) return run();
      if (when === "after") await run();
      throw Object.assign(new Error("the wait could not be stored or woken: injected"), {
        name: "WaitNotStored",
      });
    };
  };

  // AwaitWave's first call sends the first step; its fourth judges the third and sends the fourth.
  const cases = [
    { n: 0, when: "before", P: "c4200000" },
    { n: 0, when: "after", P: "c4300000" },
    { n: 3, when: "before", P: "c4210000" },
    { n: 3, when: "after", P: "c4310000" },
  ] as const;
  for (const { n, when, P } of cases) {
    const which = n === 0 ? "a sending wait" : "a judging wait";
    it(`${which}, ${when === "before" ? "never sent (it failed before its write): the step is sent after the check" : "sent, its token lost (it failed after its write and publish): the check judges it"}; every command out once, the task COMPLETED`, async () => {
      const { h, published, writes } = await metered(`ctowf${when[0]}${n}`, P, 1, {
        around: failingWait(n, when),
      });
      try {
        const task = await upgraded(h, id(P, 1, 0));
        expect(task.status).toBe("COMPLETED");
        expect(h.fleet.stats().flashes).toBe(UPDATES_A_RACK);
        expect([...published.values()].every((n) => n === 1)).toBe(true);
        const stats = h.child.executor.stats();
        expect(stats.byStep.sendWave).toBeUndefined();
        // One check, the poll's; a wait more than the steps' (the one that failed).
        expect(stats.byStep.checkWave).toBe(1);
        if (when === "before" && n === 0) {
          // The poll's check got the step back unsent and not stored: it sent it (its one
          // write), a wait stored its token alone, and the results woke it to judge.
          expect(writes().checkWave).toBe(1);
          expect(stats.byStep.awaitWave).toBe(STEPS + 2);
        } else if (when === "before") {
          // The poll's check judged the third step again (its answers on the wave) and made the
          // fourth, not stored: AwaitWave sent it (its one write), as a check's next step.
          expect(writes().checkWave ?? 0).toBe(0);
          expect(stats.byStep.awaitWave).toBe(STEPS + 2);
        } else {
          // The poll's check found every entry stored: it sent nothing (it judged the step, or
          // took the next one as sent, from its commands' deadline).
          expect(writes().checkWave ?? 0).toBe(0);
          if (n === 3) expect(stats.byStep.awaitWave).toBe(STEPS + 2);
          // The first step judged done by the check: its next step sent by a wait, not judged by one.
          else expect([STEPS + 1, STEPS + 2]).toContain(stats.byStep.awaitWave);
        }
      } finally {
        await h.close();
      }
    });
  }
});

describe("AwaitPreflight that failed before its write falls back to the poll, whose check asks the BMCs", () => {
  it("the queries go out once (CheckPreflight's one write), the answers are polled for, the task COMPLETED", async () => {
    const P = "c4500000";
    let failed = false;
    const { h, published, writes } = await metered("ctowq", P, 1, {
      around: async (event, run) => {
        if (event.step !== "awaitQueries" || failed) return run();
        failed = true;
        throw Object.assign(new Error("the wait could not be stored or woken: injected"), {
          name: "WaitNotStored",
        });
      },
    });
    try {
      const task = await upgraded(h, id(P, 1, 0));
      expect(task.status).toBe("COMPLETED");
      expect(h.fleet.stats().flashes).toBe(UPDATES_A_RACK);
      expect([...published.values()].every((n) => n === 1)).toBe(true);
      const w = writes();
      expect([w.acquireLock ?? 0, w.awaitQueries ?? 0, w.checkQueries]).toEqual([0, 0, 1]);
      expect(h.child.executor.stats().byStep.checkQueries).toBeGreaterThanOrEqual(2);
    } finally {
      await h.close();
    }
  });
});

describe("a cancel while a judging wait runs, between its judgement and its write", () => {
  it("the wait's write is refused: that step sends nothing, the task ends TERMINATED with the operator's message", async () => {
    const P = "c4400000";
    let h: Harness | undefined;
    let cancelled: Promise<unknown> | undefined;
    let waits = 0;
    const started = await metered("ctowc", P, 1, {
      around: async (event, run) => {
        if (event.step === "awaitWave" && waits++ === 3 && h !== undefined) {
          // The fourth wait judges the third step and sends the fourth: the cancel lands (its
          // ending decided, the sets closed, the task ended) while it runs, before its write.
          expect([event.judge, event.wave.answers !== undefined]).toEqual([true, true]);
          cancelled = h.child.tasksApi.cancelTask(event.taskId);
          await cancelled;
        }
        return run();
      },
    });
    h = started.h;
    try {
      const { taskIds } = await h.child.tasksApi.upgradeFirmware(upgradeRequest([id(P, 1, 0)]));
      const taskId = taskIds[0] as string;
      const task = await waitForTask(h, taskId);
      await h.child.idle();
      expect(await cancelled).toMatchObject({ id: taskId, status: "TERMINATED", message: "task cancelled" });
      expect(task).toMatchObject({ status: "TERMINATED", message: "task cancelled" });
      // Three steps were sent (each once), the fourth nothing: the fleet flashed the first group's
      // power shelf alone.
      expect(h.fleet.stats().flashes).toBe(1);
      expect(started.published.size).toBe(6 + 3);
      expect([...started.published.values()].every((n) => n === 1)).toBe(true);
    } finally {
      await h.close();
    }
  });
});
