/**
 * AwaitWave of the definition whose wait judges the wave it was woken for (`judge`:
 * src/app/child-task/wave-judge.ts), on the steps with memory stores typed from the ports:
 * - every wait stores its wave as its resume: without its answers and `unsent`, with its cursor,
 *   its heartbeat and timeout those of the step that follows (`followingAwait`); a wait of the
 *   definitions before (no `judge`) stores none;
 * - woken with the wave's answers, it judges them with no read and sends the next step (its
 *   commands, its token and the next wave's resume in one write), at the wave's own cursor;
 * - what it does not send ends the wait at once with an error the state's Catch routes: the last
 *   step (its outcome recorded: OutcomeRecorded), a retry, a sleep next, answers not complete
 *   (StepHandedOver, for CheckWave, its cause why); the definition before (no `exitsAsErrors`)
 *   is woken with the wave marked `ended` or `checkNeeded`; without a waker nothing is done;
 * - a retried judging wait (a new token) judges the same answers to the same next step and
 *   replaces the token and the resume; a failure left is ComponentsFailed.
 */
import { describe, expect, it } from "vitest";
import type { StepDeps } from "../../src/app/child-task/deps.js";
import type { UpgradeGroup, WaveCursor, WaveState } from "../../src/app/child-task/settings.js";
import { checkWave } from "../../src/app/child-task/wave-check.js";
import { awaitOrJudgeWave } from "../../src/app/child-task/wave-judge.js";
import {
  AWAIT_START_MARGIN_SECONDS,
  followingAwait,
  JUDGE_ONLY_AWAIT,
} from "../../src/app/child-task/wave-wait.js";
import { awaitWave, groupFacts } from "../../src/app/child-task/waves.js";
import { type CommandSet, commandRequestId, entryKey, updateAddress } from "../../src/domain/command-sets.js";
import { parseReport } from "../../src/domain/task-report.js";
import { firstUpdateWave, harness, settings, task } from "../support/child-task-wave-harness.js";

const address = updateAddress(task.id, 0);
const key = (id: string) => entryKey(address, id);

const update = { action: "UPDATE_FIRMWARE" as const, timeoutSeconds: 0, sleepSeconds: 0 };
/** c1 then c2, one a wave, with the facts the preflight froze. */
const oneByOne = (steps: UpgradeGroup["steps"] = [update]): UpgradeGroup => ({
  stage: 0,
  name: "compute",
  componentIds: ["c1", "c2"],
  maxParallel: 1,
  steps,
  facts: groupFacts(task, parseReport(task.report), ["c1", "c2"], settings),
});
const cursorAt = (wave: number, step = 0): WaveCursor => ({
  group: 0,
  wave,
  step,
  attempt: 0,
  more: true,
  retry: false,
  waitSeconds: 0,
});

/** The first wave (c1), as sent, with its wait's heartbeat and timeout. */
const firstWave = (): WaveState => ({ ...firstUpdateWave(), awaitSeconds: 5, awaitTimeoutSeconds: 6 });

function rig() {
  const h = harness();
  const woken: { token: string; output: Record<string, unknown> }[] = [];
  const failed: { token: string; error: string; cause: string }[] = [];
  const opened: { token?: string; resume?: unknown }[] = [];
  const deps = {
    ...h.deps,
    commands: {
      ...h.commands,
      open: async (...args: Parameters<typeof h.commands.open>) => {
        opened.push({ token: args[4]?.token, resume: args[4]?.resume });
        return h.commands.open(...args);
      },
    },
    waveWaker: {
      wake: async (token: string, output: Record<string, unknown>) => void woken.push({ token, output }),
      heartbeat: async () => {},
      fail: async (token: string, error: string, cause: string) => void failed.push({ token, error, cause }),
    },
  } as unknown as StepDeps;
  /** As the definition's AwaitWave calls it; `before`: the definition whose WaveDone? routes a woken wave. */
  const judge = (
    token: string,
    wave: WaveState,
    groups: UpgradeGroup[],
    cursor = cursorAt(0),
    before = false,
  ) =>
    awaitOrJudgeWave(deps, {
      step: "awaitWave",
      taskId: task.id,
      token,
      wave,
      rackId: task.rackId,
      settings,
      groups,
      cursor,
      judge: true,
      ...(before ? {} : { exitsAsErrors: true }),
    });
  /** c1's update stored with `result`, its wait stored with its resume: the wave as woken. */
  const wokenFirst = async (ok = true, wave = firstWave()): Promise<WaveState> => {
    await h.commands.open(task.id, "u", { [key("c1")]: { sentAt: 4_000, deadline: 9_000 } });
    const result = ok
      ? { ok: true as const, version: "2.1.0" }
      : { ok: false as const, version: "2.0.0", error: { code: "FLASH_FAILED", message: "no" } };
    await h.commands.record(task.id, "u", {
      [key("c1")]: { result: { value: result, at: 4_500 }, ackedAt: 4_100 },
    });
    const answers = (await h.commands.get(task.id, "u")) as CommandSet;
    h.calls.length = 0;
    return { ...wave, cursor: cursorAt(0), answers: { ...answers, wake: undefined } as CommandSet };
  };
  return { h, deps, woken, failed, opened, judge, wokenFirst };
}

describe("followingAwait: the heartbeat and timeout a resume carries for the wait after it", () => {
  it("the next step's as planWave and awaiting make them (its timeout and the settings alone), the timeout with the start margin", () => {
    // An update next: the deployment's 1,800 s, the net of five 60-s polls.
    expect(followingAwait([oneByOne()], cursorAt(0), settings)).toEqual({
      awaitSeconds: 300,
      awaitTimeoutSeconds: settings.updateTimeoutSeconds + AWAIT_START_MARGIN_SECONDS,
    });
    // A verify next: the preflight's 60 s, shorter than the net: the heartbeat is the deadline.
    const verify = { action: "VERIFY_VERSION" as const, timeoutSeconds: 0, sleepSeconds: 0 };
    expect(followingAwait([oneByOne([update, verify])], cursorAt(0), settings)).toEqual({
      awaitSeconds: 60,
      awaitTimeoutSeconds: 61 + AWAIT_START_MARGIN_SECONDS,
    });
  });

  it("the last step, or a sleep next: a pair valid for Step Functions that outlasts the judging invocation", () => {
    expect(followingAwait([oneByOne()], cursorAt(1), settings)).toEqual(JUDGE_ONLY_AWAIT);
    const sleep = { action: "SLEEP" as const, timeoutSeconds: 0, sleepSeconds: 30 };
    expect(followingAwait([oneByOne([update, sleep])], cursorAt(0), settings)).toEqual(JUDGE_ONLY_AWAIT);
    expect(JUDGE_ONLY_AWAIT.awaitSeconds).toBeGreaterThanOrEqual(1);
    expect(JUDGE_ONLY_AWAIT.awaitTimeoutSeconds).toBeGreaterThan(JUDGE_ONLY_AWAIT.awaitSeconds);
  });
});

describe("a wait of the judging definition stores its wave as its resume", () => {
  it("sending a step: the wave without `unsent`, with its cursor, the next step's heartbeat and timeout, in the one write with the token", async () => {
    const r = rig();
    const made = { ...firstWave(), deadline: 5_000 + 60_000, unsent: true };
    expect(await r.judge("tk-1", made, [oneByOne()])).toEqual({ woken: false });
    const { unsent: _, ...sent } = made;
    const resume = { ...sent, cursor: cursorAt(0), ...followingAwait([oneByOne()], cursorAt(0), settings) };
    expect(r.opened).toEqual([{ token: "tk-1", resume }]);
    expect((await r.h.commands.get(task.id, "u"))?.wake?.resume).toEqual(resume);
  });

  it("waiting for a step already sent: its token and resume (the wave's own cursor first); the definitions before store none", async () => {
    const r = rig();
    await r.h.commands.open(task.id, "u", { [key("c1")]: { sentAt: 4_000, deadline: 9_000 } });
    const wave = { ...firstWave(), cursor: cursorAt(0) };
    await r.judge("tk-1", wave, [oneByOne()], cursorAt(1));
    expect((await r.h.commands.get(task.id, "u"))?.wake?.resume).toEqual({
      ...firstWave(),
      cursor: cursorAt(0),
      ...followingAwait([oneByOne()], cursorAt(0), settings),
    });
    await awaitWave(r.deps, { step: "awaitWave", taskId: task.id, token: "tk-2", wave: firstWave() });
    expect((await r.h.commands.get(task.id, "u"))?.wake).toMatchObject({ token: "tk-2" });
    expect((await r.h.commands.get(task.id, "u"))?.wake?.resume).toBeUndefined();
  });
});

describe("a wait woken with its wave's answers judges it and sends the next step", () => {
  it("judges from the answers (no read) at the wave's own cursor and sends the next step: its entry, the token and its resume in one write, its update published", async () => {
    const r = rig();
    const woken = await r.wokenFirst();
    // `$.plan.cursor` is a step behind after a wake-up: the wave's cursor is the one judged.
    expect(await r.judge("tk-2", woken, [oneByOne()], { ...cursorAt(0), wave: 7 })).toEqual({ woken: false });
    expect(r.h.calls).toEqual([]);
    expect(r.woken).toEqual([]);
    expect(r.failed).toEqual([]);
    expect(r.opened).toHaveLength(1);
    expect(r.opened[0]?.token).toBe("tk-2");
    expect(r.opened[0]?.resume).toMatchObject({
      componentIds: ["c2"],
      cursor: { group: 0, wave: 1, step: 0 },
      done: false,
      ...JUDGE_ONLY_AWAIT,
    });
    expect(r.opened[0]?.resume).not.toHaveProperty("answers");
    expect(r.opened[0]?.resume).not.toHaveProperty("unsent");
    expect(r.h.published.map((p) => [p.componentId, (p.command as { requestId: string }).requestId])).toEqual(
      [["c2", commandRequestId(address, "c2")]],
    );
  });

  it("retried (a new token): the same answers to the same next step, the same request id, the token and the resume replaced", async () => {
    const r = rig();
    const woken = await r.wokenFirst();
    await r.judge("tk-2", woken, [oneByOne()]);
    await r.judge("tk-3", woken, [oneByOne()]);
    expect(r.opened.map((o) => o.token)).toEqual(["tk-2", "tk-3"]);
    expect(r.opened[1]?.resume).toEqual(r.opened[0]?.resume);
    expect(new Set(r.h.published.map((p) => (p.command as { requestId: string }).requestId))).toEqual(
      new Set([commandRequestId(address, "c2")]),
    );
    const stored = await r.h.commands.get(task.id, "u");
    expect(stored?.wake?.token).toBe("tk-3");
    expect(Object.keys(stored?.entries ?? {}).sort()).toEqual([key("c1"), key("c2")].sort());
  });

  it("the task's last step: its outcome recorded (COMPLETED), the wait ended at once with OutcomeRecorded, nothing sent or woken", async () => {
    const r = rig();
    await r.h.create();
    const single: UpgradeGroup = { ...oneByOne(), componentIds: ["c1"] };
    const woken = await r.wokenFirst();
    expect(await r.judge("tk-2", woken, [single])).toEqual({ woken: true });
    expect(r.failed).toEqual([
      {
        token: "tk-2",
        error: "OutcomeRecorded",
        cause: "the task's last step passed: the task is COMPLETED",
      },
    ]);
    expect(r.woken).toEqual([]);
    expect(r.opened).toEqual([]);
    expect((await r.h.stored())?.status).toBe("COMPLETED");
  });

  it("a failure with retries left, or a sleep next: nothing sent, the wait ended at once with StepHandedOver, its cause why (CheckWave does it)", async () => {
    const retried = {
      ...update,
      retry: { maxRetries: 1, intervalSeconds: 1, backoffRate: 2 },
    };
    const r = rig();
    const failed = await r.wokenFirst(false);
    expect(await r.judge("tk-2", failed, [oneByOne([retried])])).toEqual({ woken: true });
    expect(r.failed).toEqual([
      { token: "tk-2", error: "StepHandedOver", cause: "a retry of the step is next" },
    ]);
    const s = rig();
    const sleep = { action: "SLEEP" as const, timeoutSeconds: 0, sleepSeconds: 30 };
    const passed = await s.wokenFirst();
    await s.judge("tk-3", passed, [oneByOne([update, sleep])]);
    expect(s.failed).toEqual([{ token: "tk-3", error: "StepHandedOver", cause: "a sleep is next" }]);
    for (const x of [r, s]) {
      expect(x.woken).toEqual([]);
      expect(x.opened).toEqual([]);
      expect(x.h.published).toEqual([]);
    }
  });

  it("answers that are not complete (or not this wave's): StepHandedOver, nothing judged; a failure left: ComponentsFailed", async () => {
    const r = rig();
    const woken = await r.wokenFirst();
    const partial = {
      ...woken,
      componentIds: ["c1", "c2"],
      types: { c1: "COMPUTE", c2: "COMPUTE" },
    } as WaveState;
    await r.judge("tk-2", partial, [oneByOne()]);
    const other = { ...woken, answers: { ...(woken.answers as CommandSet), part: 3 } };
    await r.judge("tk-3", other, [oneByOne()]);
    expect(r.failed).toEqual([
      { token: "tk-2", error: "StepHandedOver", cause: "the step's answers are not all in" },
      { token: "tk-3", error: "StepHandedOver", cause: "the step's answers are not all in" },
    ]);
    expect(r.opened).toEqual([]);
    const f = rig();
    const failed = await f.wokenFirst(false);
    await expect(f.judge("tk-4", failed, [oneByOne()])).rejects.toMatchObject({ name: "ComponentsFailed" });
    expect(f.opened).toEqual([]);
    expect(f.failed).toEqual([]);
  });

  it("the definition before (no exitsAsErrors, its WaveDone? routes a woken wave): woken with the wave marked `ended` or `checkNeeded`, never failed", async () => {
    const r = rig();
    await r.h.create();
    const single: UpgradeGroup = { ...oneByOne(), componentIds: ["c1"] };
    const woken = await r.wokenFirst();
    expect(await r.judge("tk-2", woken, [single], cursorAt(0), true)).toEqual({ woken: true });
    const s = rig();
    const sleep = { action: "SLEEP" as const, timeoutSeconds: 0, sleepSeconds: 30 };
    const passed = await s.wokenFirst();
    await s.judge("tk-3", passed, [oneByOne([update, sleep])], cursorAt(0), true);
    expect(r.woken).toEqual([{ token: "tk-2", output: { ...woken, ended: "COMPLETED" } }]);
    expect(s.woken).toEqual([{ token: "tk-3", output: { ...passed, checkNeeded: true } }]);
    expect([...r.failed, ...s.failed]).toEqual([]);
  });

  it("CheckWave handed a step (StepHandedOver caught onto the wave as `checkNeeded`) takes no next step as sent by it: no read; after a timeout (no mark) it looks", async () => {
    const check = async (marked: boolean) => {
      const r = rig();
      const woken = await r.wokenFirst();
      const handedOver = { Error: "StepHandedOver", Cause: "the step's answers are not all in" };
      const plan = await checkWave(r.deps, {
        step: "checkWave",
        taskId: task.id,
        settings,
        rackId: task.rackId,
        groups: [oneByOne()],
        cursor: cursorAt(0),
        wave: marked ? { ...woken, checkNeeded: handedOver } : woken,
        sendNext: "wait",
        nextMayBeSent: true,
      });
      return { plan, reads: r.h.calls.length };
    };
    const handed = await check(true);
    const timedOut = await check(false);
    expect(handed.reads).toBe(0);
    expect(timedOut.reads).toBe(1);
    // Either way c2's wave is the next step, to be sent (nothing stored it), without the mark.
    for (const { plan } of [handed, timedOut]) {
      if (!("groups" in plan)) throw new Error("no plan");
      expect([plan.wave.componentIds, plan.wave.unsent]).toEqual([["c2"], true]);
      expect(plan.wave).not.toHaveProperty("checkNeeded");
    }
  });

  it("without a waker (a deployment with no callbacks) nothing is judged, sent or woken", async () => {
    const r = rig();
    const woken = await r.wokenFirst();
    const { waveWaker: _, ...bare } = r.deps;
    const out = await awaitOrJudgeWave(bare as StepDeps, {
      step: "awaitWave",
      taskId: task.id,
      token: "tk-2",
      wave: woken,
      rackId: task.rackId,
      settings,
      groups: [oneByOne()],
      cursor: cursorAt(0),
      judge: true,
    });
    expect(out).toEqual({ woken: false });
    expect(r.opened).toEqual([]);
    expect(r.h.published).toEqual([]);
  });
});
