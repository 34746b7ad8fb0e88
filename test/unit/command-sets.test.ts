/**
 * Command sets (src/domain/command-sets.ts): request ids that name their record and entry, the
 * entry as a request record for the verdicts, and the receiver's rules for what a batch of reports
 * writes (first result or answer wins, progress coalesced, nothing for what is already stored).
 */
import { describe, expect, it } from "vitest";
import type { BmcEvent } from "../../src/domain/bmc-protocol.js";
import {
  awaitedAnswers,
  type CommandSet,
  commandRecord,
  commandRequestId,
  entryKey,
  entryWrite,
  FIRST_PROGRESS_AFTER_ACK_MS,
  foldReports,
  HEARTBEAT_INTERVAL_MS,
  heartbeatDue,
  heartbeatIntervalMs,
  isAnswered,
  isReportFor,
  kindOfFamily,
  knownAfter,
  knownOf,
  mergeParts,
  newEntry,
  PROGRESS_WRITE_INTERVAL_MS,
  parseCommandRequestId,
  queryAddress,
  updateAddress,
  updateParts,
  verifyAddress,
  wakeDue,
  wakeOutput,
} from "../../src/domain/command-sets.js";

const TASK = "7a5c0000-0000-4000-8000-000000000001";
const C = "c0ffee00-0000-4000-8000-000000000001";

describe("request ids", () => {
  it("name the task, the family and qualifier, and the component's entry; parse back to them", () => {
    const cases = [
      [updateAddress(TASK, 0), /^upd-7a5c.*\.u0\.[0-9a-f]{12}$/],
      [updateAddress(TASK, 1, 3), /^upd-7a5c.*\.u1p3\.[0-9a-f]{12}$/],
      [queryAddress(TASK, 2), /^qry-7a5c.*\.q2\.[0-9a-f]{12}$/],
      [verifyAddress(TASK, 1, 3, 0), /^qry-7a5c.*\.v1\.3\.0\.[0-9a-f]{12}$/],
    ] as const;
    for (const [address, form] of cases) {
      const id = commandRequestId(address, C);
      expect(id).toMatch(form);
      expect(parseCommandRequestId(id)).toEqual({ ...address, entry: entryKey(address, C) });
    }
  });

  it("differ per component, attempt and place, and repeat for the same ones", () => {
    const ids = new Set([
      commandRequestId(updateAddress(TASK, 0), C),
      commandRequestId(updateAddress(TASK, 0), "other"),
      commandRequestId(updateAddress(TASK, 1), C),
      commandRequestId(queryAddress(TASK, 0), C),
      commandRequestId(verifyAddress(TASK, 0, 1, 0), C),
    ]);
    expect(ids.size).toBe(5);
    expect(commandRequestId(updateAddress(TASK, 0), C)).toBe(commandRequestId(updateAddress(TASK, 0), C));
  });

  it("the part is where an entry is stored, not what it is: the same entry key in any part, another request id", () => {
    expect(entryKey(updateAddress(TASK, 0, 4), C)).toBe(entryKey(updateAddress(TASK, 0), C));
    expect(commandRequestId(updateAddress(TASK, 0, 4), C)).not.toBe(
      commandRequestId(updateAddress(TASK, 0), C),
    );
    const parsed = parseCommandRequestId(commandRequestId(updateAddress(TASK, 0, 4), C));
    expect(parsed?.part).toBe(4);
    expect(parsed && isReportFor(parsed, C)).toBe(true);
  });

  it.each([
    ["an older task's id", "upd-0123456789abcdef0123456789abcdef"],
    ["an update prefix on a query set", `upd-${TASK}.q0.0123456789ab`],
    ["a query prefix on the update set", `qry-${TASK}.u0.0123456789ab`],
    ["a verify set without stage and step", `qry-${TASK}.v0.0123456789ab`],
    ["a preflight set with a stage", `qry-${TASK}.q0.1.2.0123456789ab`],
    ["a preflight query in a part", `qry-${TASK}.q0p1.0123456789ab`],
    ["a verify query in a part", `qry-${TASK}.v0.1.2p1.0123456789ab`],
    ["a part of four digits", `upd-${TASK}.u0p1000.0123456789ab`],
    ["anything else", "r"],
  ])("%s is not one of ours", (_what, id) => {
    expect(parseCommandRequestId(id)).toBeUndefined();
  });

  it("a report counts only for the component its entry was made for", () => {
    const parsed = parseCommandRequestId(commandRequestId(updateAddress(TASK, 0), C));
    expect(parsed && isReportFor(parsed, C)).toBe(true);
    expect(parsed && isReportFor(parsed, "c0ffee00-0000-4000-8000-000000000002")).toBe(false);
  });
});

describe("commandRecord: an entry as the verdicts read it", () => {
  const address = updateAddress(TASK, 0);
  const [key, entry] = newEntry(address, C, { sentAt: 10, deadline: 610 });
  const set = (extra = {}): CommandSet => ({
    taskId: TASK,
    family: "u",
    entries: { [key]: { ...entry, ...extra } },
  });

  it("not sent (no set, or no entry): undefined", () => {
    expect(commandRecord(undefined, address, C)).toBeUndefined();
    expect(commandRecord(set(), address, "other")).toBeUndefined();
  });

  it("a fresh command: its window; then everything its BMC reported", () => {
    expect(commandRecord(set(), address, C)).toEqual({
      componentId: C,
      requestId: commandRequestId(address, C),
      taskId: TASK,
      kind: "update",
      sentAt: 10,
      deadline: 610,
    });
    const full = commandRecord(
      set({
        publishedAt: 11,
        ackedAt: 12,
        progress: 50,
        progressAt: 13,
        result: { ok: true, version: "2.0.0" },
        resultAt: 14,
        status: { version: "1.0.0" },
      }),
      address,
      C,
    );
    expect(full).toMatchObject({
      publishedAt: 11,
      ackedAt: 12,
      progress: 50,
      result: { ok: true, version: "2.0.0" },
      status: { version: "1.0.0" },
    });
    expect(commandRecord({ ...set(), family: "q" }, queryAddress(TASK, 0), C)).toBeUndefined();
  });
});

const at = (event: BmcEvent, t: number) => ({ event, at: t });
const ack = (t: number) => at({ v: 1, type: "ack", requestId: "r" }, t);
const progress = (percent: number, t: number) => at({ v: 1, type: "progress", requestId: "r", percent }, t);
const ok = (t: number, version = "2.0.0") =>
  at({ v: 1, type: "result", requestId: "r", ok: true, version }, t);

describe("foldReports", () => {
  it("the first ack-like report, the highest progress, the first result and the first answer", () => {
    expect(
      foldReports([
        at({ v: 1, type: "status", requestId: "r", version: "1.0.0" }, 1),
        ack(2),
        progress(40, 3),
        progress(20, 4),
        at(
          {
            v: 1,
            type: "result",
            requestId: "r",
            ok: false,
            version: "1.0.0",
            error: { code: "FLASH_FAILED", message: "no" },
          },
          5,
        ),
        ok(6),
        at({ v: 2, type: "result", requestId: "r", ok: true, version: "2.0.0", subTargets: ["bios"] }, 7),
        at({ v: 1, type: "status", requestId: "r", version: "1.5.0", ready: false, reason: "host down" }, 8),
      ]),
    ).toEqual({
      ackedAt: 2,
      progress: { percent: 40, at: 3 },
      result: {
        value: { ok: false, version: "1.0.0", error: { code: "FLASH_FAILED", message: "no" } },
        at: 5,
      },
      status: { version: "1.0.0" },
    });
    expect(
      foldReports([
        at({ v: 2, type: "result", requestId: "r", ok: true, version: "2.0.0", subTargets: ["bios"] }, 1),
        at({ v: 1, type: "status", requestId: "r", version: "1.5.0", ready: false, reason: "host down" }, 2),
      ]),
    ).toEqual({
      ackedAt: 1,
      result: { value: { ok: true, version: "2.0.0", subTargets: ["bios"] }, at: 1 },
      status: { version: "1.5.0", ready: false, reason: "host down" },
    });
  });
});

describe("foldReports: protocol v3", () => {
  it("a staged result keeps its pending version; a status keeps its pending version, reset error and health", () => {
    expect(
      foldReports([
        at({ v: 3, type: "result", requestId: "r", ok: true, version: "1.0.0", pendingVersion: "2.0.0" }, 1),
        at(
          {
            v: 3,
            type: "status",
            requestId: "r",
            version: "1.0.0",
            pendingVersion: "2.0.0",
            error: { code: "RESET_FAILED", message: "chassis refused PowerCycle" },
            health: "Critical",
            healthReason: "GPU 3 not detected",
          },
          2,
        ),
      ]),
    ).toEqual({
      ackedAt: 1,
      result: { value: { ok: true, version: "1.0.0", pendingVersion: "2.0.0" }, at: 1 },
      status: {
        version: "1.0.0",
        pendingVersion: "2.0.0",
        error: { code: "RESET_FAILED", message: "chassis refused PowerCycle" },
        health: "Critical",
        healthReason: "GPU 3 not detected",
      },
    });
  });
});

describe("entryWrite: what a batch writes for one command", () => {
  const known = (over = {}) => ({ ackedAt: 0, result: false, status: false, ...over });

  it("nothing known: everything, under the store's conditions", () => {
    expect(entryWrite("u", foldReports([ack(1), progress(30, 2)]), undefined)).toEqual({
      ackedAt: 1,
      progress: { percent: 30, at: 2 },
    });
    expect(entryWrite("u", foldReports([ok(3)]), undefined)).toEqual({
      ackedAt: 3,
      result: { value: { ok: true, version: "2.0.0" }, at: 3 },
    });
  });

  it("a result is written once; progress is moot with it", () => {
    expect(entryWrite("u", foldReports([progress(90, 1), ok(2)]), known())).toEqual({
      result: { value: { ok: true, version: "2.0.0" }, at: 2 },
    });
    expect(entryWrite("u", foldReports([ok(2), progress(95, 3)]), known({ result: true }))).toBeUndefined();
  });

  it("progress: higher and at least PROGRESS_WRITE_INTERVAL_MS after the stored one, else nothing", () => {
    const stored = known({ progress: 25, progressAt: 1_000 });
    const later = 1_000 + PROGRESS_WRITE_INTERVAL_MS;
    expect(entryWrite("u", foldReports([progress(50, later - 1)]), stored)).toBeUndefined();
    expect(entryWrite("u", foldReports([progress(25, later)]), stored)).toBeUndefined();
    expect(entryWrite("u", foldReports([progress(50, later)]), stored)).toEqual({
      progress: { percent: 50, at: later },
    });
    // A stored progress without its time (written before times were kept) counts from 0.
    expect(
      entryWrite("u", foldReports([progress(50, later)]), known({ progress: 25, ackedAt: later })),
    ).toEqual({
      progress: { percent: 50, at: later },
    });
  });

  it("the first progress: with the acknowledgement's write, else FIRST_PROGRESS_AFTER_ACK_MS after the stored acknowledgement", () => {
    const acked = known({ ackedAt: 1_000 });
    const later = 1_000 + FIRST_PROGRESS_AFTER_ACK_MS;
    expect(
      entryWrite("u", foldReports([ack(1_000), progress(5, 1_050)]), known({ ackedAt: undefined })),
    ).toEqual({
      ackedAt: 1_000,
      progress: { percent: 5, at: 1_050 },
    });
    expect(entryWrite("u", foldReports([progress(25, later - 1)]), acked)).toBeUndefined();
    expect(entryWrite("u", foldReports([progress(25, later)]), acked)).toEqual({
      progress: { percent: 25, at: later },
    });
    // 0 % is no progress: it waits for a percent above it.
    expect(entryWrite("u", foldReports([progress(0, later)]), acked)).toBeUndefined();
    // Once stored, the next one waits PROGRESS_WRITE_INTERVAL_MS.
    const stored = known({ ackedAt: 1_000, progress: 25, progressAt: later });
    expect(
      entryWrite("u", foldReports([progress(50, later + FIRST_PROGRESS_AFTER_ACK_MS)]), stored),
    ).toBeUndefined();
  });

  it("queries: the first answer only; an update's reports on a query, or an answer on an update, change nothing", () => {
    const answer = at({ v: 1, type: "status", requestId: "r", version: "1.0.0" }, 1);
    expect(entryWrite("q", foldReports([answer]), undefined)).toEqual({ status: { version: "1.0.0" } });
    expect(entryWrite("v", foldReports([answer]), known({ status: true }))).toBeUndefined();
    expect(entryWrite("q", foldReports([ack(1), progress(10, 2), ok(3)]), undefined)).toBeUndefined();
    expect(entryWrite("u", foldReports([answer]), known())).toBeUndefined();
    expect(entryWrite("u", foldReports([answer]), undefined)).toBeUndefined();
  });

  it("a duplicate ack is not written", () => {
    expect(entryWrite("u", foldReports([ack(5)]), known())).toBeUndefined();
  });
});

describe("kindOfFamily", () => {
  it("updates are the u set; preflight and verify queries the q and v sets", () => {
    expect(["u", "q", "v"].map((f) => kindOfFamily(f as "u" | "q" | "v"))).toEqual([
      "update",
      "query",
      "query",
    ]);
  });
});

describe("knownOf", () => {
  it("what an entry says is stored", () => {
    const [, fresh] = newEntry(updateAddress(TASK, 0), C, { sentAt: 1, deadline: 2 });
    expect(knownOf(fresh)).toEqual({ result: false, status: false });
    expect(
      knownOf({
        ...fresh,
        ackedAt: 3,
        progress: 40,
        progressAt: 4,
        result: { ok: true, version: "2.0.0" },
        status: { version: "1.0.0" },
      }),
    ).toEqual({ ackedAt: 3, progress: 40, progressAt: 4, result: true, status: true });
  });
});

describe("knownAfter: what a stored write teaches", () => {
  const ok = { value: { ok: true as const, version: "2.0.0" }, at: 9 };
  it("nothing known before: the write's own fields, and nothing stored where its conditions held", () => {
    expect(knownAfter(undefined, { progress: { percent: 30, at: 5 }, ackedAt: 5 })).toEqual({
      ackedAt: 5,
      progress: 30,
      progressAt: 5,
      result: false,
      status: false,
    });
    expect(knownAfter(undefined, { result: ok, ackedAt: 9 })).toEqual({
      ackedAt: 9,
      result: true,
      status: false,
    });
    expect(knownAfter(undefined, { status: { version: "1.0.0" } })).toEqual({
      result: false,
      status: true,
    });
  });
  it("known before: kept where the write did not touch it, replaced where it did", () => {
    const before = { ackedAt: 2, progress: 30, progressAt: 5, result: false, status: false };
    expect(knownAfter(before, { result: ok })).toEqual({ ...before, result: true });
    expect(knownAfter(before, { ackedAt: 7 })).toEqual(before); // the first acknowledgement stays
    expect(knownAfter(before, { progress: { percent: 60, at: 8 } })).toEqual({
      ...before,
      progress: 60,
      progressAt: 8,
    });
  });
  it("what entryWrite writes next follows from it: a duplicate of what was written writes nothing", () => {
    const folded = foldReports([at({ v: 1, type: "result", requestId: "r", ok: true, version: "2.0.0" }, 9)]);
    const write = entryWrite("u", folded, undefined);
    expect(write).toBeDefined();
    expect(entryWrite("u", folded, knownAfter(undefined, write ?? {}))).toBeUndefined();
  });
});

describe("wakeDue and heartbeatDue: when the execution waiting for a wave is woken, or kept waiting", () => {
  const [ka, a] = newEntry(updateAddress(TASK, 0), C, { sentAt: 1, deadline: 9 });
  const [kb, b] = newEntry(updateAddress(TASK, 0), "c0ffee00-0000-4000-8000-000000000002", {
    sentAt: 1,
    deadline: 9,
  });
  const [kc, c] = newEntry(updateAddress(TASK, 0), "c0ffee00-0000-4000-8000-000000000003", {
    sentAt: 1,
    deadline: 9,
  });
  const result = { ok: true as const, version: "2.0.0" };
  const set = (entries: Record<string, typeof a>, extra: Partial<CommandSet> = {}): CommandSet => ({
    taskId: TASK,
    family: "u",
    entries,
    wake: { token: "tk", keys: [ka, kb] },
    ...extra,
  });
  it("every awaited entry answered → the token; one still out, or no wait stored → nothing", () => {
    expect(wakeDue(set({ [ka]: { ...a, result }, [kb]: { ...b, result } }))).toBe("tk");
    expect(wakeDue(set({ [ka]: { ...a, result }, [kb]: { ...b, progress: 90 } }))).toBeUndefined();
    expect(wakeDue(set({ [ka]: { ...a, result } }))).toBeUndefined();
    expect(wakeDue({ taskId: TASK, family: "u", entries: { [ka]: { ...a, result } } })).toBeUndefined();
    expect(wakeDue(undefined)).toBeUndefined();
  });
  it("a closed set wakes nothing early (its execution is being stopped); a query set is answered by its status", () => {
    expect(wakeDue(set({ [ka]: a, [kb]: b }, { closedAt: 5 }))).toBeUndefined();
    expect(wakeDue(set({ [ka]: { ...a, result }, [kb]: { ...b, result } }, { closedAt: 5 }))).toBe("tk");
    expect(isAnswered("v", { ...a, status: { version: "2.0.0" } })).toBe(true);
    expect(isAnswered("v", { ...a, result })).toBe(false);
    expect(isAnswered("u", { ...a, result })).toBe(true);
    expect(isAnswered("u", undefined)).toBe(false);
  });

  // A wait with AwaitWave's 300-s heartbeat; the write at 61 s, the record's one before it at 59 s.
  const beating = (entries: Record<string, typeof a>, extra: Partial<CommandSet> = {}): CommandSet =>
    set(entries, {
      wake: { token: "tk", keys: [ka, kb], heartbeatSeconds: 300 },
      heard: { at: 61_000, before: 59_000 },
      ...extra,
    });
  it("a write of an entry the wait is for, the wait not complete, the record's first write in its interval → the token", () => {
    expect(heartbeatDue(beating({ [ka]: { ...a, progress: 50 }, [kb]: b, [kc]: c }), [ka])).toBe("tk");
    expect(heartbeatDue(beating({ [ka]: { ...a, result }, [kb]: { ...b, ackedAt: 3 } }), [ka, kb])).toBe(
      "tk",
    );
    // The record's first write of reports at all.
    expect(heartbeatDue(beating({ [ka]: { ...a, ackedAt: 1 }, [kb]: b }, { heard: { at: 1 } }), [ka])).toBe(
      "tk",
    );
  });
  it("at most one a heartbeat interval: a write after another in the same interval → nothing; the next interval's first → the token", () => {
    const progressed = { [ka]: { ...a, progress: 50 }, [kb]: b };
    expect(
      heartbeatDue(beating(progressed, { heard: { at: 119_999, before: 61_000 } }), [ka]),
    ).toBeUndefined();
    expect(
      heartbeatDue(beating(progressed, { heard: { at: 60_000, before: 60_000 } }), [ka]),
    ).toBeUndefined();
    expect(heartbeatDue(beating(progressed, { heard: { at: 120_000, before: 119_999 } }), [ka])).toBe("tk");
    // A write that did not store its time (no `heard`) decides nothing.
    expect(heartbeatDue(beating(progressed, { heard: undefined }), [ka])).toBeUndefined();
  });
  it("the wait's start is heard first: its interval's writes (the acknowledgements that follow a send) → nothing; the first write of a later interval → the token", () => {
    const started = (at: number, before?: number) =>
      beating(
        { [ka]: { ...a, ackedAt: at }, [kb]: b },
        {
          wake: { token: "tk", keys: [ka, kb], heartbeatSeconds: 300, startedAt: 60_200 },
          heard: before === undefined ? { at } : { at, before },
        },
      );
    expect(heartbeatDue(started(61_000), [ka])).toBeUndefined();
    expect(heartbeatDue(started(119_999, 61_000), [ka])).toBeUndefined();
    // A write before the wait (its record's reports of an earlier send) does not count for it.
    expect(heartbeatDue(started(61_000, 10_000), [ka])).toBeUndefined();
    expect(heartbeatDue(started(120_000, 119_999), [ka])).toBe("tk");
    expect(heartbeatDue(started(120_000), [ka])).toBe("tk");
  });
  it("reports at most 239 s apart keep the 300-s heartbeat, however they fall: the next heartbeat comes within an interval and a report's gap of the one before (or of the wait's start), also when every report but one a gap lands late in the heartbeat's own interval", () => {
    const interval = heartbeatIntervalMs(300);
    for (const gap of [60_000, 150_000, 239_000]) {
      for (let start = 0; start < interval; start += 7_000) {
        // The wait starts at `start` (its heartbeat timer with it); reports then come as late as
        // they may without sending one: the last moment of the last heartbeat's interval, then a gap.
        let lastBeat = start;
        let last: number | undefined;
        let longest = 0;
        let at = start + 500;
        while (at < start + 3_600_000) {
          const heard = last === undefined ? { at } : { at, before: last };
          const wake = { token: "tk", keys: [ka, kb], heartbeatSeconds: 300, startedAt: start };
          const due = heartbeatDue(beating({ [ka]: { ...a, progress: 50 }, [kb]: b }, { heard, wake }), [ka]);
          if (due !== undefined) {
            longest = Math.max(longest, at - lastBeat);
            lastBeat = at;
          }
          last = at;
          const intervalEnd = (Math.floor(lastBeat / interval) + 1) * interval - 1;
          at = at < intervalEnd && intervalEnd - at <= gap ? intervalEnd : at + gap;
        }
        expect(longest, `reports ${gap} ms apart from ${start} ms`).toBeLessThanOrEqual(interval + gap);
        expect(longest, `reports ${gap} ms apart from ${start} ms`).toBeLessThan(300_000);
      }
    }
  });
  it("the interval: a minute, or a fifth of a shorter heartbeat (at least five within it)", () => {
    expect(HEARTBEAT_INTERVAL_MS).toBe(60_000);
    expect([300, 600, 5, 1].map(heartbeatIntervalMs)).toEqual([60_000, 60_000, 1_000, 200]);
    // A 5-s heartbeat: writes at 1.1 s and 1.9 s share an interval, 2.0 s starts the next.
    const short = (at: number, before: number) =>
      beating(
        { [ka]: { ...a, progress: 50 }, [kb]: b },
        {
          wake: { token: "tk", keys: [ka, kb], heartbeatSeconds: 5 },
          heard: { at, before },
        },
      );
    expect(heartbeatDue(short(1_900, 1_100), [ka])).toBeUndefined();
    expect(heartbeatDue(short(2_000, 1_900), [ka])).toBe("tk");
  });
  it("only entries the wait is not for, no wait stored, a wait without a heartbeat (AwaitPreflight's), a complete wait (woken instead), a closed set → nothing", () => {
    expect(heartbeatDue(beating({ [ka]: a, [kb]: b, [kc]: { ...c, progress: 50 } }), [kc])).toBeUndefined();
    expect(heartbeatDue({ taskId: TASK, family: "u", entries: { [ka]: a } }, [ka])).toBeUndefined();
    expect(
      heartbeatDue(
        beating({ [ka]: { ...a, progress: 50 }, [kb]: b }, { wake: { token: "tk", keys: [ka, kb] } }),
        [ka],
      ),
    ).toBeUndefined();
    expect(heartbeatDue(beating({ [ka]: { ...a, result }, [kb]: { ...b, result } }), [kb])).toBeUndefined();
    expect(
      heartbeatDue(beating({ [ka]: { ...a, progress: 50 }, [kb]: b }, { closedAt: 5 }), [ka]),
    ).toBeUndefined();
    expect(heartbeatDue(undefined, [ka])).toBeUndefined();
  });
});

describe("the update set in parts", () => {
  const entry = (sentAt: number) => ({ sentAt, deadline: sentAt + 100 });
  it("updateParts: one part per stage of the task's rule (the default rule's six without one)", () => {
    expect(updateParts()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(updateParts({ stages: [{} as never, {} as never] })).toEqual([0, 1]);
  });

  it("mergeParts: every entry from the record that holds it, with its part; the first record's close", () => {
    const first: CommandSet = { taskId: TASK, family: "u", entries: { a: entry(1) }, closedAt: 9 };
    const p0: CommandSet = {
      taskId: TASK,
      family: "u",
      part: 0,
      entries: { b: entry(2) },
      wake: { token: "t", keys: ["b"] },
    };
    const p2: CommandSet = { taskId: TASK, family: "u", part: 2, entries: { c: entry(3), d: entry(4) } };
    expect(mergeParts(first, [p0, undefined, p2])).toEqual({
      taskId: TASK,
      family: "u",
      closedAt: 9,
      entries: {
        a: entry(1),
        b: { ...entry(2), part: 0 },
        c: { ...entry(3), part: 2 },
        d: { ...entry(4), part: 2 },
      },
    });
    // Parts alone (a task sent only into parts; its first record closed by nobody yet).
    expect(mergeParts(undefined, [p2])).toEqual({
      taskId: TASK,
      family: "u",
      entries: { c: { ...entry(3), part: 2 }, d: { ...entry(4), part: 2 } },
    });
    expect(mergeParts(undefined, [undefined])).toBeUndefined();
    // An entry lives in one record only; were it in two, the first record's would stand. A part
    // record read without its `part` (none such is written) gives its entries as they are.
    const again: CommandSet = { taskId: TASK, family: "u", part: 0, entries: { a: entry(7), e: entry(8) } };
    const bare: CommandSet = { taskId: TASK, family: "u", entries: { f: entry(9) } };
    expect(mergeParts(first, [again, bare])?.entries).toEqual({
      a: entry(1),
      e: { ...entry(8), part: 0 },
      f: entry(9),
    });
  });

  it("awaitedAnswers: the entries the wait waited for, as stored, with the record's part; none without a wait", () => {
    const set: CommandSet = {
      taskId: TASK,
      family: "u",
      part: 3,
      entries: { a: entry(1), b: entry(2), c: entry(3) },
      wake: { token: "t", keys: ["a", "c", "gone"] },
    };
    expect(awaitedAnswers(set)).toEqual({
      taskId: TASK,
      family: "u",
      part: 3,
      entries: { a: entry(1), c: entry(3) },
    });
    expect(awaitedAnswers({ taskId: TASK, family: "q", entries: { a: entry(1) } })).toEqual({
      taskId: TASK,
      family: "q",
      entries: {},
    });
  });

  it("wakeOutput: the wait's resume with the answers in it (AwaitWave's wave, woken); without a resume the answers alone, as before", () => {
    const answered = { taskId: TASK, family: "u" as const, entries: { a: entry(1), b: entry(2) } };
    const resume = { step: 2, cursor: { group: 1 }, done: false, answers: "stale" };
    const withResume: CommandSet = { ...answered, wake: { token: "t", keys: ["a"], resume } };
    // The answers the wake-up brings replace anything of that name the resume held.
    expect(wakeOutput(withResume)).toEqual({
      step: 2,
      cursor: { group: 1 },
      done: false,
      answers: { taskId: TASK, family: "u", entries: { a: entry(1) } },
    });
    const without: CommandSet = { ...answered, wake: { token: "t", keys: ["a"] } };
    expect(wakeOutput(without)).toEqual(awaitedAnswers(without));
    expect(wakeOutput(without)).toEqual({ taskId: TASK, family: "u", entries: { a: entry(1) } });
  });
});
