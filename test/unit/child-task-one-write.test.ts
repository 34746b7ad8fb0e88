/**
 * One write for a step's commands and its wait's token: the definition's CheckWave (`sendNext`
 * "wait") makes the next step without sending it (`unsent`, its window from the check's clock),
 * and AwaitWave's Lambda writes the step's entries and its task token in one conditional write,
 * then publishes. Every guarantee of the send that was in the check, re-proved here on the steps
 * (memory stores typed from the ports):
 * - exactly once: a retried wait (a new token) keeps the entries, replaces the token and publishes
 *   only what is neither out nor answered, under the same request ids; one whose entries were all
 *   answered already wakes the execution itself;
 * - a closed set (a cancel) refuses the write: TaskEnded, nothing stored or sent;
 * - a token it could not store, or a wake-up that failed, is WaitNotStored (AwaitWave's poll); a
 *   store outage stays StoreUnavailableError (retried first);
 * - the check after a wait that failed tells "sent, token lost" (judged) from "never sent" (sent
 *   there, from a fresh window).
 */
import { describe, expect, it } from "vitest";
import type { StepDeps } from "../../src/app/child-task/deps.js";
import type { UpgradeGroup, WavePlan, WaveState } from "../../src/app/child-task/settings.js";
import { checkWave } from "../../src/app/child-task/wave-check.js";
import { awaitWave, groupFacts } from "../../src/app/child-task/waves.js";
import type { UpdateCommand } from "../../src/domain/bmc-protocol.js";
import { commandRequestId, entryKey, updateAddress } from "../../src/domain/command-sets.js";
import { StoreUnavailableError } from "../../src/domain/errors.js";
import { parseReport } from "../../src/domain/task-report.js";
import { firstUpdateWave, harness, settings, task } from "../support/child-task-wave-harness.js";
import { recordingOpens } from "../support/memory-child-task.js";

const address = updateAddress(task.id, 0);
const key = (id: string) => entryKey(address, id);
const requestId = (id: string) => commandRequestId(address, id);
const TIMEOUT_MS = settings.updateTimeoutSeconds * 1000;

/** c1 then c2, one a wave, with the facts the preflight froze. */
const oneByOne: UpgradeGroup = {
  stage: 0,
  name: "compute",
  componentIds: ["c1", "c2"],
  maxParallel: 1,
  steps: [{ action: "UPDATE_FIRMWARE", timeoutSeconds: 0, sleepSeconds: 0 }],
  facts: groupFacts(task, parseReport(task.report), ["c1", "c2"], settings),
};
/** c1 and c2 in one wave. */
const together: UpgradeGroup = { ...oneByOne, maxParallel: 2 };
const cursorAt = (wave: number) => ({
  group: 0,
  wave,
  step: 0,
  attempt: 0,
  more: true,
  retry: false,
  waitSeconds: 0,
});

function rig() {
  const h = harness();
  const { commands, opened } = recordingOpens(h.commands);
  const tokensOnly: string[] = [];
  const woken: { token: string; keys: string[] }[] = [];
  let failWake: Error | undefined;
  const failing = new Map<string, number>();
  const deps = {
    ...h.deps,
    commands: {
      ...commands,
      awaitAnswers: (...args: Parameters<typeof h.commands.awaitAnswers>) => {
        tokensOnly.push(args[2].token);
        return h.commands.awaitAnswers(...args);
      },
    },
    publisher: {
      publish: async (address: { componentId: string }, command: UpdateCommand) => {
        const left = failing.get(address.componentId) ?? 0;
        if (left > 0) {
          failing.set(address.componentId, left - 1);
          throw Object.assign(new Error(`publish to ${address.componentId} throttled`), {
            name: "BmcPublishError",
          });
        }
        return h.deps.publisher.publish(address as never, command);
      },
    },
    waveWaker: {
      wake: async (token: string, answers: { entries: Record<string, unknown> }) => {
        if (failWake !== undefined) throw failWake;
        woken.push({ token, keys: Object.keys(answers.entries) });
      },
      heartbeat: async () => {},
    },
  } as unknown as StepDeps;
  const wait = (token: string, wave: WaveState, groups: UpgradeGroup[], w = 0) =>
    awaitWave(deps, {
      step: "awaitWave",
      taskId: task.id,
      token,
      wave,
      rackId: task.rackId,
      settings,
      groups,
      cursor: cursorAt(w),
    });
  return {
    h,
    deps,
    opened,
    tokensOnly,
    woken,
    wait,
    failPublish: (componentId: string, times: number) => failing.set(componentId, times),
    failWake: (error: Error) => {
      failWake = error;
    },
  };
}

/** c1's update answered with success, its wave checked with `sendNext`: the plan CheckWave returns. */
async function checkedFirst(r: ReturnType<typeof rig>, sendNext: boolean | "wait"): Promise<WavePlan> {
  await r.h.commands.open(task.id, "u", { [key("c1")]: { sentAt: 4_000, deadline: 9_000 } });
  await r.h.commands.record(task.id, "u", {
    [key("c1")]: { result: { value: { ok: true, version: "2.1.0" }, at: 4_500 }, ackedAt: 4_100 },
  });
  r.opened.length = 0;
  return (await checkWave(r.deps, {
    step: "checkWave",
    taskId: task.id,
    rackId: task.rackId,
    settings,
    groups: [oneByOne],
    cursor: cursorAt(0),
    wave: firstUpdateWave(),
    sendNext,
  })) as WavePlan;
}

/** The first wave of `together` as CheckPreflight or CheckWave makes it: c1 and c2, unsent. */
const madeWave = (): WaveState => ({
  stage: 0,
  step: 0,
  action: "UPDATE_FIRMWARE",
  attempt: 0,
  timeoutSeconds: settings.updateTimeoutSeconds,
  componentIds: ["c1", "c2"],
  types: { c1: "COMPUTE", c2: "COMPUTE" },
  versions: { c1: "2.1.0", c2: "2.0.0" },
  subTargets: { c2: ["bios"] },
  deadline: 5_000 + TIMEOUT_MS,
  polls: 0,
  waitSeconds: 10,
  done: false,
  awaitSeconds: 300,
  awaitTimeoutSeconds: settings.updateTimeoutSeconds,
  unsent: true,
});

describe('CheckWave with sendNext "wait" makes the next step and sends nothing', () => {
  it("the plan's wave is the next step, unsent, its window from the check's clock (AwaitWave's heartbeat and timeout known before its Lambda runs); no entry written, nothing published", async () => {
    const r = rig();
    const plan = await checkedFirst(r, "wait");
    expect(plan.cursor).toMatchObject({ wave: 1, step: 0, more: true, retry: false });
    expect(plan.wave).toEqual({
      stage: 0,
      step: 0,
      action: "UPDATE_FIRMWARE",
      attempt: 0,
      timeoutSeconds: settings.updateTimeoutSeconds,
      componentIds: ["c2"],
      types: { c2: "COMPUTE" },
      versions: { c2: "2.0.0" },
      subTargets: { c2: ["bios"] },
      deadline: 5_000 + TIMEOUT_MS,
      polls: 0,
      waitSeconds: settings.pollSeconds,
      done: false,
      awaitSeconds: 300,
      awaitTimeoutSeconds: settings.updateTimeoutSeconds,
      unsent: true,
    });
    expect(r.opened).toEqual([]);
    expect(r.h.published).toEqual([]);
    expect((await r.h.commands.get(task.id, "u"))?.entries[key("c2")]).toBeUndefined();
  });

  it("then AwaitWave writes the step's entry and its token in ONE write (no token-only write), publishes its update, and waits", async () => {
    const r = rig();
    const plan = await checkedFirst(r, "wait");
    expect(await r.wait("tk-1", plan.wave, plan.groups, 1)).toEqual({ woken: false });
    // The wait's heartbeat (the wave's awaitSeconds) and its start are stored with it, as a
    // token-only write stores them.
    expect(r.opened).toEqual([{ token: "tk-1", keys: [key("c2")], heartbeatSeconds: 300, startedAt: 5_000 }]);
    expect(r.tokensOnly).toEqual([]);
    expect(r.h.published.map((p) => [p.componentId, (p.command as UpdateCommand).requestId])).toEqual([
      ["c2", requestId("c2")],
    ]);
    const c2 = r.h.published[0]?.command as UpdateCommand;
    expect(c2).toMatchObject({ targetVersion: "2.0.0", subTargets: ["bios"], issuedAt: 5_000 });
    // Sealed with the run's credentials, as the check's send sealed them.
    expect(c2.auth).toEqual({ sealed: "sealed:s3cret" });
    const set = await r.h.commands.get(task.id, "u");
    expect(set?.entries[key("c2")]).toEqual({ sentAt: 5_000, deadline: 5_000 + TIMEOUT_MS });
    expect(set?.wake).toEqual({ token: "tk-1", keys: [key("c2")], heartbeatSeconds: 300, startedAt: 5_000 });
    expect(r.woken).toEqual([]);
  });

  it("the same judgement with sendNext true (the definitions before) sends the step in the check, as it did", async () => {
    const r = rig();
    const plan = await checkedFirst(r, true);
    expect(plan.wave.unsent).toBeUndefined();
    expect(r.opened).toEqual([undefined]);
    expect(r.h.published.map((p) => p.componentId)).toEqual(["c2"]);
    // Its wait stores the token alone, even with the plan in its Payload.
    expect(await r.wait("tk-2", plan.wave, plan.groups, 1)).toEqual({ woken: false });
    expect(r.tokensOnly).toEqual(["tk-2"]);
    expect(r.opened).toEqual([undefined]);
    expect(r.h.published.map((p) => p.componentId)).toEqual(["c2"]);
  });
});

describe("AwaitWave sending its step: exactly once, a closed set, its failures", () => {
  it("a publish that failed: the ones out are marked, BmcPublishError thrown; the retried wait (a new token) replaces the token and publishes only the rest, under the same request id", async () => {
    const r = rig();
    r.failPublish("c2", 1);
    await expect(r.wait("tk-1", madeWave(), [together])).rejects.toMatchObject({
      name: "BmcPublishError",
      message: "publish to c2 throttled",
    });
    expect(r.h.published.map((p) => p.componentId)).toEqual(["c1"]);
    const first = await r.h.commands.get(task.id, "u");
    expect(first?.entries[key("c1")]?.publishedAt).toBe(5_000);
    expect(first?.entries[key("c2")]?.publishedAt).toBeUndefined();
    expect(await r.wait("tk-2", madeWave(), [together])).toEqual({ woken: false });
    expect(r.h.published.map((p) => [p.componentId, (p.command as UpdateCommand).requestId])).toEqual([
      ["c1", requestId("c1")],
      ["c2", requestId("c2")],
    ]);
    const set = await r.h.commands.get(task.id, "u");
    expect(set?.wake).toEqual({
      token: "tk-2",
      keys: [key("c1"), key("c2")],
      heartbeatSeconds: 300,
      startedAt: 5_000,
    });
    expect(r.opened).toHaveLength(2);
  });

  it("a retried wait whose commands were all answered already publishes nothing and wakes the execution itself with them", async () => {
    const r = rig();
    r.failPublish("c2", 1);
    await expect(r.wait("tk-1", madeWave(), [together])).rejects.toMatchObject({ name: "BmcPublishError" });
    // c1 answered; c2 never published (so never answered): the retry publishes it, wakes nothing.
    const result = { value: { ok: true as const, version: "2.1.0" }, at: 5_500 };
    await r.h.commands.record(task.id, "u", { [key("c1")]: { result } });
    expect(await r.wait("tk-2", madeWave(), [together])).toEqual({ woken: false });
    await r.h.commands.record(task.id, "u", { [key("c2")]: { result } });
    // The Lambda died after its write and publish (its result lost): the state retries it.
    r.h.published.length = 0;
    expect(await r.wait("tk-3", madeWave(), [together])).toEqual({ woken: true });
    expect(r.h.published).toEqual([]);
    expect(r.woken).toEqual([{ token: "tk-3", keys: [key("c1"), key("c2")] }]);
  });

  it("a closed set (the task cancelled between the check and the wait) refuses the write: TaskEnded, no entry, no token, nothing published", async () => {
    const r = rig();
    await r.h.commands.close(task.id, 4_900, []);
    await expect(r.wait("tk-1", madeWave(), [together])).rejects.toMatchObject({
      name: "TaskEnded",
      message: `task ${task.id} already ended`,
    });
    const set = await r.h.commands.get(task.id, "u");
    expect(set?.entries).toEqual({});
    expect(set?.wake).toBeUndefined();
    expect(r.h.published).toEqual([]);
  });

  it("a wake-up of its own that failed is WaitNotStored (AwaitWave's poll), its commands out", async () => {
    const r = rig();
    const result = { value: { ok: true as const, version: "2.1.0" }, at: 4_500 };
    await r.h.commands.open(task.id, "u", {
      [key("c1")]: { sentAt: 4_000, deadline: 5_000 + TIMEOUT_MS },
      [key("c2")]: { sentAt: 4_000, deadline: 5_000 + TIMEOUT_MS },
    });
    await r.h.commands.record(task.id, "u", { [key("c1")]: { result }, [key("c2")]: { result } });
    r.failWake(Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException" }));
    await expect(r.wait("tk-1", madeWave(), [together])).rejects.toMatchObject({
      name: "WaitNotStored",
      message: "the wait could not be stored or woken: Rate exceeded",
    });
  });

  it("a sleep made unsent has no commands: no write, nothing woken (its wait's timeout is the sleep)", async () => {
    const r = rig();
    const sleep: UpgradeGroup = {
      ...together,
      steps: [{ action: "SLEEP", timeoutSeconds: 0, sleepSeconds: 30 }],
    };
    const wave: WaveState = { ...madeWave(), action: "SLEEP", timeoutSeconds: 30, deadline: 35_000 };
    expect(await r.wait("tk-1", wave, [sleep])).toEqual({ woken: false });
    expect(r.opened).toEqual([]);
    expect(r.tokensOnly).toEqual([]);
    expect(await r.h.commands.get(task.id, "u")).toBeUndefined();
  });
});

describe("a wait's token only (a step already sent): its failures", () => {
  const sentWave = (): WaveState => {
    const { unsent: _, ...wave } = madeWave();
    return wave;
  };

  it("a token it could not store is WaitNotStored, with the store's message; a store outage stays StoreUnavailableError (the state retries it first)", async () => {
    const r = rig();
    const broken = (error: Error) =>
      ({
        ...r.deps,
        commands: { ...r.deps.commands, awaitAnswers: async () => Promise.reject(error) },
      }) as StepDeps;
    const call = (deps: StepDeps) =>
      awaitWave(deps, { step: "awaitWave", taskId: task.id, token: "tk-1", wave: sentWave() });
    await expect(call(broken(new Error("item too large")))).rejects.toMatchObject({
      name: "WaitNotStored",
      message: "the wait could not be stored or woken: item too large",
    });
    await expect(call(broken(new StoreUnavailableError("throttled")))).rejects.toMatchObject({
      name: "StoreUnavailableError",
    });
  });
});

describe("the check after a wait that failed tells sent from never sent", () => {
  const check = (r: ReturnType<typeof rig>, wave: WaveState) =>
    checkWave(r.deps, {
      step: "checkWave",
      taskId: task.id,
      rackId: task.rackId,
      settings,
      groups: [together],
      cursor: cursorAt(0),
      wave,
      sendNext: "wait",
    }) as Promise<WavePlan>;

  it("never sent (no entry: the wait failed before its write): the check sends the step itself from a fresh window, and its wave is no longer unsent", async () => {
    const r = rig();
    await r.h.create();
    const plan = await check(r, { ...madeWave(), deadline: 1_000 + TIMEOUT_MS });
    expect(r.h.published.map((p) => [p.componentId, (p.command as UpdateCommand).requestId])).toEqual([
      ["c1", requestId("c1")],
      ["c2", requestId("c2")],
    ]);
    expect(r.opened).toEqual([undefined]);
    expect(plan.cursor).toEqual(cursorAt(0));
    expect(plan.wave).toMatchObject({ componentIds: ["c1", "c2"], done: false, polls: 0 });
    expect(plan.wave.deadline).toBe(5_000 + TIMEOUT_MS);
    expect(plan.wave.unsent).toBeUndefined();
  });

  it("sent, its token lost (every entry stored): judged as any wave, nothing sent again, and no longer unsent", async () => {
    const r = rig();
    await r.h.create();
    await r.h.commands.open(task.id, "u", {
      [key("c1")]: { sentAt: 5_000, deadline: 5_000 + TIMEOUT_MS },
      [key("c2")]: { sentAt: 5_000, deadline: 5_000 + TIMEOUT_MS },
    });
    r.opened.length = 0;
    const plan = await check(r, madeWave());
    expect(r.h.published).toEqual([]);
    expect(r.opened).toEqual([]);
    expect(plan.wave).toMatchObject({ componentIds: ["c1", "c2"], done: false, polls: 1 });
    expect(plan.wave.unsent).toBeUndefined();
  });

  it("a sleep comes back unsent after its timeout: judged as a sleep (nothing to send)", async () => {
    const r = rig();
    await r.h.create();
    const sleep: UpgradeGroup = {
      ...together,
      steps: [{ action: "SLEEP", timeoutSeconds: 0, sleepSeconds: 30 }],
    };
    const plan = (await checkWave(r.deps, {
      step: "checkWave",
      taskId: task.id,
      rackId: task.rackId,
      settings,
      groups: [sleep],
      cursor: { ...cursorAt(0), more: false },
      wave: { ...madeWave(), action: "SLEEP", timeoutSeconds: 30, deadline: 35_000 },
      sendNext: "wait",
    })) as WavePlan;
    expect(plan.wave).toMatchObject({ action: "SLEEP", done: false, polls: 1, waitSeconds: 30 });
    expect(plan.wave.unsent).toBeUndefined();
    expect(r.opened).toEqual([]);
  });
});
