/**
 * The pure rules the child task applies to a BMC request: a component's verdict from its record,
 * the poll backoff, which credential a BMC gets, and the derived query ids.
 */
import { describe, expect, it } from "vitest";
import {
  AWAIT_SAFETY_NET_POLLS,
  awaitSeconds,
  awaitTimeoutSeconds,
  type BmcRequestRecord,
  type ComponentResult,
  nextCheckWaitSeconds,
  nextWaitSeconds,
  queryRequestId,
  queryVerdict,
  secretFor,
  verdict,
} from "../../src/domain/component-verdict.js";

const settings = { pollSeconds: 10, maxPollSeconds: 60, updateTimeoutSeconds: 1800 };

describe("nextWaitSeconds", () => {
  it.each([
    [0, 1_000_000, 10],
    [1, 1_000_000, 20],
    [2, 1_000_000, 40],
    [3, 1_000_000, 60],
    [40, 1_000_000, 60],
    [3, 15_500, 16],
    [0, 200, 1],
    [0, -5_000, 1],
  ])("after %i polls with %i ms left: %i s", (polls, left, expected) => {
    expect(nextWaitSeconds(settings, polls, 1_000 + left, 1_000)).toBe(expected);
  });
});

describe("awaitSeconds: how long a wave waits for its wake-up before its check", () => {
  const settings = { maxPollSeconds: 60 };
  it("the check's own wait, at least five of the longest polls, never past the deadline", () => {
    expect(AWAIT_SAFETY_NET_POLLS).toBe(5);
    expect(awaitSeconds(settings, 20, 1_800_000, 0)).toBe(300);
    expect(awaitSeconds(settings, 428, 1_800_000, 190_000)).toBe(428);
    expect(awaitSeconds(settings, 20, 45_000, 0)).toBe(45);
    // At or past the deadline: one second, and the check there decides the timeouts.
    expect(awaitSeconds(settings, 20, 45_000, 45_000)).toBe(1);
    expect(awaitSeconds(settings, 20, 45_000, 46_500)).toBe(1);
  });
});

describe("awaitTimeoutSeconds: how long a wave heard from keeps waiting for its wake-up", () => {
  it("until the deadline, whatever the heartbeat, so the check there decides the timeouts", () => {
    expect(awaitTimeoutSeconds(300, 1_800_000, 0)).toBe(1_800);
    expect(awaitTimeoutSeconds(428, 1_800_000, 190_000)).toBe(1_610);
    // Rounded up: never before the deadline.
    expect(awaitTimeoutSeconds(300, 1_800_500, 0)).toBe(1_801);
  });
  it("always one second past the heartbeat at least (Step Functions wants the timeout longer): the deadline nearer than the net", () => {
    // awaitSeconds is the deadline itself there (45 s); the timeout one second more.
    expect(awaitTimeoutSeconds(awaitSeconds({ maxPollSeconds: 60 }, 20, 45_000, 0), 45_000, 0)).toBe(46);
    expect(awaitTimeoutSeconds(1, 45_000, 46_500)).toBe(2);
  });
});

describe("nextCheckWaitSeconds: the next check timed by the reported progress", () => {
  // A wave sent at 0 with its deadline at 1800 s; checked at 190 s after four polls (backoff 60 s).
  const check = (pending: Parameters<typeof nextCheckWaitSeconds>[4], now = 190_000, deadline = 1_800_000) =>
    nextCheckWaitSeconds(settings, 4, deadline, now, pending);

  it("without progress: the backoff, as nextWaitSeconds", () => {
    expect(check([])).toBe(60);
    expect(check([{ sentAt: 0 }])).toBe(60);
    expect(check([{ sentAt: 0, progress: 25 }])).toBe(60);
    expect(check([{ sentAt: 0, progressAt: 152_000 }])).toBe(60);
    expect(check([{ sentAt: 0, progress: 0, progressAt: 152_000 }])).toBe(60);
  });

  it("25 % after 152 s: done near 608 s, so the check waits until 608 + 10 s", () => {
    expect(check([{ sentAt: 0, progress: 25, progressAt: 152_000 }])).toBe(428);
  });

  it("the slowest pending command decides", () => {
    expect(
      check([
        { sentAt: 0, progress: 75, progressAt: 452_000 },
        { sentAt: 0, progress: 25, progressAt: 160_000 },
        { sentAt: 0 },
      ]),
    ).toBe(Math.ceil(640 + 10 - 190));
  });

  it("an estimate the backoff already passes changes nothing", () => {
    expect(check([{ sentAt: 0, progress: 90, progressAt: 180_000 }])).toBe(60);
  });

  it("never past the deadline", () => {
    expect(check([{ sentAt: 0, progress: 25, progressAt: 152_000 }], 190_000, 400_000)).toBe(210);
    // Nor past the backoff's own cap at the deadline (≥ 1 s).
    expect(check([{ sentAt: 0, progress: 25, progressAt: 152_000 }], 190_000, 190_200)).toBe(1);
  });
});

describe("secretFor", () => {
  it("shared credentials go to every BMC, per-component ones to their type only", () => {
    expect(secretFor({ kind: "shared", secret: "s" }, "CDU")).toBe("s");
    const per = { kind: "perComponent" as const, compute: "c", nvswitch: "n", powershelf: "p" };
    expect(
      ["COMPUTE", "NVSWITCH", "POWERSHELF", "TORSWITCH", "UMS", "CDU"].map((t) => secretFor(per, t as never)),
    ).toEqual(["c", "n", "p", undefined, undefined, undefined]);
    expect(secretFor(undefined, "COMPUTE")).toBeUndefined();
  });
});

describe("queryRequestId", () => {
  it("is derived from the task and component, so a retried step re-asks with the same id", () => {
    expect(queryRequestId("t", "c")).toMatch(/^qry-t\.q0\.[0-9a-f]{12}$/);
    expect(queryRequestId("t", "c")).not.toBe(queryRequestId("t", "d"));
    expect(queryRequestId("t", "c")).toBe(queryRequestId("t", "c"));
    // Asking again (a BMC that said it was not ready) is a new request; attempt 0 is the first.
    expect(queryRequestId("t", "c", 0)).toBe(queryRequestId("t", "c"));
    expect(queryRequestId("t", "c", 1)).not.toBe(queryRequestId("t", "c"));
  });
});

describe("verdict: one component from its update record", () => {
  const record = (extra: Partial<BmcRequestRecord> = {}): BmcRequestRecord => ({
    componentId: "c-1",
    requestId: "upd-1",
    taskId: "t-1",
    kind: "update",
    sentAt: 0,
    deadline: 10_000,
    ...extra,
  });
  const judge = (r: BmcRequestRecord | undefined, now: number, waveDeadline = 10_000) =>
    verdict("c-1", "COMPUTE", r, "2.0.0", settings, waveDeadline, now);
  const failed = (name: string, message: string): ComponentResult => ({
    componentId: "c-1",
    ok: false,
    error: { Error: name, Cause: `component c-1 (COMPUTE): ${message}` },
  });

  const cases: [string, BmcRequestRecord | undefined, number, ComponentResult | "pending"][] = [
    [
      "a success at the target version",
      record({ result: { ok: true, version: "2.0.0" } }),
      5,
      { componentId: "c-1", ok: true, version: "2.0.0" },
    ],
    [
      "a reported failure, before the deadline",
      record({
        result: { ok: false, version: "1.0.0", error: { code: "FLASH_FAILED", message: "bad block" } },
      }),
      5,
      failed("BmcUpdateFailed", "BMC reported FLASH_FAILED: bad block (running 1.0.0)"),
    ],
    [
      "a success at another version",
      record({ result: { ok: true, version: "1.9.0" } }),
      5,
      failed("VersionMismatch", "BMC reported success but runs 1.9.0, expected 2.0.0"),
    ],
    ["no result before the record's deadline", record({ ackedAt: 1 }), 9_999, "pending"],
    [
      "never acknowledged, at the deadline",
      record(),
      10_000,
      failed("BmcUnreachable", "BMC never acknowledged the update command within 1800 s (unreachable)"),
    ],
    [
      "acknowledged, no progress, past the deadline",
      record({ ackedAt: 1 }),
      20_000,
      failed(
        "BmcTimeout",
        "BMC acknowledged the update but reported no progress and no result within 1800 s (hung)",
      ),
    ],
    [
      "some progress, then silence past the deadline",
      record({ ackedAt: 1, progress: 40 }),
      20_000,
      failed(
        "BmcTimeout",
        "BMC reported 40% progress, then fell silent: no result within 1800 s (disconnected)",
      ),
    ],
  ];
  it.each(cases)("%s", (_name, r, now, expected) => {
    expect(judge(r, now)).toEqual(expected);
  });

  it("a result stored by the deadline decides whenever it is judged", () => {
    expect(judge(record({ result: { ok: true, version: "2.0.0" } }), 99_999)).toMatchObject({ ok: true });
    expect(judge(record({ result: { ok: true, version: "2.0.0" }, resultAt: 10_000 }), 99_999)).toMatchObject(
      { ok: true },
    );
  });

  it("a result stored after the deadline came too late: the timeout stands, before and after it arrived", () => {
    const late = record({
      ackedAt: 1,
      progress: 90,
      result: { ok: true, version: "2.0.0" },
      resultAt: 10_001,
    });
    const timedOut = failed(
      "BmcTimeout",
      "BMC reported 90% progress, then fell silent: no result within 1800 s (disconnected)",
    );
    expect(judge(late, 10_001)).toEqual(timedOut);
    expect(judge(late, 99_999)).toEqual(timedOut);
  });

  it("the record's own deadline wins over the wave's (a retried step keeps the first one)", () => {
    expect(judge(record({ deadline: 30_000 }), 20_000, 10_000)).toBe("pending");
    expect(judge(record({ deadline: 5_000 }), 6_000, 10_000)).toMatchObject({ ok: false });
  });

  it("without a record the wave's deadline applies, then the BMC counts as unreachable", () => {
    expect(judge(undefined, 9_999)).toBe("pending");
    expect(judge(undefined, 10_000)).toEqual(
      failed("BmcUnreachable", "BMC never acknowledged the update command within 1800 s (unreachable)"),
    );
  });
});

describe("activation: a component's verdict for every combination of flashed, staged and active", () => {
  const C = "c-1";
  const base = { componentId: C, requestId: "r", taskId: "t", sentAt: 0, deadline: 60_000 };
  const updated = (result: BmcRequestRecord["result"]): BmcRequestRecord => ({
    ...base,
    kind: "update",
    ackedAt: 10,
    ...(result === undefined ? {} : { result, resultAt: 50 }),
  });
  const answered = (status: BmcRequestRecord["status"]): BmcRequestRecord => ({
    ...base,
    kind: "query",
    ...(status === undefined ? {} : { status }),
  });
  const judgeUpdate = (record: BmcRequestRecord, later: boolean) =>
    verdict(C, "COMPUTE", record, "2.0.0", settings, 60_000, 100, undefined, later);
  const readBack = (record: BmcRequestRecord) =>
    queryVerdict(
      C,
      "COMPUTE",
      record,
      { step: "wait-bring-up", expected: "2.0.0", timeoutSeconds: 60 },
      60_000,
      100,
    );

  it.each([
    // flashed and active at once (no reset needed): passes whether or not an activation follows
    [
      "active at once, nothing follows",
      { ok: true, version: "2.0.0" },
      false,
      { ok: true, version: "2.0.0" },
    ],
    [
      "active at once, an activation follows",
      { ok: true, version: "2.0.0" },
      true,
      { ok: true, version: "2.0.0" },
    ],
    // staged: passes only when its stage activates it later, and says so
    [
      "staged, an activation follows",
      { ok: true, version: "1.0.0", pendingVersion: "2.0.0" },
      true,
      { ok: true, version: "2.0.0", staged: true },
    ],
    [
      "staged, nothing activates it",
      { ok: true, version: "1.0.0", pendingVersion: "2.0.0" },
      false,
      {
        ok: false,
        error: {
          Error: "NotActivated",
          Cause:
            "component c-1 (COMPUTE): BMC runs 1.0.0 with 2.0.0 pending: flashed but not active (no activation step follows)",
        },
      },
    ],
    // staged something else: a mismatch, whatever follows
    [
      "staged another version",
      { ok: true, version: "1.0.0", pendingVersion: "1.5.0" },
      true,
      {
        ok: false,
        error: {
          Error: "VersionMismatch",
          Cause: "component c-1 (COMPUTE): BMC reported success but runs 1.0.0, expected 2.0.0",
        },
      },
    ],
  ] as const)("update: %s", (_, result, later, expected) => {
    expect(judgeUpdate(updated(result as BmcRequestRecord["result"]), later)).toEqual({
      componentId: C,
      ...expected,
    });
  });

  it.each([
    ["active after the reset", { version: "2.0.0" }, { ok: true, version: "2.0.0" }],
    [
      "still pending after the reset",
      { version: "1.0.0", pendingVersion: "2.0.0" },
      {
        ok: false,
        error: {
          Error: "NotActivated",
          Cause:
            "component c-1 (COMPUTE): wait-bring-up: BMC runs 1.0.0 with 2.0.0 pending: flashed but not active",
        },
      },
    ],
    [
      "neither active nor pending",
      { version: "1.0.0" },
      {
        ok: false,
        error: {
          Error: "VersionMismatch",
          Cause: "component c-1 (COMPUTE): wait-bring-up: BMC runs 1.0.0, expected 2.0.0",
        },
      },
    ],
    [
      "the BMC could not reset",
      {
        version: "1.0.0",
        pendingVersion: "2.0.0",
        error: { code: "RESET_FAILED", message: "chassis refused PowerCycle" },
      },
      {
        ok: false,
        error: {
          Error: "ActivationFailed",
          Cause:
            "component c-1 (COMPUTE): wait-bring-up: BMC reported RESET_FAILED: chassis refused PowerCycle (running 1.0.0)",
        },
      },
    ],
  ] as const)("read-back: %s", (_, status, expected) => {
    expect(readBack(answered(status as BmcRequestRecord["status"]))).toEqual({ componentId: C, ...expected });
  });

  it.each([
    ["healthy (no health said)", { version: "2.0.0" }, { ok: true, version: "2.0.0" }],
    [
      "Critical, with the BMC's reason",
      { version: "2.0.0", health: "Critical", healthReason: "GPU 3 not detected" },
      {
        ok: false,
        error: {
          Error: "HealthCheckFailed",
          Cause: "component c-1 (COMPUTE): check-health: BMC reports health Critical: GPU 3 not detected",
        },
      },
    ],
    [
      "Warning, no reason",
      { version: "2.0.0", health: "Warning" },
      {
        ok: false,
        error: {
          Error: "HealthCheckFailed",
          Cause: "component c-1 (COMPUTE): check-health: BMC reports health Warning",
        },
      },
    ],
  ] as const)("check-health: %s", (_, status, expected) => {
    const check = { step: "check-health" as const, timeoutSeconds: 60 };
    expect(
      queryVerdict(C, "COMPUTE", answered(status as BmcRequestRecord["status"]), check, 60_000, 100),
    ).toEqual({ componentId: C, ...expected });
  });

  it("a reset that is not the read-back passes on any answer, pending or not; no answer by the deadline is unreachable", () => {
    const reset = { step: "ac-cycle" as const, timeoutSeconds: 60 };
    expect(
      queryVerdict(C, "COMPUTE", answered({ version: "1.0.0", pendingVersion: "2.0.0" }), reset, 60_000, 100),
    ).toEqual({ componentId: C, ok: true, version: "1.0.0" });
    expect(queryVerdict(C, "COMPUTE", answered(undefined), reset, 60_000, 100)).toBe("pending");
    expect(queryVerdict(C, "COMPUTE", answered(undefined), reset, 60_000, 60_000)).toEqual({
      componentId: C,
      ok: false,
      error: {
        Error: "BmcUnreachable",
        Cause: "component c-1 (COMPUTE): ac-cycle: BMC did not answer within 60 s (unreachable)",
      },
    });
  });
});
