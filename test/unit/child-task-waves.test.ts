/**
 * The wave steps (src/app/child-task/waves.ts) on in-memory stores typed from the ports.
 * SendWave from the plan alone: the preflight freezes what the waves need into each group
 * (`groupFacts`), so a wave reads no task; a task ended from outside closes its command sets, so a
 * wave still in flight sends nothing; a group made before the facts existed reads the task as
 * before. CheckWave: the last step of the last wave reads the task with its sets in one request and
 * records the task's outcome itself; every other check reads the wave's set alone.
 */
import { describe, expect, it } from "vitest";
import { knownLeaseEnd } from "../../src/app/child-task/lock.js";
import type { UpgradeGroup, WaveState } from "../../src/app/child-task/settings.js";
import { checkWave } from "../../src/app/child-task/wave-check.js";
import { awaitWave, groupFacts, sendWave } from "../../src/app/child-task/waves.js";
import type { UpdateCommand } from "../../src/domain/bmc-protocol.js";
import type { CommandSet } from "../../src/domain/command-sets.js";
import { commandRequestId, entryKey, updateAddress } from "../../src/domain/command-sets.js";
import { parseReport } from "../../src/domain/task-report.js";
import { event, group, harness, settings, task } from "../support/child-task-wave-harness.js";

describe("SendWave from the plan", () => {
  it("groupFacts: each component's type, target and sub-targets as the report says, the run and the lock's known lease", () => {
    expect(groupFacts(task, parseReport(task.report), ["c1", "c2"], settings)).toEqual({
      types: { c1: "COMPUTE", c2: "COMPUTE" },
      versions: { c1: "2.1.0", c2: "2.0.0" },
      subTargets: { c2: ["bios"] },
      runId: "run-1",
      leaseEnd: knownLeaseEnd(task, settings),
    });
    const plain = { ...task, startedAt: undefined, runId: undefined };
    expect(groupFacts(plain, parseReport(task.report), ["p1"], settings)).toEqual({
      types: { p1: "POWERSHELF" },
      versions: { p1: "2.0.0" },
    });
  });

  it("with the group's facts it reads no task: each component gets its frozen version and sub-targets, sealed with the run's credentials", async () => {
    const h = harness();
    const facts = groupFacts(task, parseReport(task.report), ["c1", "c2"], settings);
    // The task item is not even there: nothing reads it.
    const wave = await sendWave(h.deps, event(group(facts)));
    expect(h.reads()).toBe(0);
    expect(wave).toMatchObject({ componentIds: ["c1", "c2"], versions: { c1: "2.1.0", c2: "2.0.0" } });
    const sent = h.published.map(({ componentId, command }) => {
      const u = command as UpdateCommand;
      return [componentId, u.targetVersion, u.subTargets, u.auth];
    });
    expect(sent).toEqual([
      ["c1", "2.1.0", undefined, { sealed: "sealed:s3cret" }],
      ["c2", "2.0.0", ["bios"], { sealed: "sealed:s3cret" }],
    ]);
  });

  it("a task ended from outside (its command sets closed) makes a wave still in flight send nothing: TaskEnded", async () => {
    const h = harness();
    const facts = groupFacts(task, parseReport(task.report), ["c1", "c2"], settings);
    await h.commands.close(task.id, 4_000, []);
    const err = await sendWave(h.deps, event(group(facts))).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: "TaskEnded", message: "task t-1 already ended" });
    expect(h.published).toEqual([]);
    expect((await h.commands.get(task.id, "u"))?.entries).toEqual({});
  });

  it("a group from before the facts reads the task: what it says is sent, and an ended task sends nothing", async () => {
    const h = harness();
    await h.create();
    await sendWave(h.deps, event(group(undefined)));
    expect(h.reads()).toBe(1);
    expect(h.published.map((p) => (p.command as UpdateCommand).targetVersion)).toEqual(["2.1.0", "2.0.0"]);

    const ended = harness({ ...task, status: "TERMINATED" });
    await ended.create();
    const err = await sendWave(ended.deps, event(group(undefined))).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: "TaskEnded", message: "task t-1 already ended (TERMINATED)" });
    expect(ended.published).toEqual([]);
  });
});

describe("CheckWave", () => {
  const one = (componentIds: string[], inventoryAt?: Record<string, number>): UpgradeGroup => ({
    stage: 0,
    name: "compute",
    componentIds,
    maxParallel: 1,
    steps: [{ action: "UPDATE_FIRMWARE", timeoutSeconds: 0, sleepSeconds: 0 }],
    ...(inventoryAt === undefined ? {} : { facts: { types: {}, versions: {}, inventoryAt } }),
  });
  /** The check of wave `w` of a group of c1 then c2 (one at a time), both already sent. */
  async function checkOf(
    h: ReturnType<typeof harness>,
    w: number,
    ok = true,
    sendNext = false,
    inventoryAt?: Record<string, number>,
  ) {
    const id = w === 0 ? "c1" : "c2";
    const address = updateAddress(task.id, 0);
    await h.commands.open(task.id, "u", {
      [entryKey(address, id)]: { sentAt: 4_000, deadline: 9_000 },
    });
    await h.commands.record(task.id, "u", {
      [entryKey(address, id)]: {
        result: {
          // c2 is flashed with its sub-target (the report says so): its result names it.
          value: ok
            ? w === 0
              ? { ok: true as const, version: "2.1.0" }
              : { ok: true as const, version: "2.0.0", subTargets: ["bios"] }
            : {
                ok: false as const,
                version: "1.0.0",
                error: { code: "FLASH_FAILED", message: "flash failed" },
              },
          at: 4_500,
        },
        ackedAt: 4_100,
      },
    });
    h.calls.length = 0;
    return checkWave(h.deps, {
      step: "checkWave",
      taskId: task.id,
      rackId: task.rackId,
      settings,
      groups: [one(["c1", "c2"], inventoryAt)],
      cursor: { group: 0, wave: w, step: 0, attempt: 0, more: true, retry: false, waitSeconds: 0 },
      wave: {
        stage: 0,
        step: 0,
        action: "UPDATE_FIRMWARE",
        attempt: 0,
        timeoutSeconds: 60,
        componentIds: [id],
        types: { [id]: "COMPUTE" },
        versions: { [id]: w === 0 ? "2.1.0" : "2.0.0" },
        ...(w === 0 ? {} : { subTargets: { c2: ["bios"] } }),
        deadline: 9_000,
        polls: 0,
        waitSeconds: 1,
        done: false,
        pending: 0,
      } as never,
      ...(sendNext ? { sendNext } : {}),
    });
  }

  it("a wave before the last reads its set alone and records nothing", async () => {
    const h = harness();
    await h.create();
    const plan = await checkOf(h, 0);
    expect(h.calls).toEqual(["get u"]);
    expect(plan).toMatchObject({ cursor: { wave: 1, more: true } });
    expect("ended" in plan).toBe(false);
    expect((await h.stored())?.status).toBe("RUNNING");
  });

  it("with sendNext, a done wave before the last starts the next one in the same call: its update published, the plan's wave pending; a retried check sends it again under the same request id", async () => {
    const h = harness();
    await h.create();
    const plan = await checkOf(h, 0, true, true);
    const address = updateAddress(task.id, 0);
    expect(plan).toMatchObject({
      cursor: { wave: 1, step: 0, more: true, retry: false },
      wave: { componentIds: ["c2"], action: "UPDATE_FIRMWARE", done: false, polls: 0 },
    });
    expect(
      h.published.map((p) => [p.componentId, p.command.type, (p.command as UpdateCommand).requestId]),
    ).toEqual([["c2", "update", commandRequestId(address, "c2")]]);
    const entry = (await h.commands.get(task.id, "u"))?.entries[entryKey(address, "c2")];
    expect(entry).toMatchObject({ sentAt: 5_000 });
    // The Lambda retried (it crashed after publishing): the same judgement, the same command again.
    const again = await checkOf(h, 0, true, true);
    expect(again).toEqual(plan);
    expect(h.published.map((p) => (p.command as UpdateCommand).requestId)).toEqual([
      commandRequestId(address, "c2"),
      commandRequestId(address, "c2"),
    ]);
    expect((await h.stored())?.status).toBe("RUNNING");
  });

  it("with sendNext, a failed wave starts nothing (ComponentsFailed) and the last wave nothing after it", async () => {
    const h = harness();
    await h.create();
    await expect(checkOf(h, 0, false, true)).rejects.toMatchObject({ name: "ComponentsFailed" });
    expect(h.published).toEqual([]);
    const g = harness();
    await g.create();
    await checkOf(g, 0);
    const plan = await checkOf(g, 1, true, true);
    expect(plan).toMatchObject({ ended: "COMPLETED", cursor: { more: false }, wave: { done: true } });
    expect(g.published).toEqual([]);
  });

  it("the last wave's check reads the task with its update set in one request and records the task COMPLETED itself", async () => {
    const h = harness();
    await h.create();
    await checkOf(h, 0);
    const plan = await checkOf(h, 1);
    expect(h.calls).toEqual(["getWithTask u"]);
    expect(plan).toMatchObject({ ended: "COMPLETED", cursor: { more: false } });
    const ended = await h.stored();
    expect(ended).toMatchObject({ status: "COMPLETED", message: "upgraded 2 components to 2.0.0, 2.1.0" });
    const byId = parseReport(ended?.report ?? "").components.sort((a, b) => a.id.localeCompare(b.id));
    expect(byId.map((c) => [c.id, c.status, c.versionAfter])).toEqual([
      ["c1", "COMPLETED", "2.1.0"],
      ["c2", "COMPLETED", "2.0.0"],
      ["p1", "NOT_ATTEMPTED", undefined],
    ]);
  });

  it("the last check records the verified versions where the plan says the preflight saw each component in the inventory (no read of the rack); a plan without them, without", async () => {
    const h = harness();
    await h.create();
    await checkOf(h, 0, true, false, { c1: 7, c2: 3 });
    await checkOf(h, 1, true, false, { c1: 7, c2: 3 });
    expect(h.recorded).toEqual([
      {
        rackId: task.rackId,
        versions: [
          { componentId: "c1", version: "2.1.0" },
          { componentId: "c2", version: "2.0.0" },
        ],
        at: { c1: 7, c2: 3 },
      },
    ]);
    const g = harness();
    await g.create();
    await checkOf(g, 0);
    await checkOf(g, 1);
    expect(g.recorded.map((r) => r.at)).toEqual([{}]);
  });

  it("the last wave failing ends nothing there: ComponentsFailed, for the state machine's RecordFailure", async () => {
    const h = harness();
    await h.create();
    await checkOf(h, 0);
    const err = await checkOf(h, 1, false).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: "ComponentsFailed" });
    expect((await h.stored())?.status).toBe("RUNNING");
  });

  it("a task found cancelled at the last check stops the wave as it is, recording nothing", async () => {
    const cancelled = { ...task, status: "TERMINATED" as const, message: "task cancelled" };
    const h = harness(cancelled);
    await h.create();
    const plan = await checkOf(h, 1);
    // The loop stops where it was: the wave not judged, the cursor not moved.
    expect(plan).toMatchObject({ ended: "TERMINATED", cursor: { wave: 1 }, wave: { done: false } });
    // …and the task is as the cancel left it.
    expect(await h.stored()).toEqual(cancelled);
  });
});

describe("AwaitWave: the wave waits for its results, woken when they are in", () => {
  const address = updateAddress(task.id, 0);
  const keys = [entryKey(address, "c1"), entryKey(address, "c2")];
  const waveOf = (action: "UPDATE_FIRMWARE" | "SLEEP" = "UPDATE_FIRMWARE"): WaveState => ({
    stage: 0,
    step: 0,
    action,
    attempt: 0,
    timeoutSeconds: 60,
    componentIds: ["c1", "c2"],
    types: { c1: "COMPUTE", c2: "COMPUTE" },
    versions: { c1: "2.1.0", c2: "2.0.0" },
    deadline: 65_000,
    polls: 0,
    waitSeconds: 10,
    done: false,
  });
  function withWaker(h: ReturnType<typeof harness>) {
    const woken: string[] = [];
    const deps = {
      ...h.deps,
      waveWaker: {
        wake: async (token: string) => void woken.push(token),
        heartbeat: async () => {},
        fail: async () => {},
      },
    };
    const call = (token: string, action?: "SLEEP") =>
      awaitWave(deps, { step: "awaitWave", taskId: task.id, token, wave: { ...waveOf(action) } });
    return { woken, call };
  }
  async function sent(h: ReturnType<typeof harness>) {
    await h.commands.open(task.id, "u", {
      [keys[0] as string]: { sentAt: 4_000, deadline: 65_000 },
      [keys[1] as string]: { sentAt: 4_000, deadline: 65_000 },
    });
  }
  const result = { value: { ok: true as const, version: "2.1.0" }, at: 4_500 };

  it("stores its token and the wave's entries on the set, and waits: nothing is woken yet", async () => {
    const h = harness();
    await sent(h);
    const { woken, call } = withWaker(h);
    expect(await call("tk-a")).toEqual({ woken: false });
    expect(woken).toEqual([]);
    expect((await h.commands.get(task.id, "u"))?.wake).toEqual({ token: "tk-a", keys });
    // A later wait (after a check that found the wave pending) replaces it.
    expect(await call("tk-b")).toEqual({ woken: false });
    expect((await h.commands.get(task.id, "u"))?.wake?.token).toBe("tk-b");
  });

  it("stores the wait's heartbeat with it (awaitSeconds, the HeartbeatSecondsPath of a wave with awaitTimeoutSeconds) and its start (the step's clock); a wave made before heartbeats has neither stored", async () => {
    const h = harness();
    await sent(h);
    const deps = {
      ...h.deps,
      waveWaker: { wake: async () => {}, heartbeat: async () => {}, fail: async () => {} },
    };
    const wait = (token: string, wave: WaveState) =>
      awaitWave(deps, { step: "awaitWave", taskId: task.id, token, wave });
    await wait("tk-h", { ...waveOf(), awaitSeconds: 300, awaitTimeoutSeconds: 1_800 });
    expect((await h.commands.get(task.id, "u"))?.wake).toEqual({
      token: "tk-h",
      keys,
      heartbeatSeconds: 300,
      startedAt: 5_000,
    });
    await wait("tk-o", { ...waveOf(), awaitSeconds: 300 });
    expect((await h.commands.get(task.id, "u"))?.wake).toStrictEqual({ token: "tk-o", keys });
  });

  it("results already in (a fast BMC, before the token was stored): it wakes the execution itself", async () => {
    const h = harness();
    await sent(h);
    await h.commands.record(task.id, "u", { [keys[0] as string]: { result } });
    await h.commands.record(task.id, "u", { [keys[1] as string]: { result } });
    const { woken, call } = withWaker(h);
    expect(await call("tk-c")).toEqual({ woken: true });
    expect(woken).toEqual(["tk-c"]);
  });

  it("a closed set (the task ended from outside) wakes nothing: its execution is being stopped, and a check would only wait again", async () => {
    const h = harness();
    await sent(h);
    await h.commands.close(task.id, 6_000, []);
    const { woken, call } = withWaker(h);
    expect(await call("tk-d")).toEqual({ woken: false });
    expect(woken).toEqual([]);
  });

  it("a sleep waits out its timeout: no set is written, nothing woken; without a waker nothing is written either", async () => {
    const h = harness();
    await sent(h);
    const { woken, call } = withWaker(h);
    expect(await call("tk-e", "SLEEP")).toEqual({ woken: false });
    expect(woken).toEqual([]);
    expect((await h.commands.get(task.id, "u"))?.wake).toBeUndefined();
    // No set at all (nothing sent for this wave): nothing to wake for either.
    const unsent = withWaker(harness());
    expect(await unsent.call("tk-g")).toEqual({ woken: false });
    expect(unsent.woken).toEqual([]);
    const bare = await awaitWave(h.deps, {
      step: "awaitWave",
      taskId: task.id,
      token: "tk-f",
      wave: { ...waveOf() },
    });
    expect(bare).toEqual({ woken: false });
    expect((await h.commands.get(task.id, "u"))?.wake).toBeUndefined();
  });
});

describe("the update set in parts", () => {
  const first = { group: 0, wave: 0, step: 0, attempt: 0, more: true, retry: false, waitSeconds: 0 };
  const factsOf = (ids: string[]) => groupFacts(task, parseReport(task.report), ids, settings);
  /** c1's and c2's updates passed (c2 flashed with its sub-target, as the report says), in `part`. */
  async function passed(h: ReturnType<typeof harness>, part: number) {
    const address = updateAddress(task.id, 0, part);
    const value = {
      c1: { ok: true as const, version: "2.1.0" },
      c2: { ok: true as const, version: "2.0.0", subTargets: ["bios"] },
    };
    for (const id of ["c1", "c2"] as const) {
      const out = await h.commands.record(
        task.id,
        "u",
        { [entryKey(address, id)]: { result: { value: value[id], at: 5_000 }, ackedAt: 4_900 } },
        { part },
      );
      expect(out.outcome).toBe("written");
    }
  }
  const check = (h: ReturnType<typeof harness>, groups: UpgradeGroup[], wave: WaveState, cursor = first) =>
    checkWave(h.deps, {
      step: "checkWave",
      taskId: task.id,
      rackId: task.rackId,
      settings,
      groups,
      cursor,
      wave,
    });
  /** A waker that records what it is handed. */
  function waking(h: ReturnType<typeof harness>) {
    const woken: { token: string; answers: CommandSet }[] = [];
    const deps = {
      ...h.deps,
      waveWaker: {
        wake: async (token: string, answers: CommandSet) => void woken.push({ token, answers }),
        heartbeat: async () => {},
        fail: async () => {},
      },
    };
    const wait = (token: string, wave: WaveState) =>
      awaitWave(deps, { step: "awaitWave", taskId: task.id, token, wave });
    return { woken, wait };
  }

  it("a group with a part: its wave's commands, wait and check in that part (the request ids name it); the last check reads the task with every part", async () => {
    const h = harness();
    await h.create();
    const g: UpgradeGroup = { ...group(factsOf(["c1", "c2"])), stage: 2, part: 2 };
    const wave = await sendWave(h.deps, event(g));
    expect(wave.part).toBe(2);
    const address = updateAddress(task.id, 0, 2);
    const keys = ["c1", "c2"].map((id) => entryKey(address, id));
    expect(Object.keys((await h.commands.get(task.id, "u", 2))?.entries ?? {}).sort()).toEqual(
      [...keys].sort(),
    );
    expect(await h.commands.get(task.id, "u")).toBeUndefined();
    expect(h.published.map((p) => p.command.requestId)).toEqual(
      ["c1", "c2"].map((id) => commandRequestId(address, id)),
    );
    expect(h.published[0]?.command.requestId).toMatch(/\.u0p2\.[0-9a-f]{12}$/);

    const { woken, wait } = waking(h);
    expect(await wait("tk-p", wave)).toEqual({ woken: false });
    expect(woken).toEqual([]);
    expect((await h.commands.get(task.id, "u", 2))?.wake).toEqual({
      token: "tk-p",
      keys,
      heartbeatSeconds: wave.awaitSeconds,
      startedAt: 5_000,
    });

    await passed(h, 2);
    h.calls.length = 0;
    const plan = await check(h, [g], wave);
    // The task and every part (no first record: every group's updates are in parts).
    expect(h.calls).toEqual(["getWithTask u.2"]);
    expect(plan).toMatchObject({ ended: "COMPLETED" });
    const ended = parseReport((await h.stored())?.report ?? "").components.filter((c) => c.id !== "p1");
    expect(ended.map((c) => [c.id, c.status, c.requestId])).toEqual(
      ["c1", "c2"].map((id) => [id, "COMPLETED", commandRequestId(address, id)]),
    );
  });

  it("a wave before the last checks its part alone", async () => {
    const h = harness();
    const g: UpgradeGroup = { ...group(factsOf(["c1", "c2"])), stage: 1, part: 1, maxParallel: 1 };
    const wave = await sendWave(h.deps, event(g));
    h.calls.length = 0;
    const plan = await check(h, [g], wave);
    expect(h.calls).toEqual(["get u.1"]);
    expect(plan).toMatchObject({ wave: { done: false, part: 1 } });
  });

  it("a check woken with the answers it waited for reads nothing; answers of another wave, or incomplete, are read past", async () => {
    const h = harness();
    const g: UpgradeGroup = { ...group(factsOf(["c1", "c2"])), stage: 1, part: 1 };
    const wave = await sendWave(h.deps, event(g));
    const keys = ["c1", "c2"].map((id) => entryKey(updateAddress(task.id, 0, 1), id));
    const { woken, wait } = waking(h);
    await wait("tk-w", wave);
    await passed(h, 1);
    // The wait is woken by its own step here (the results were in first): with what it waited for.
    await wait("tk-w2", wave);
    const answers = woken[0]?.answers as CommandSet;
    expect(woken.map((w) => w.token)).toEqual(["tk-w2"]);
    expect(Object.keys(answers.entries).sort()).toEqual([...keys].sort());
    expect(answers).toMatchObject({ taskId: task.id, family: "u", part: 1 });
    // Two groups: this is not the last wave, so only the wave's set is needed.
    const groups = [g, { ...g, stage: 2, part: 2, componentIds: ["p1"] }];
    h.calls.length = 0;
    const plan = (await check(h, groups, { ...wave, answers })) as {
      wave: WaveState;
      cursor: { group: number };
    };
    expect(h.calls).toEqual([]);
    expect(plan.wave.done).toBe(true);
    expect(plan.cursor.group).toBe(1);
    expect("answers" in plan.wave).toBe(false);
    // Another part's, or missing one of the wave's entries: the check reads the set.
    for (const other of [
      { ...answers, part: 2 },
      { ...answers, entries: { [keys[0] as string]: answers.entries[keys[0] as string] } },
    ] as CommandSet[]) {
      h.calls.length = 0;
      expect(((await check(h, groups, { ...wave, answers: other })) as { wave: WaveState }).wave.done).toBe(
        true,
      );
      expect(h.calls).toEqual(["get u.1"]);
    }
  });

  it("the last wave woken with its answers still reads its own part with the task (it holds the stage's other waves and attempts)", async () => {
    const h = harness();
    await h.create();
    const g: UpgradeGroup = { ...group(factsOf(["c1", "c2"])), stage: 2, part: 2 };
    const wave = await sendWave(h.deps, event(g));
    await passed(h, 2);
    const { woken, wait } = waking(h);
    await wait("tk-l", wave);
    h.calls.length = 0;
    const plan = await check(h, [g], { ...wave, answers: woken[0]?.answers as CommandSet });
    expect(h.calls).toEqual(["getWithTask u.2"]);
    expect(plan).toMatchObject({ ended: "COMPLETED" });
    const ended = parseReport((await h.stored())?.report ?? "").components.filter((c) => c.id !== "p1");
    expect(ended.map((c) => [c.id, c.status, c.versionAfter])).toEqual([
      ["c1", "COMPLETED", "2.1.0"],
      ["c2", "COMPLETED", "2.0.0"],
    ]);
  });

  it("the last check reads the task and every stage's part, earlier ones with its own, in one strongly consistent request", async () => {
    const h = harness();
    await h.create();
    const g0: UpgradeGroup = {
      ...group(factsOf(["p1"])),
      stage: 0,
      part: 0,
      name: "powershelf",
      componentIds: ["p1"],
    };
    const g2: UpgradeGroup = { ...group(factsOf(["c1", "c2"])), stage: 2, part: 2 };
    // Stage 0 sent and passed a stage before.
    const w0 = await sendWave(h.deps, { ...event(g0), groups: [g0, g2] });
    expect(w0.part).toBe(0);
    await h.commands.record(
      task.id,
      "u",
      {
        [entryKey(updateAddress(task.id, 0, 0), "p1")]: {
          result: { value: { ok: true, version: "2.0.0" }, at: 4_800 },
        },
      },
      { part: 0 },
    );
    const cursor = { ...first, group: 1 };
    const wave = await sendWave(h.deps, { ...event(g2), groups: [g0, g2], cursor });
    await passed(h, 2);
    h.calls.length = 0;
    const plan = await check(h, [g0, g2], wave, cursor);
    expect(h.calls).toEqual(["getWithTask u.0,u.2"]);
    expect(plan).toMatchObject({ ended: "COMPLETED" });
    const ended = parseReport((await h.stored())?.report ?? "").components;
    expect(ended.map((c) => [c.id, c.status]).sort()).toEqual([
      ["c1", "COMPLETED"],
      ["c2", "COMPLETED"],
      ["p1", "COMPLETED"],
    ]);
  });
});
