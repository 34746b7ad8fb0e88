/**
 * The receiver of a rack's batched reports (src/app/child-task/receiving.ts, reading
 * src/domain/bmc-rack-reports.ts): a batch is its components' reports, stored as they would be
 * one by one, one write per command set per message, and only on the commands of the rack whose
 * topic it came on (the command set stores its rack; `CommandSetStore.record`'s `rackId`). On the
 * in-memory command set store typed from the port.
 */
import { describe, expect, it } from "vitest";
import { createBmcResultReceiver, createReportRecorder } from "../../src/app/child-task/receiving.js";
import { lineLogger } from "../../src/app/observability.js";
import { encodeRackReports, type RackReport } from "../../src/domain/bmc-rack-reports.js";
import {
  commandRequestId,
  entryKey,
  newEntry,
  queryAddress,
  updateAddress,
} from "../../src/domain/command-sets.js";
import { memoryCommandSetStore } from "../support/memory-child-task.js";

const TASK = "7a5c0000-0000-4000-8000-000000000001";
const OTHER_TASK = "7a5c0000-0000-4000-8000-000000000002";
const RACK = "3f2a0000-0000-4000-8000-0000000000a1";
const OTHER_RACK = "3f2a0000-0000-4000-8000-0000000000b2";
const U = updateAddress(TASK, 0);
const Q = queryAddress(TASK, 0);
const V = updateAddress(OTHER_TASK, 0);

/** Update commands for c1 and c2 and a query for c1 sent to RACK; c9's update sent to OTHER_RACK. */
async function sentCommands(options: { rackKept?: boolean } = {}) {
  const store = memoryCommandSetStore();
  const window = { sentAt: 0, deadline: 600_000 };
  const rack = (r: string) => (options.rackKept === false ? undefined : r);
  await store.open(
    TASK,
    "u",
    Object.fromEntries([newEntry(U, "c1", window), newEntry(U, "c2", window)]),
    undefined,
    undefined,
    rack(RACK),
  );
  await store.open(
    TASK,
    "q",
    Object.fromEntries([newEntry(Q, "c1", window)]),
    undefined,
    undefined,
    rack(RACK),
  );
  await store.open(
    OTHER_TASK,
    "u",
    Object.fromEntries([newEntry(V, "c9", window)]),
    undefined,
    undefined,
    rack(OTHER_RACK),
  );
  store.writes = 0;
  const entry = async (taskId: string, address: typeof U, componentId: string) =>
    (await store.get(taskId, address.family))?.entries[entryKey(address, componentId)];
  return { store, entry };
}

type Event = Record<string, unknown> & { type: string };
const ev = (address: typeof U, componentId: string, event: Event): RackReport => ({
  componentId,
  event: { v: 1, requestId: commandRequestId(address, componentId), ...event } as RackReport["event"],
});
const ack = { type: "ack" };
const done = { type: "result", ok: true, version: "2.0.0" };

/** A rack's batch as the rule hands it over: the message plus its topic's rack. */
const batch = (rackId: string, reports: RackReport[]): Record<string, unknown> => {
  const [message, ...more] = encodeRackReports(reports);
  if (more.length > 0) throw new Error("one message expected");
  return { ...(JSON.parse(message!.payload) as Record<string, unknown>), rackId };
};

describe("the receiver takes a rack's batch as its components' reports", () => {
  it("stores every report of the batch, one write per command set the message touches", async () => {
    const { store, entry } = await sentCommands();
    const recorder = createReportRecorder(store);
    const message = batch(RACK, [
      ev(U, "c1", ack),
      ev(U, "c2", ack),
      ev(U, "c2", { type: "progress", percent: 40 }),
      ev(U, "c1", done),
      ev(Q, "c1", { type: "status", version: "1.0.0" }),
    ]);
    expect(await recorder.record([{ message, at: 7 }])).toEqual(["recorded"]);
    // The update set and the query set: two records, two writes, for five reports.
    expect(store.writes).toBe(2);
    expect(await entry(TASK, U, "c1")).toMatchObject({ ackedAt: 7, resultAt: 7, result: { ok: true } });
    expect(await entry(TASK, U, "c2")).toMatchObject({ ackedAt: 7, progress: 40 });
    expect((await entry(TASK, Q, "c1"))?.status).toMatchObject({ version: "1.0.0" });
    // The same message again (the queue delivered it twice): nothing changes, nothing is written.
    expect(await recorder.record([{ message, at: 9 }])).toEqual(["ignored"]);
    expect(store.writes).toBe(2);
  });

  it("a component's reports keep their order across batches: the first result stays, progress only rises", async () => {
    const { store, entry } = await sentCommands();
    const recorder = createReportRecorder(store);
    await recorder.record([
      { message: batch(RACK, [ev(U, "c1", ack), ev(U, "c1", { type: "progress", percent: 50 })]), at: 1 },
    ]);
    await recorder.record([{ message: batch(RACK, [ev(U, "c1", done)]), at: 10_000 }]);
    expect(
      await recorder.record([
        {
          message: batch(RACK, [
            ev(U, "c1", { type: "progress", percent: 30 }),
            ev(U, "c1", {
              type: "result",
              ok: false,
              version: "1.0.0",
              error: { code: "FLASH_FAILED", message: "late" },
            }),
          ]),
          at: 20_000,
        },
      ]),
    ).toEqual(["ignored"]);
    expect(await entry(TASK, U, "c1")).toMatchObject({
      progress: 50,
      resultAt: 10_000,
      result: { ok: true },
    });
  });

  it("refuses and logs the reports of a batch naming another rack's component; the rack's own reports in the same queue batch are stored", async () => {
    const { store, entry } = await sentCommands();
    const lines: string[] = [];
    const recorder = createReportRecorder(
      store,
      lineLogger((l) => lines.push(l)),
    );
    // RACK's agent claims OTHER_RACK's c9 (its request id copied) beside its own c1.
    const forged = batch(RACK, [ev(U, "c1", ack), ev(V, "c9", done)]);
    const genuine = batch(OTHER_RACK, [ev(V, "c9", ack)]);
    expect(
      await recorder.record([
        { message: forged, at: 5 },
        { message: genuine, at: 5 },
      ]),
    ).toEqual(["recorded", "recorded"]);
    expect(await entry(TASK, U, "c1")).toMatchObject({ ackedAt: 5 });
    const c9 = await entry(OTHER_TASK, V, "c9");
    expect(c9?.ackedAt).toBe(5);
    expect(c9?.result).toBeUndefined();
    expect(lines).toEqual([
      `warn bmc reports refused: their commands went to another rack's components rackId=${RACK} commandsRackId=${OTHER_RACK} taskId=${OTHER_TASK}`,
    ]);
    // Alone, the forged report is refused too: "ignored", nothing stored.
    expect(await recorder.record([{ message: batch(RACK, [ev(V, "c9", done)]), at: 6 }])).toEqual([
      "ignored",
    ]);
    expect((await entry(OTHER_TASK, V, "c9"))?.result).toBeUndefined();
  });

  it("a report alone on a rack's component topic is held to that rack the same way", async () => {
    const { store, entry } = await sentCommands();
    const recorder = createReportRecorder(store);
    const alone = (rackId: string) => ({
      v: 1,
      type: "result",
      ok: true,
      version: "2.0.0",
      requestId: commandRequestId(V, "c9"),
      componentId: "c9",
      rackId,
    });
    expect(await recorder.record([{ message: alone(RACK), at: 3 }])).toEqual(["ignored"]);
    expect((await entry(OTHER_TASK, V, "c9"))?.result).toBeUndefined();
    expect(await recorder.record([{ message: alone(OTHER_RACK), at: 4 }])).toEqual(["recorded"]);
    expect((await entry(OTHER_TASK, V, "c9"))?.resultAt).toBe(4);
  });

  it("a command set opened before racks were kept takes reports from any rack topic (as before)", async () => {
    const { store, entry } = await sentCommands({ rackKept: false });
    const recorder = createReportRecorder(store);
    expect(await recorder.record([{ message: batch(RACK, [ev(V, "c9", done)]), at: 3 }])).toEqual([
      "recorded",
    ]);
    expect((await entry(OTHER_TASK, V, "c9"))?.resultAt).toBe(3);
  });

  it("an unreadable element is dropped and logged, the batch's other reports stored; an unreadable batch is invalid", async () => {
    const { store, entry } = await sentCommands();
    const lines: string[] = [];
    const recorder = createReportRecorder(
      store,
      lineLogger((l) => lines.push(l)),
    );
    const message = batch(RACK, [ev(U, "c1", ack)]);
    (message.reports as unknown[]).push({
      componentId: "c2",
      v: 1,
      type: "progress",
      requestId: "x",
      percent: 101,
    });
    expect(await recorder.record([{ message, at: 2 }])).toEqual(["recorded"]);
    expect((await entry(TASK, U, "c1"))?.ackedAt).toBe(2);
    expect(
      await recorder.record([{ message: { v: 5, type: "reports", reports: [], rackId: RACK }, at: 3 }]),
    ).toEqual(["invalid"]);
    expect(lines).toEqual([
      `warn bmc rack report dropped: undecodable rackId=${RACK} problem=reports[1].percent: must be an integer between 0 and 100 (got 101)`,
      `warn bmc rack reports dropped: undecodable rackId=${RACK} problem=reports: must be a non-empty array`,
    ]);
  });

  it("a batch that did not come on a rack's reports topic (a component's topic, or no rack) is dropped whole and logged", async () => {
    const { store, entry } = await sentCommands({ rackKept: false });
    const lines: string[] = [];
    const recorder = createReportRecorder(
      store,
      lineLogger((l) => lines.push(l)),
    );
    const { rackId: _r, ...noRack } = batch(RACK, [ev(U, "c1", ack)]);
    // As the per-component rules deliver it: a v1-v3 BMC (no rack) or a rack's component topic.
    const onComponentTopic = { ...batch(RACK, [ev(U, "c1", ack)]), componentId: "c2" };
    const legacy = { ...noRack, componentId: "c2" };
    expect(
      await recorder.record([
        { message: noRack, at: 1 },
        { message: onComponentTopic, at: 1 },
        { message: legacy, at: 1 },
      ]),
    ).toEqual(["invalid", "invalid", "invalid"]);
    expect((await entry(TASK, U, "c1"))?.ackedAt).toBeUndefined();
    expect(store.writes).toBe(0);
    expect(lines).toEqual([
      "warn bmc rack reports dropped: not from a rack's reports topic",
      "warn bmc rack reports dropped: not from a rack's reports topic componentId=c2",
      "warn bmc rack reports dropped: not from a rack's reports topic componentId=c2",
    ]);
  });

  it("the Lambda's queue batch: a message whose reports could not be stored is named for redelivery, whole", async () => {
    const { store } = await sentCommands();
    const r = createBmcResultReceiver({
      commands: store,
      clock: () => 42,
      outcome: {} as Parameters<typeof createBmcResultReceiver>[0]["outcome"],
    });
    const record = store.record.bind(store);
    let calls = 0;
    store.record = async (...args) => {
      calls += 1;
      // The query set's write fails once: the message carrying it goes back to the queue.
      if (args[1] === "q" && calls <= 2) throw new Error("store down");
      return record(...args);
    };
    expect(
      await r.receive({
        kind: "bmc-reports",
        reports: [
          {
            id: "m1",
            message: batch(RACK, [ev(U, "c1", ack), ev(Q, "c1", { type: "status", version: "1.0.0" })]),
          },
          { id: "m2", message: batch(RACK, [ev(U, "c2", ack)]) },
        ],
      }),
    ).toEqual({ batchItemFailures: [{ itemIdentifier: "m1" }] });
  });
});
