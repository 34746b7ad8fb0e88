/**
 * The receiving half of the child task: BMC reports in the batches the queue delivers
 * (createReportRecorder, on the in-memory command set store typed from the port) and execution
 * endings as Step Functions reports them (reconcileExecutionEnd).
 */
import { describe, expect, it } from "vitest";
import {
  type ExecutionEnding,
  type OutcomeDeps,
  reconcileExecutionEnd,
} from "../../src/app/child-task/outcome.js";
import { createBmcResultReceiver, createReportRecorder } from "../../src/app/child-task/receiving.js";
import { lineLogger } from "../../src/app/observability.js";
import type { CommandSetStore, RackLockStore, RunStore, TaskStore } from "../../src/app/ports.js";
import {
  type CommandSet,
  commandRequestId,
  entryKey,
  FIRST_PROGRESS_AFTER_ACK_MS,
  HEARTBEAT_INTERVAL_MS,
  newEntry,
  PROGRESS_WRITE_INTERVAL_MS,
  queryAddress,
  updateAddress,
} from "../../src/domain/command-sets.js";
import type { Task } from "../../src/domain/task.js";
import { initialReport, serializeReport } from "../../src/domain/task-report.js";
import { memoryCommandSetStore } from "../support/memory-child-task.js";

const TASK = "7a5c0000-0000-4000-8000-000000000001";
const U = updateAddress(TASK, 0);
const Q = queryAddress(TASK, 0);

/** A command set store holding update commands for c1 and c2 and a query for c1, all published. */
async function sentCommands() {
  const store = memoryCommandSetStore();
  const window = { sentAt: 0, deadline: 600_000 };
  await store.open(TASK, "u", Object.fromEntries([newEntry(U, "c1", window), newEntry(U, "c2", window)]));
  await store.open(TASK, "q", Object.fromEntries([newEntry(Q, "c1", window)]));
  store.writes = 0;
  const entry = async (address: typeof U, componentId: string) =>
    (await store.get(TASK, address.family))?.entries[entryKey(address, componentId)];
  return { store, entry };
}

const report = (componentId: string, address: typeof U, event: Record<string, unknown>) => ({
  v: 1,
  requestId: commandRequestId(address, componentId),
  componentId,
  ...event,
});

/**
 * A WaveWaker that records its wake-ups and heartbeats; `failing` wake-ups and `failingBeats`
 * heartbeats throw (the service unreachable).
 */
function recordingWaker(failing = 0, failingBeats = 0) {
  const woken: string[] = [];
  const beats: string[] = [];
  const answers: CommandSet[] = [];
  let fail = failing;
  let failBeats = failingBeats;
  return {
    woken,
    beats,
    answers,
    wake: async (token: string, with_: CommandSet) => {
      if (fail > 0) {
        fail -= 1;
        throw new Error("Step Functions unreachable");
      }
      woken.push(token);
      answers.push(with_);
    },
    heartbeat: async (token: string) => {
      if (failBeats > 0) {
        failBeats -= 1;
        throw new Error("Step Functions unreachable");
      }
      beats.push(token);
    },
  };
}

const done = (componentId: string) => report(componentId, U, { type: "result", ok: true, version: "2.0.0" });

describe("the report recorder wakes a waiting wave (AwaitWave) once its results are in", () => {
  it("the batch that stores the last awaited result wakes the execution, once; earlier ones do not", async () => {
    const { store } = await sentCommands();
    await store.awaitAnswers(TASK, "u", { token: "tk-1", keys: [entryKey(U, "c1"), entryKey(U, "c2")] });
    const waker = recordingWaker();
    const recorder = createReportRecorder(store, undefined, waker);
    // Progress and c1's result: c2 is still out.
    expect(
      await recorder.record([{ message: report("c2", U, { type: "progress", percent: 50 }), at: 5 }]),
    ).toEqual(["recorded"]);
    expect(await recorder.record([{ message: done("c1"), at: 6 }])).toEqual(["recorded"]);
    expect(waker.woken).toEqual([]);
    expect(await recorder.record([{ message: done("c2"), at: 7 }])).toEqual(["recorded"]);
    expect(waker.woken).toEqual(["tk-1"]);
    // A duplicate of the last result (redelivered) changes nothing and wakes nothing again.
    expect(await recorder.record([{ message: done("c2"), at: 8 }])).toEqual(["ignored"]);
    expect(waker.woken).toEqual(["tk-1"]);
  });

  it("reports on a part of the update set land there (their request ids name it), apart from the first record's, and wake its wait", async () => {
    const { store } = await sentCommands();
    const P = updateAddress(TASK, 0, 2);
    const window = { sentAt: 0, deadline: 600_000 };
    await store.open(
      TASK,
      "u",
      Object.fromEntries([newEntry(P, "c3", window), newEntry(P, "c4", window)]),
      2,
    );
    await store.awaitAnswers(TASK, "u", { token: "tk-p", keys: [entryKey(P, "c3"), entryKey(P, "c4")] }, 2);
    store.writes = 0;
    const waker = recordingWaker();
    const recorder = createReportRecorder(store, undefined, waker);
    const result = { type: "result", ok: true, version: "2.0.0" };
    // One batch: results for both parted commands and c1's (the first record): one write per record.
    expect(
      await recorder.record([
        { message: report("c3", P, result), at: 5 },
        { message: report("c4", P, result), at: 5 },
        { message: done("c1"), at: 5 },
      ]),
    ).toEqual(["recorded", "recorded", "recorded"]);
    expect(store.writes).toBe(2);
    expect(waker.woken).toEqual(["tk-p"]);
    // …with the answers it waited for, as stored (the check reads nothing more).
    expect(waker.answers).toEqual([
      {
        taskId: TASK,
        family: "u",
        part: 2,
        entries: Object.fromEntries(
          ["c3", "c4"].map((id) => [
            entryKey(P, id),
            { ...window, ackedAt: 5, result: { ok: true, version: "2.0.0" }, resultAt: 5 },
          ]),
        ),
      },
    ]);
    expect((await store.get(TASK, "u", 2))?.entries[entryKey(P, "c3")]?.result).toEqual({
      ok: true,
      version: "2.0.0",
    });
    expect((await store.get(TASK, "u"))?.entries[entryKey(U, "c1")]?.result).toEqual({
      ok: true,
      version: "2.0.0",
    });
    // The same command's report naming another part (or none) finds no entry there: not ours.
    expect(
      await recorder.record([{ message: report("c3", updateAddress(TASK, 0, 3), result), at: 6 }]),
    ).toEqual(["ignored"]);
    expect(await recorder.record([{ message: report("c3", U, result), at: 6 }])).toEqual(["ignored"]);
  });

  it("a wake-up that may not have gone out fails the batch's reports; redelivered, their write is refused and the wake-up sent", async () => {
    const { store } = await sentCommands();
    await store.awaitAnswers(TASK, "u", { token: "tk-2", keys: [entryKey(U, "c1")] });
    const waker = recordingWaker(1);
    const recorder = createReportRecorder(store, undefined, waker);
    const [first] = await recorder.record([{ message: done("c1"), at: 6 }]);
    expect(first).toMatchObject({ error: expect.any(Error) });
    expect(waker.woken).toEqual([]);
    // The result itself was stored; the queue delivers the report again, to another container.
    expect((await store.get(TASK, "u"))?.entries[entryKey(U, "c1")]?.resultAt).toBe(6);
    const other = createReportRecorder(store, undefined, waker);
    expect(await other.record([{ message: done("c1"), at: 9 }])).toEqual(["ignored"]);
    expect(waker.woken).toEqual(["tk-2"]);
  });

  it("no waiting execution, or reports that store no result: nothing is woken", async () => {
    const { store } = await sentCommands();
    const waker = recordingWaker();
    const recorder = createReportRecorder(store, undefined, waker);
    await recorder.record([
      { message: done("c1"), at: 6 },
      { message: done("c2"), at: 6 },
    ]);
    expect(waker.woken).toEqual([]);
    const { store: waiting } = await sentCommands();
    await waiting.awaitAnswers(TASK, "u", {
      token: "tk-3",
      keys: [entryKey(U, "c1")],
      heartbeatSeconds: 300,
    });
    await createReportRecorder(waiting, undefined, waker).record([
      { message: report("c1", U, { type: "ack" }), at: 5 },
      { message: report("c1", U, { type: "progress", percent: 90 }), at: 6 },
    ]);
    expect(waker.woken).toEqual([]);
    // The ack and progress keep the wait alive instead: one heartbeat for the batch.
    expect(waker.beats).toEqual(["tk-3"]);
  });
});

describe("the report recorder keeps a waiting wave's wait alive (AwaitWave's heartbeat) while its BMCs report", () => {
  it("a batch storing an acknowledgement or progress of an awaited entry sends one heartbeat for its set, the first in its heartbeat interval; the batch completing the wait wakes it instead", async () => {
    const { store } = await sentCommands();
    await store.awaitAnswers(TASK, "u", {
      token: "tk-h",
      keys: [entryKey(U, "c1"), entryKey(U, "c2")],
      heartbeatSeconds: 300,
    });
    const waker = recordingWaker();
    const recorder = createReportRecorder(store, undefined, waker);
    // Both BMCs acknowledge in one batch: one write, one heartbeat (not one per report).
    expect(
      await recorder.record([
        { message: report("c1", U, { type: "ack" }), at: 1 },
        { message: report("c2", U, { type: "ack" }), at: 1 },
      ]),
    ).toEqual(["recorded", "recorded"]);
    expect(waker.beats).toEqual(["tk-h"]);
    // Progress past the coalescing window: stored, but in the ack's minute: no heartbeat.
    const later = 1 + FIRST_PROGRESS_AFTER_ACK_MS + PROGRESS_WRITE_INTERVAL_MS;
    expect(
      await recorder.record([{ message: report("c1", U, { type: "progress", percent: 25 }), at: later }]),
    ).toEqual(["recorded"]);
    expect(waker.beats).toEqual(["tk-h"]);
    // The next minute's first write keeps the wait alive again.
    const minute = HEARTBEAT_INTERVAL_MS;
    expect(
      await recorder.record([{ message: report("c2", U, { type: "progress", percent: 25 }), at: minute }]),
    ).toEqual(["recorded"]);
    expect(waker.beats).toEqual(["tk-h", "tk-h"]);
    // A duplicate that writes nothing sends nothing.
    expect(
      await recorder.record([
        { message: report("c1", U, { type: "progress", percent: 25 }), at: 2 * minute + 1 },
      ]),
    ).toEqual(["ignored"]);
    expect(waker.beats).toEqual(["tk-h", "tk-h"]);
    // c1's result: the wait is still open for c2, so a heartbeat (a minute on); c2's completes it: a wake-up only.
    expect(await recorder.record([{ message: done("c1"), at: 2 * minute + 2 }])).toEqual(["recorded"]);
    expect(waker.beats).toEqual(["tk-h", "tk-h", "tk-h"]);
    expect(await recorder.record([{ message: done("c2"), at: 3 * minute + 3 }])).toEqual(["recorded"]);
    expect(waker.woken).toEqual(["tk-h"]);
    expect(waker.beats).toEqual(["tk-h", "tk-h", "tk-h"]);
    expect(waker.answers).toHaveLength(1);
  });

  it("batches of the same interval dealt to other receivers (the pollers' Lambda containers, sharing nothing): one heartbeat among them, decided by the record's writes; the next interval's first sends the next", async () => {
    const { store } = await sentCommands();
    await store.awaitAnswers(TASK, "u", {
      token: "tk-m",
      keys: [entryKey(U, "c1"), entryKey(U, "c2")],
      heartbeatSeconds: 300,
    });
    const waker = recordingWaker();
    const [first, second, third] = [0, 1, 2].map(() => createReportRecorder(store, undefined, waker));
    // The same moment's acknowledgements, in two batches at once.
    const outcomes = await Promise.all([
      first?.record([{ message: report("c1", U, { type: "ack" }), at: 10_000 }]),
      second?.record([{ message: report("c2", U, { type: "ack" }), at: 10_000 }]),
    ]);
    expect(outcomes).toEqual([["recorded"], ["recorded"]]);
    expect(waker.beats).toEqual(["tk-m"]);
    // A third receiver's batch later in the same minute: none.
    await third?.record([{ message: report("c1", U, { type: "progress", percent: 25 }), at: 59_999 }]);
    expect(waker.beats).toEqual(["tk-m"]);
    // Progress of both at 150 s, in two batches at once: the minute's first sends one.
    await Promise.all([
      first?.record([{ message: report("c1", U, { type: "progress", percent: 50 }), at: 150_000 }]),
      second?.record([{ message: report("c2", U, { type: "progress", percent: 50 }), at: 150_000 }]),
    ]);
    expect(waker.beats).toEqual(["tk-m", "tk-m"]);
    expect((await store.get(TASK, "u"))?.heard).toEqual({ at: 150_000, before: 150_000 });
  });

  it("no heartbeat for a wait that has none (AwaitPreflight's, on the query set): its answers but the last store and send nothing", async () => {
    const { store } = await sentCommands();
    const window = { sentAt: 0, deadline: 600_000 };
    await store.open(TASK, "q", Object.fromEntries([newEntry(Q, "c2", window)]));
    await store.awaitAnswers(TASK, "q", { token: "tk-q", keys: [entryKey(Q, "c1"), entryKey(Q, "c2")] });
    const waker = recordingWaker();
    const recorder = createReportRecorder(store, undefined, waker);
    const answer = (c: string) => report(c, Q, { type: "status", version: "1.0.0" });
    expect(await recorder.record([{ message: answer("c1"), at: 1 }])).toEqual(["recorded"]);
    expect(waker.beats).toEqual([]);
    expect(await recorder.record([{ message: answer("c2"), at: 2 }])).toEqual(["recorded"]);
    expect([waker.beats, waker.woken]).toEqual([[], ["tk-q"]]);
  });

  it("no heartbeat for reports of entries the wait is not for, nor where no wait is stored", async () => {
    const { store } = await sentCommands();
    await store.awaitAnswers(TASK, "u", { token: "tk-o", keys: [entryKey(U, "c2")], heartbeatSeconds: 300 });
    const waker = recordingWaker();
    const recorder = createReportRecorder(store, undefined, waker);
    expect(await recorder.record([{ message: report("c1", U, { type: "ack" }), at: 1 }])).toEqual([
      "recorded",
    ]);
    // The query set has no wait at all.
    expect(
      await recorder.record([{ message: report("c1", Q, { type: "status", version: "1.0.0" }), at: 1 }]),
    ).toEqual(["recorded"]);
    expect(waker.beats).toEqual([]);
    expect(waker.woken).toEqual([]);
  });

  it("a heartbeat that fails is logged and costs the reports nothing: stored, recorded, not handed back for redelivery", async () => {
    const { store, entry } = await sentCommands();
    await store.awaitAnswers(TASK, "u", { token: "tk-f", keys: [entryKey(U, "c1")], heartbeatSeconds: 300 });
    const lines: string[] = [];
    const waker = recordingWaker(0, 1);
    const recorder = createReportRecorder(
      store,
      lineLogger((line) => lines.push(line)),
      waker,
    );
    expect(await recorder.record([{ message: report("c1", U, { type: "ack" }), at: 4 }])).toEqual([
      "recorded",
    ]);
    expect((await entry(U, "c1"))?.ackedAt).toBe(4);
    expect(waker.beats).toEqual([]);
    expect(lines.join("\n")).toContain("wave heartbeat not sent: its wait may time out into an early check");
  });
});

describe("the report recorder: a batch of reports onto the command sets", () => {
  it("one write per command set per batch: a wave's reports folded, the first result and the highest progress stored", async () => {
    const { store, entry } = await sentCommands();
    const recorder = createReportRecorder(store);
    const outcomes = await recorder.record([
      { message: report("c1", U, { type: "ack" }), at: 10 },
      { message: report("c1", U, { type: "progress", percent: 40 }), at: 11 },
      { message: report("c2", U, { type: "ack" }), at: 12 },
      { message: report("c1", U, { type: "result", ok: true, version: "2.0.0" }), at: 13 },
      {
        message: report("c1", U, {
          type: "result",
          ok: false,
          version: "1.0.0",
          error: { code: "FLASH_FAILED", message: "no" },
        }),
        at: 14,
      },
      { message: report("c1", Q, { type: "status", version: "1.0.0" }), at: 15 },
    ]);
    // The progress (moot once the result is in) and the second result changed nothing.
    expect(outcomes).toEqual(["recorded", "ignored", "recorded", "recorded", "ignored", "recorded"]);
    expect(store.writes).toBe(2); // the update set and the query set, once each
    expect(await entry(U, "c1")).toMatchObject({
      ackedAt: 10,
      result: { ok: true, version: "2.0.0" },
      resultAt: 13,
    });
    expect((await entry(U, "c1"))?.progress).toBeUndefined(); // moot once the result is in
    expect(await entry(U, "c2")).toMatchObject({ ackedAt: 12 });
    expect((await entry(Q, "c1"))?.status).toEqual({ version: "1.0.0" });
  });

  it("progress is coalesced: the first is written, then at most one every PROGRESS_WRITE_INTERVAL_MS; a lower or equal one never", async () => {
    const { store, entry } = await sentCommands();
    const recorder = createReportRecorder(store);
    const progress = (percent: number, at: number) =>
      recorder.record([{ message: report("c1", U, { type: "progress", percent }), at }]);
    expect(await progress(10, 1_000)).toEqual(["recorded"]);
    expect(await progress(30, 1_000 + PROGRESS_WRITE_INTERVAL_MS - 1)).toEqual(["ignored"]);
    expect(store.writes).toBe(1);
    expect(await progress(50, 1_000 + PROGRESS_WRITE_INTERVAL_MS)).toEqual(["recorded"]);
    expect(await progress(50, 1_000 + 3 * PROGRESS_WRITE_INTERVAL_MS)).toEqual(["ignored"]);
    expect(await progress(20, 1_000 + 4 * PROGRESS_WRITE_INTERVAL_MS)).toEqual(["ignored"]);
    expect(store.writes).toBe(2);
    expect(await entry(U, "c1")).toMatchObject({
      progress: 50,
      progressAt: 1_000 + PROGRESS_WRITE_INTERVAL_MS,
      ackedAt: 1_000,
    });
  });

  it("an acknowledgement stored alone: progress in the next FIRST_PROGRESS_AFTER_ACK_MS is not written, later progress and the result are", async () => {
    const { store, entry } = await sentCommands();
    const recorder = createReportRecorder(store);
    const send = (body: Record<string, unknown>, at: number) =>
      recorder.record([{ message: report("c1", U, body), at }]);
    expect(await send({ type: "ack" }, 1_000)).toEqual(["recorded"]);
    expect(await send({ type: "progress", percent: 25 }, 1_075)).toEqual(["ignored"]);
    expect(await send({ type: "progress", percent: 30 }, 1_000 + FIRST_PROGRESS_AFTER_ACK_MS - 1)).toEqual([
      "ignored",
    ]);
    expect(store.writes).toBe(1);
    expect(await send({ type: "progress", percent: 40 }, 1_000 + FIRST_PROGRESS_AFTER_ACK_MS)).toEqual([
      "recorded",
    ]);
    expect(
      await send({ type: "result", ok: true, version: "2.0.0" }, 1_000 + FIRST_PROGRESS_AFTER_ACK_MS + 1),
    ).toEqual(["recorded"]);
    expect(store.writes).toBe(3);
    expect(await entry(U, "c1")).toMatchObject({
      ackedAt: 1_000,
      progress: 40,
      result: { ok: true, version: "2.0.0" },
    });
  });

  it("redelivered and out-of-order reports change nothing: the first result wins, a late progress is dropped, duplicates are not written", async () => {
    const { store, entry } = await sentCommands();
    const recorder = createReportRecorder(store);
    const ok = report("c1", U, { type: "result", ok: true, version: "2.0.0" });
    expect(await recorder.record([{ message: ok, at: 5 }])).toEqual(["recorded"]);
    const failed = report("c1", U, {
      type: "result",
      ok: false,
      version: "1.0.0",
      error: { code: "FLASH_FAILED", message: "no" },
    });
    expect(
      await recorder.record([
        { message: ok, at: 6 },
        { message: failed, at: 7 },
        { message: report("c1", U, { type: "progress", percent: 90 }), at: 8 },
        { message: report("c1", U, { type: "ack" }), at: 9 },
      ]),
    ).toEqual(["ignored", "ignored", "ignored", "ignored"]);
    expect(store.writes).toBe(1);
    expect(await entry(U, "c1")).toMatchObject({
      result: { ok: true, version: "2.0.0" },
      resultAt: 5,
      ackedAt: 5,
    });
  });

  it("a receiver that did not write them (another Lambda container) learns what is stored from the refused write", async () => {
    const { store, entry } = await sentCommands();
    const ok = report("c1", U, { type: "result", ok: true, version: "2.0.0" });
    expect(await createReportRecorder(store).record([{ message: ok, at: 5 }])).toEqual(["recorded"]);
    const cold = createReportRecorder(store);
    // The duplicate result and c2's new ack in one batch: refused once (c1 has its result), then c2 alone.
    expect(
      await cold.record([
        { message: ok, at: 6 },
        { message: report("c2", U, { type: "ack" }), at: 7 },
      ]),
    ).toEqual(["ignored", "recorded"]);
    expect(store.writes).toBe(3);
    expect(await entry(U, "c1")).toMatchObject({ resultAt: 5 });
    expect(await entry(U, "c2")).toMatchObject({ ackedAt: 7 });
  });

  it("refuses a report on another component's command (the entry is the component's), and one for commands nobody sent", async () => {
    const { store, entry } = await sentCommands();
    const lines: string[] = [];
    const recorder = createReportRecorder(
      store,
      lineLogger((l) => lines.push(l)),
    );
    // c2's BMC copies c1's request id: it does not hash to c2's entry.
    const stolen = { ...report("c1", U, { type: "result", ok: true, version: "2.0.0" }), componentId: "c2" };
    const other = updateAddress("7a5c0000-0000-4000-8000-000000000002", 0);
    expect(
      await recorder.record([
        { message: stolen, at: 1 },
        { message: report("c1", other, { type: "ack" }), at: 2 },
        { message: report("c1", U, { type: "status", version: "2.0.0" }), at: 3 },
        {
          message: {
            v: 1,
            type: "ack",
            requestId: "upd-0123456789abcdef0123456789abcdef",
            componentId: "c1",
          },
          at: 4,
        },
      ]),
    ).toEqual(["ignored", "ignored", "ignored", "ignored"]);
    expect((await entry(U, "c1"))?.result).toBeUndefined();
    expect((await entry(U, "c2"))?.result).toBeUndefined();
    expect(lines).toEqual([
      `warn bmc report refused: the request id names another component's command componentId=c2 taskId=${TASK}`,
    ]);
  });

  it("drops what it cannot trust, logging field paths and rules only", async () => {
    const { store } = await sentCommands();
    const lines: string[] = [];
    const recorder = createReportRecorder(
      store,
      lineLogger((l) => lines.push(l)),
    );
    expect(
      await recorder.record([
        { message: { v: 1, type: "ack", requestId: "r" }, at: 1 },
        { message: { v: 4, type: "ack", requestId: "r", componentId: "c" }, at: 1 },
        {
          message: { v: 1, type: "update", requestId: "r", componentId: "c", auth: { ciphertext: "SECRET" } },
          at: 1,
        },
      ]),
    ).toEqual(["invalid", "invalid", "invalid"]);
    expect(store.writes).toBe(0);
    expect(lines).toEqual([
      "warn bmc report dropped: no componentId (the IoT rule adds the topic's component id)",
      "warn bmc report dropped: undecodable componentId=c problem=v: unsupported protocol version 4 (this codec speaks 1, 2 and 3)",
      'warn bmc report dropped: undecodable componentId=c problem=type: must be one of ack, progress, result, status (got "update")',
    ]);
    expect(lines.join("\n")).not.toContain("SECRET");
  });

  it("a store that fails gives the set's reports back as errors (the queue delivers them again); others are stored", async () => {
    const { store } = await sentCommands();
    const failing: CommandSetStore = {
      ...store,
      record: async (taskId, family, writes) => {
        if (family === "u") throw new Error("store down");
        return store.record(taskId, family, writes);
      },
    };
    const outcomes = await createReportRecorder(failing).record([
      { message: report("c1", U, { type: "ack" }), at: 1 },
      { message: report("c1", Q, { type: "status", version: "1.0.0" }), at: 2 },
    ]);
    expect(outcomes).toEqual([{ error: new Error("store down") }, "recorded"]);
  });
});

const base: Task = {
  id: "t1",
  operation: "UpgradeFirmware",
  rackId: "r1",
  componentIds: ["c"],
  description: "",
  executorType: "STEP_FUNCTIONS",
  executionId: "arn",
  status: "RUNNING",
  message: "",
  createdAt: 1,
  updatedAt: 2,
  report: serializeReport(initialReport([{ id: "c", type: "COMPUTE" }], "2.0.0", false)),
};

describe("reconcileExecutionEnd", () => {
  async function end(ending: Omit<ExecutionEnding, "taskId">, task: Task = base) {
    let stored = structuredClone(task);
    const released: string[] = [];
    const tasks: Pick<TaskStore, "getTasks" | "saveTask"> = {
      getTasks: async () => [structuredClone(stored)],
      saveTask: async (t) => {
        stored = structuredClone(t);
        return "saved";
      },
    };
    const locks: Pick<RackLockStore, "release"> = {
      release: async (rackId, owner) => {
        released.push(`${rackId}:${owner}`);
        return "released";
      },
    };
    const result = await reconcileExecutionEnd(outcomeDeps(tasks, locks), { taskId: "t1", ...ending });
    return { result, released };
  }

  it.each([
    [{ status: "ABORTED" as const, cause: "operator" }, "TERMINATED", "task execution stopped: operator"],
    [{ status: "ABORTED" as const }, "TERMINATED", "task execution stopped"],
    [{ status: "TIMED_OUT" as const }, "FAILED", "task execution timed out"],
    [
      { status: "FAILED" as const, error: "States.Runtime", cause: "bad path" },
      "FAILED",
      "task execution failed: States.Runtime: bad path",
    ],
    [{ status: "SUCCEEDED" as const }, "FAILED", "task execution ended without recording an outcome"],
  ])("%o on a running task → %s, lock released", async (ending, status, message) => {
    const { result, released } = await end(ending);
    expect(result).toMatchObject({ status, message, finishedAt: 10 });
    expect(released).toEqual(["r1:t1"]);
  });

  it("a task the last state already ended keeps its outcome (the lock release is repeated, harmlessly)", async () => {
    const done = {
      ...base,
      status: "COMPLETED" as const,
      message: "upgraded 1 component to 2.0.0",
      finishedAt: 5,
    };
    for (const status of ["SUCCEEDED", "FAILED", "ABORTED"] as const) {
      const { result, released } = await end({ status }, done);
      expect(result).toMatchObject({
        status: "COMPLETED",
        message: "upgraded 1 component to 2.0.0",
        finishedAt: 5,
      });
      expect(released).toEqual(["r1:t1"]);
    }
  });
});

/** Ending tasks on these fakes: every target recorded, no update set to fold, inventory not written. */
function outcomeDeps(
  tasks: Pick<TaskStore, "getTasks" | "saveTask">,
  locks: Pick<RackLockStore, "release">,
): OutcomeDeps {
  const runs: Pick<RunStore, "recordOutcome"> = { recordOutcome: async () => "recorded" };
  return {
    tasks: tasks as TaskStore,
    locks: locks as RackLockStore,
    runs,
    commands: { get: async () => undefined, getUpdates: async () => undefined, close: async () => {} },
    firmware: { record: async () => {} },
    clock: () => 10,
  };
}

describe("the bmc-result receiver", () => {
  async function receiver() {
    let stored = structuredClone(base);
    const tasks: Pick<TaskStore, "getTasks" | "saveTask"> = {
      getTasks: async (ids) => (ids.includes(stored.id) ? [structuredClone(stored)] : []),
      saveTask: async (t) => {
        stored = structuredClone(t);
        return "saved";
      },
    };
    const locks: Pick<RackLockStore, "release"> = { release: async () => "released" };
    const { store, entry } = await sentCommands();
    const lines: string[] = [];
    const r = createBmcResultReceiver({
      commands: store,
      outcome: outcomeDeps(tasks, locks),
      clock: () => 42,
      logger: lineLogger((line) => lines.push(line)),
    });
    return { r, store, entry, lines };
  }

  it("an execution ending is reconciled with its task: the task id and the status after", async () => {
    const { r } = await receiver();
    expect(
      await r.receive({ kind: "execution-ending", ending: { taskId: "t1", status: "ABORTED", cause: "op" } }),
    ).toEqual({ taskId: "t1", status: "TERMINATED" });
    expect(
      await r.receive({ kind: "execution-ending", ending: { taskId: "nope", status: "FAILED" } }),
    ).toEqual({ taskId: "nope", status: "unknown task" });
  });

  it("a report is stored at the receiver's clock; other status changes and invalid events change nothing", async () => {
    const { r, store, entry, lines } = await receiver();
    expect(await r.receive({ kind: "bmc-report", message: report("c1", U, { type: "ack" }) })).toEqual({
      outcome: "recorded",
    });
    expect((await entry(U, "c1"))?.ackedAt).toBe(42);
    expect(await r.receive({ kind: "bmc-report", message: { v: 1, type: "ack", requestId: "r" } })).toEqual({
      outcome: "invalid",
    });
    expect(lines).toEqual([
      "warn bmc report dropped: no componentId (the IoT rule adds the topic's component id)",
    ]);
    expect(await r.receive({ kind: "execution-status", status: "RUNNING" })).toEqual({ ignored: "RUNNING" });
    expect(await r.receive({ kind: "invalid" })).toEqual({ outcome: "invalid" });
    expect(store.writes).toBe(1);
  });

  it("a queue batch: one write for the set, unreadable bodies dropped, failed reports named for redelivery", async () => {
    const { r, store, entry } = await receiver();
    expect(
      await r.receive({
        kind: "bmc-reports",
        reports: [
          { id: "m1", message: report("c1", U, { type: "ack" }) },
          { id: "m2" },
          { id: "m3", message: report("c2", U, { type: "result", ok: true, version: "2.0.0" }) },
        ],
      }),
    ).toEqual({ batchItemFailures: [] });
    expect(store.writes).toBe(1);
    expect(await entry(U, "c2")).toMatchObject({ ackedAt: 42, resultAt: 42 });
    store.record = async () => {
      throw new Error("store down");
    };
    expect(
      await r.receive({
        kind: "bmc-reports",
        reports: [
          { id: "m4", message: report("c1", U, { type: "result", ok: true, version: "2.0.0" }) },
          // c2 is known acknowledged: nothing to write, so nothing to fail.
          { id: "m5", message: report("c2", U, { type: "ack" }) },
        ],
      }),
    ).toEqual({ batchItemFailures: [{ itemIdentifier: "m4" }] });
    await expect(
      r.receive({
        kind: "bmc-report",
        message: report("c1", U, { type: "result", ok: true, version: "2.0.0" }),
      }),
    ).rejects.toThrow("store down");
  });
});
