/**
 * The read side end to end: GetOperationRun (with and without stats), ListOperationRuns (order,
 * ties, name/state/kind filters, pagination, total), ListOperationRunTargets (phase scopes, status
 * filter, order, total before pagination, rack external ids), plus Version, the health check and
 * the inventory admin listing. Runs that must move use BMCs that succeed or fail in 50 ms; runs
 * that must stand still use BMCs that hang, so their targets stay SUBMITTED or PENDING.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ListOperationRunTargetsRequest,
  type OperationRunFilter,
  type OperationRunStateFilter,
  OperationRunStatus,
  OperationRunStatusReason,
  OperationRunTargetPhaseScope,
  OperationRunTargetStatus,
  OperationType,
  type Pagination,
} from "../../src/gen/flow/v1/flow.js";
import { FAST_FAILURE, FAST_SUCCESS, rackGroup } from "../support/fixtures-inventory.js";
import {
  createRun,
  eventually,
  failure,
  getRun,
  percentagePhases,
  runRequest,
  sleep,
  startTestStack,
  stateOf,
  type TestStack,
  targetReport,
  waitForStatus,
  waitForTerminal,
} from "../support/stack.js";

const FAST = rackGroup(10, { name: "fast", count: 16, behaviour: FAST_SUCCESS });
const HANG = rackGroup(11, { name: "hang", count: 16 });
const NOEXT = rackGroup(12, { name: "noext", count: 2, externalIds: false });
const FAIL = rackGroup(13, { name: "fail", count: 4, behaviour: FAST_FAILURE });
const GROUPS = [FAST, HANG, NOEXT, FAIL];

const S = OperationRunStatus;
const R = OperationRunStatusReason;
const T = OperationRunTargetStatus;
const P = OperationRunTargetPhaseScope;
const UNKNOWN_ID = "0badc0de-0000-4000-8000-000000000000";
const NIL_ID = "00000000-0000-0000-0000-000000000000";

let s: TestStack;
/** Runs that must finish before their test can look at them: started first, awaited there. */
const runs = { gated: "", failed: "", mixed: "" };

beforeAll(async () => {
  s = await startTestStack({ label: "queries", groups: GROUPS });
  runs.gated = await createRun(
    s.flow,
    runRequest({ rackIds: FAST.ids.slice(0, 7), phasePolicy: percentagePhases([50, 50]), maxConcurrent: 7 }),
  );
  runs.failed = await createRun(s.flow, runRequest({ rackIds: FAIL.ids.slice(0, 2) }));
  runs.mixed = await createRun(s.flow, runRequest({ rackIds: [FAIL.ids[2]!, FAST.ids[13]!] }));
});
afterAll(async () => {
  await s?.stop();
});

/** Stops a run whose BMCs hang, so its child tasks stop polling for the rest of the suite. */
const cancel = (id: string) => s.flow.cancelOperationRun({ id: { id }, reason: "" });

const zeroOutcomes = { completed: 0, failed: 0, terminated: 0, skipped: 0 };

describe("service basics", () => {
  it("Version returns the stack's build info (the local default: startLocalStack reads no environment)", async () => {
    expect(await s.flow.version({})).toEqual({ version: "0.1.0-local", buildTime: "", gitCommit: "" });
  });

  it.each(["", "v1.Flow", "flowadmin.v1.FlowInventoryAdmin"])(
    "the health check reports %j SERVING",
    async (name) => {
      expect(await s.health(name)).toBe("SERVING");
    },
  );

  it("the inventory admin lists the loaded racks with their total", async () => {
    const all = GROUPS.reduce((n, g) => n + g.racks.length, 0);
    const page = await s.admin.listRacks({ pagination: { offset: 0, limit: 2 } });
    expect(page.total).toBe(all);
    expect(page.racks).toHaveLength(2);
  });
});

describe("GetOperationRun", () => {
  let id: string;
  beforeAll(async () => {
    id = await createRun(
      s.flow,
      runRequest({ name: "get-me", rackIds: HANG.ids.slice(0, 3), maxConcurrent: 1 }),
    );
  });
  afterAll(() => cancel(id));

  it("without include_stats: summary and configuration, no stats", async () => {
    const run = await getRun(s.flow, id, false);
    expect(run.stats).toBeUndefined();
    expect(run.summary?.id?.id).toBe(id);
    expect(run.summary?.name).toBe("get-me");
    expect(run.configuration?.selector?.selector?.value.percentage).toBe(100);
  });

  it("with include_stats: selected targets count planned ones; pending and submitted are no outcome", async () => {
    const run = await getRun(s.flow, id, true);
    expect(run.stats).toEqual({
      currentPhaseStats: { phaseIndex: 0, selectedTargets: 3, outcomeCounts: zeroOutcomes },
      cumulativePhaseStats: { phaseIndex: 0, selectedTargets: 3, outcomeCounts: zeroOutcomes },
    });
  });

  it("accepts the id in upper case and answers it in lower case", async () => {
    const run = await getRun(s.flow, id.toUpperCase());
    expect(run.summary?.id?.id).toBe(id);
  });

  it.each([
    ["absent", undefined],
    ["empty", { id: "" }],
    ["malformed", { id: "not-a-uuid" }],
    ["nil", { id: NIL_ID }],
    ["braced", { id: `{${UNKNOWN_ID}}` }],
  ])("an %s id is InvalidArgument 'operation run ID is required'", async (_title, runId) => {
    expect(await failure(s.flow.getOperationRun({ id: runId, includeStats: true }))).toEqual({
      code: "INVALID_ARGUMENT",
      details: "operation run ID is required",
    });
  });

  it("an unknown id is NotFound", async () => {
    expect(await failure(s.flow.getOperationRun({ id: { id: UNKNOWN_ID }, includeStats: false }))).toEqual({
      code: "NOT_FOUND",
      details: `operation run not found: ${UNKNOWN_ID}`,
    });
  });
});

describe("ListOperationRuns", () => {
  const token = `q${randomUUID().slice(0, 6)}`;
  const name = (suffix: string) => `${token}-${suffix}`;
  const ids: Record<string, string> = {};

  const list = async (filter: Partial<OperationRunFilter>, pagination?: Pagination) => {
    const res = await s.flow.listOperationRuns({
      filter: { name: undefined, states: [], operationKinds: [], ...filter },
      pagination,
    });
    return { names: res.operationRuns.map((r) => r.name), total: res.total, runs: res.operationRuns };
  };
  const wildcard = (...patterns: string[]) => ({ name: { patterns, isWildcard: true, useOr: false } });
  const mine = wildcard(token);

  beforeAll(async () => {
    // Created one after the other, a few ms apart: newest first is beta-1, alpha-2, alpha-1.
    for (const [suffix, rack] of [
      ["alpha-1", HANG.ids[3]!],
      ["alpha-2", HANG.ids[4]!],
      ["beta-1", HANG.ids[5]!],
    ] as const) {
      ids[suffix] = await createRun(s.flow, runRequest({ name: name(suffix), rackIds: [rack] }));
      await sleep(5);
    }
    await s.flow.pauseOperationRun({ id: { id: ids["alpha-2"]! } });
    await cancel(ids["beta-1"]!);
  });
  // The filters below need alpha-1 active and alpha-2 paused until the end of this block.
  afterAll(() => Promise.all([cancel(ids["alpha-1"]!), cancel(ids["alpha-2"]!)]));

  it("lists newest first, with lightweight summaries", async () => {
    const { names, total, runs } = await list(mine);
    expect(names).toEqual([name("beta-1"), name("alpha-2"), name("alpha-1")]);
    expect(total).toBe(3);
    expect(runs[0]).toMatchObject({
      id: { id: ids["beta-1"] },
      operationKind: { type: OperationType.OPERATION_TYPE_FIRMWARE_CONTROL, code: "upgrade" },
      state: { status: S.OPERATION_RUN_STATUS_CANCELLED, reason: R.OPERATION_RUN_STATUS_REASON_NONE },
      statusMessage: "operation run cancelled",
      totalPhases: 1,
    });
    expect(runs[0]).not.toHaveProperty("configuration");
  });

  it("orders by creation time descending and breaks ties by id descending", async () => {
    // Created at once, so some may share a millisecond; the order must hold either way.
    const other = `t${randomUUID().slice(0, 6)}`;
    await Promise.all(
      [6, 7, 8, 9].map((n) =>
        createRun(s.flow, runRequest({ name: `${other}-${n}`, rackIds: [HANG.ids[n]!] })),
      ),
    );
    const { runs } = await list({}, { offset: 0, limit: 1000 });
    for (let i = 1; i < runs.length; i++) {
      const [a, b] = [runs[i - 1]!, runs[i]!];
      const [ta, tb] = [a.createdAt!.getTime(), b.createdAt!.getTime()];
      expect(ta > tb || (ta === tb && a.id!.id > b.id!.id), `${a.name} before ${b.name}`).toBe(true);
    }
  });

  describe("name filter", () => {
    const exact = (...patterns: string[]) => ({ patterns, isWildcard: false, useOr: false });
    const all = (...patterns: string[]) => ({ patterns, isWildcard: true, useOr: false });
    const any = (...patterns: string[]) => ({ patterns, isWildcard: true, useOr: true });
    it.each([
      ["exact: one name", exact(name("alpha-1")), ["alpha-1"]],
      ["exact: any of several names", exact(name("alpha-1"), name("beta-1")), ["beta-1", "alpha-1"]],
      ["exact: a prefix is no match", exact(name("alpha")), []],
      ["wildcard: a bare pattern means contains", all(`${token}-alpha`), ["alpha-2", "alpha-1"]],
      ["wildcard: _ is exactly one character", all(`${token}-alpha-_`), ["alpha-2", "alpha-1"]],
      ["wildcard: % at the end anchors the start", all(`${token}-al%`), ["alpha-2", "alpha-1"]],
      ["wildcard: % at the start anchors the end", all(token, "%-1"), ["beta-1", "alpha-1"]],
      ["wildcard: several patterns are AND-ed", all(token, "alpha", "-2"), ["alpha-2"]],
      [
        "wildcard with use_or: patterns are OR-ed",
        any(`${token}-beta`, `${token}-alpha-1`),
        ["beta-1", "alpha-1"],
      ],
      ["wildcard: case-sensitive", all(token.toUpperCase()), []],
    ])("%s", async (_title, query, expected) => {
      const { names, total } = await list({ name: query });
      expect(names).toEqual(expected.map(name));
      expect(total).toBe(expected.length);
    });
  });

  describe("state filter", () => {
    const state = (
      status?: OperationRunStatus,
      reason?: OperationRunStatusReason,
    ): OperationRunStateFilter => ({
      status,
      reason,
    });
    it.each([
      ["status only", [state(S.OPERATION_RUN_STATUS_PAUSED)], ["alpha-2"]],
      ["reason only", [state(undefined, R.OPERATION_RUN_STATUS_REASON_OPERATOR_PAUSED)], ["alpha-2"]],
      [
        "status AND reason, matching",
        [state(S.OPERATION_RUN_STATUS_PAUSED, R.OPERATION_RUN_STATUS_REASON_OPERATOR_PAUSED)],
        ["alpha-2"],
      ],
      [
        "status AND reason, not matching",
        [state(S.OPERATION_RUN_STATUS_PAUSED, R.OPERATION_RUN_STATUS_REASON_PHASE_GATE)],
        [],
      ],
      [
        "entries OR-ed",
        [state(S.OPERATION_RUN_STATUS_CANCELLED), state(S.OPERATION_RUN_STATUS_PAUSED)],
        ["beta-1", "alpha-2"],
      ],
      [
        "reason NONE: the cancelled and the active run",
        [state(undefined, R.OPERATION_RUN_STATUS_REASON_NONE)],
        ["beta-1", "alpha-1"],
      ],
      ["a status no run has", [state(S.OPERATION_RUN_STATUS_COMPLETED)], []],
    ])("%s", async (_title, states, expected) => {
      const { names, total } = await list({ ...mine, states });
      expect(names).toEqual(expected.map(name));
      expect(total).toBe(expected.length);
    });
  });

  describe("operation kind filter", () => {
    const FW = OperationType.OPERATION_TYPE_FIRMWARE_CONTROL;
    const POWER = OperationType.OPERATION_TYPE_POWER_CONTROL;
    it.each([
      ["firmware control", [{ type: FW }], 3],
      ["firmware control with code 'upgrade'", [{ type: FW, code: "upgrade" }], 3],
      ["firmware control with another code", [{ type: FW, code: "reboot" }], 0],
      ["power control", [{ type: POWER }], 0],
      ["power OR firmware", [{ type: POWER }, { type: FW }], 3],
    ])("%s", async (_title, operationKinds, count) => {
      const { total, names } = await list({ ...mine, operationKinds });
      expect(total).toBe(count);
      expect(names).toHaveLength(count);
    });
  });

  describe("pagination and total", () => {
    it.each([
      ["first page", { offset: 0, limit: 2 }, ["beta-1", "alpha-2"]],
      ["second page", { offset: 2, limit: 2 }, ["alpha-1"]],
      ["past the end", { offset: 5, limit: 2 }, []],
      ["limit 0 means the default page (100)", { offset: 0, limit: 0 }, ["beta-1", "alpha-2", "alpha-1"]],
    ])("%s: total counts before pagination", async (_title, pagination, expected) => {
      const { names, total } = await list(mine, pagination);
      expect(names).toEqual(expected.map(name));
      expect(total).toBe(3);
    });
  });

  describe("invalid requests: InvalidArgument naming the field", () => {
    const request = (filter: Partial<OperationRunFilter>, pagination?: Pagination) => ({
      filter: { name: undefined, states: [], operationKinds: [], ...filter },
      pagination,
    });
    it.each([
      [
        "a state entry with neither status nor reason",
        request({ states: [{}] }),
        "filter.states[0]: operation run state filter must set status, reason, or both",
      ],
      [
        "an UNKNOWN status",
        request({ states: [{ status: S.OPERATION_RUN_STATUS_UNKNOWN }] }),
        "filter.states[0].status: unknown operation run status in filter",
      ],
      [
        "an UNKNOWN reason (second entry)",
        request({
          states: [
            { status: S.OPERATION_RUN_STATUS_PAUSED },
            { reason: R.OPERATION_RUN_STATUS_REASON_UNKNOWN },
          ],
        }),
        "filter.states[1].reason: unknown operation run status reason in filter",
      ],
      [
        "an operation kind without a type",
        request({ operationKinds: [{ type: OperationType.OPERATION_TYPE_UNKNOWN }] }),
        "filter.operation_kinds[0].type: operation kind filter must set operation type",
      ],
      [
        "an empty operation kind code",
        request({ operationKinds: [{ type: OperationType.OPERATION_TYPE_FIRMWARE_CONTROL, code: "" }] }),
        "filter.operation_kinds[0].code: operation kind filter code must not be empty",
      ],
      [
        "a wildcard pattern ending in the escape character",
        request({ name: { patterns: ["%abc\\"], isWildcard: true, useOr: false } }),
        "filter.name.patterns[0]: LIKE pattern must not end with escape character",
      ],
      [
        "a negative offset",
        request({}, { offset: -1, limit: 10 }),
        "pagination.offset: offset must not be negative",
      ],
      [
        "a negative limit",
        request({}, { offset: 0, limit: -5 }),
        "pagination.limit: limit must not be negative",
      ],
      [
        "several problems at once",
        request({ states: [{}] }, { offset: -1, limit: 0 }),
        "filter.states[0]: operation run state filter must set status, reason, or both; pagination.offset: offset must not be negative",
      ],
    ])("%s", async (_title, req, details) => {
      expect(await failure(s.flow.listOperationRuns(req))).toEqual({ code: "INVALID_ARGUMENT", details });
    });
  });
});

describe("ListOperationRunTargets", () => {
  const targetsOf = async (id: string, extra: Partial<ListOperationRunTargetsRequest> = {}) =>
    s.flow.listOperationRunTargets({ operationRunId: { id }, status: 0, phaseScope: 0, ...extra });
  const phases = (ts: { phaseIndex: number }[]) => ts.map((t) => t.phaseIndex);

  it("phase scopes follow the current phase; 7 targets at 50/50 are 4 in phase 0 and 3 in phase 1; stats per scope", async () => {
    const id = runs.gated;
    const atGate = await waitForStatus(s.flow, id, [S.OPERATION_RUN_STATUS_PAUSED]);
    expect(stateOf(atGate), await targetReport(s.flow, id)).toEqual({
      status: S.OPERATION_RUN_STATUS_PAUSED,
      reason: R.OPERATION_RUN_STATUS_REASON_PHASE_GATE,
      message: "waiting for phase advance",
    });
    expect(atGate.summary?.totalPhases).toBe(2);
    expect(atGate.stats).toEqual({
      currentPhaseStats: {
        phaseIndex: 0,
        selectedTargets: 4,
        outcomeCounts: { ...zeroOutcomes, completed: 4 },
      },
      cumulativePhaseStats: {
        phaseIndex: 0,
        selectedTargets: 4,
        outcomeCounts: { ...zeroOutcomes, completed: 4 },
      },
    });

    // At phase 0 of 2: phase 1's three targets exist but are the future.
    const omitted = await targetsOf(id);
    expect(phases(omitted.targets)).toEqual([0, 0, 0, 0]);
    expect(omitted.total).toBe(4);
    expect(
      (await targetsOf(id, { phaseScope: P.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_PHASE })).targets,
    ).toEqual(omitted.targets);
    expect(await targetsOf(id, { phaseScope: P.OPERATION_RUN_TARGET_PHASE_SCOPE_COMPLETED_PHASES })).toEqual({
      targets: [],
      total: 0,
    });
    const both0 = await targetsOf(id, {
      phaseScope: P.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_AND_COMPLETED_PHASES,
    });
    expect(phases(both0.targets)).toEqual([0, 0, 0, 0]);
    expect(both0.total).toBe(4);

    const advanced = await s.flow.advanceOperationRunPhase({ id: { id }, expectedPhaseIndex: 1 });
    expect(stateOf(advanced)).toEqual({
      status: S.OPERATION_RUN_STATUS_RUNNING,
      reason: R.OPERATION_RUN_STATUS_REASON_NONE,
      message: "advanced to phase 1",
    });
    const done = await waitForTerminal(s.flow, id);
    expect(stateOf(done), await targetReport(s.flow, id)).toEqual({
      status: S.OPERATION_RUN_STATUS_COMPLETED,
      reason: R.OPERATION_RUN_STATUS_REASON_NONE,
      message: "operation run completed",
    });
    expect(done.summary?.finishedAt).toBeInstanceOf(Date);
    expect(done.stats).toEqual({
      currentPhaseStats: {
        phaseIndex: 1,
        selectedTargets: 3,
        outcomeCounts: { ...zeroOutcomes, completed: 3 },
      },
      cumulativePhaseStats: {
        phaseIndex: 1,
        selectedTargets: 7,
        outcomeCounts: { ...zeroOutcomes, completed: 7 },
      },
    });

    // At phase 1 of 2.
    const current = await targetsOf(id);
    expect(phases(current.targets)).toEqual([1, 1, 1]);
    expect(current.targets.map((t) => t.sequenceIndex)).toEqual([4, 5, 6]);
    const completed = await targetsOf(id, {
      phaseScope: P.OPERATION_RUN_TARGET_PHASE_SCOPE_COMPLETED_PHASES,
    });
    expect(completed.targets.map((t) => t.rackId?.id)).toEqual(both0.targets.map((t) => t.rackId?.id));
    const all = await targetsOf(id, {
      phaseScope: P.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_AND_COMPLETED_PHASES,
    });
    expect(phases(all.targets)).toEqual([0, 0, 0, 0, 1, 1, 1]);
    expect(all.targets.map((t) => t.sequenceIndex)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(all.targets.map((t) => t.rackId?.id).sort()).toEqual(FAST.ids.slice(0, 7).sort());
    expect(all.targets.every((t) => t.status === T.OPERATION_RUN_TARGET_STATUS_COMPLETED)).toBe(true);
  });

  it("status filter, order, rack external ids, and total counted before pagination", async () => {
    const racks = HANG.ids.slice(10, 15);
    const id = await createRun(
      s.flow,
      runRequest({ rackIds: racks, maxConcurrent: 2, seed: "st", orderingSeed: "or" }),
    );
    // Two slots: two targets get a child task that never ends, three wait.
    const submitted = await eventually(
      () => targetsOf(id, { status: T.OPERATION_RUN_TARGET_STATUS_SUBMITTED }),
      (res) => res.total === 2,
      "two SUBMITTED targets",
    );
    for (const t of submitted.targets) {
      expect(t.taskId?.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(t.operationRunId?.id).toBe(id);
    }
    const pending = await targetsOf(id, { status: T.OPERATION_RUN_TARGET_STATUS_PENDING });
    expect(pending.total).toBe(3);
    expect(pending.targets.every((t) => t.taskId === undefined)).toBe(true);
    expect(await targetsOf(id, { status: T.OPERATION_RUN_TARGET_STATUS_COMPLETED })).toEqual({
      targets: [],
      total: 0,
    });

    const all = await targetsOf(id);
    expect(all.targets.map((t) => t.sequenceIndex)).toEqual([0, 1, 2, 3, 4]);
    for (const t of all.targets) {
      const n = HANG.ids.indexOf(t.rackId!.id);
      expect(t.rackExternalId).toBe(`EXT-hang-${n}`);
    }
    const page = await targetsOf(id, { pagination: { offset: 1, limit: 2 } });
    expect(page.total).toBe(5);
    expect(page.targets.map((t) => t.sequenceIndex)).toEqual([1, 2]);

    const run = await getRun(s.flow, id, true);
    expect(run.stats?.currentPhaseStats).toEqual({
      phaseIndex: 0,
      selectedTargets: 5,
      outcomeCounts: zeroOutcomes,
    });
  });

  it("outcomes: every target failed → FAILED; some failed → COMPLETED_WITH_FAILURES; stats count them", async () => {
    const { failed, mixed } = runs;
    const [f, m] = await Promise.all([waitForTerminal(s.flow, failed), waitForTerminal(s.flow, mixed)]);
    expect(stateOf(f)).toEqual({
      status: S.OPERATION_RUN_STATUS_FAILED,
      reason: R.OPERATION_RUN_STATUS_REASON_NONE,
      message: "operation run failed",
    });
    expect(f.stats?.cumulativePhaseStats?.outcomeCounts).toEqual({ ...zeroOutcomes, failed: 2 });
    expect(stateOf(m)).toEqual({
      status: S.OPERATION_RUN_STATUS_COMPLETED_WITH_FAILURES,
      reason: R.OPERATION_RUN_STATUS_REASON_NONE,
      message: "operation run completed with failed targets",
    });
    expect(m.stats?.cumulativePhaseStats?.outcomeCounts).toEqual({
      ...zeroOutcomes,
      completed: 1,
      failed: 1,
    });
    const failedTargets = await targetsOf(mixed, { status: T.OPERATION_RUN_TARGET_STATUS_FAILED });
    expect(failedTargets.targets.map((t) => t.rackId?.id)).toEqual([FAIL.ids[2]]);
  });

  it("a target whose rack has no external id makes the listing FailedPrecondition", async () => {
    const id = await createRun(s.flow, runRequest({ rackIds: [NOEXT.ids[0]!] }));
    expect(await failure(targetsOf(id))).toEqual({
      code: "FAILED_PRECONDITION",
      details: `rack "${NOEXT.ids[0]}" has no external ID`,
    });
  });

  it.each([
    ["an absent run id", { operationRunId: undefined }, "INVALID_ARGUMENT", "operation run ID is required"],
    [
      "a malformed run id",
      { operationRunId: { id: "123" } },
      "INVALID_ARGUMENT",
      "operation run ID is required",
    ],
    ["a nil run id", { operationRunId: { id: NIL_ID } }, "INVALID_ARGUMENT", "operation run ID is required"],
    [
      "an unknown run id",
      { operationRunId: { id: UNKNOWN_ID } },
      "NOT_FOUND",
      `operation run not found: ${UNKNOWN_ID}`,
    ],
    [
      "an undefined phase scope number",
      { phaseScope: 9 as OperationRunTargetPhaseScope },
      "INVALID_ARGUMENT",
      "phase_scope: unknown enum value 9",
    ],
    [
      "an undefined status number",
      { status: 99 as OperationRunTargetStatus },
      "INVALID_ARGUMENT",
      "status: unknown enum value 99",
    ],
    [
      "a negative offset",
      { pagination: { offset: -2, limit: 1 } },
      "INVALID_ARGUMENT",
      "pagination.offset: offset must not be negative",
    ],
  ] as const)("%s → %s", async (_title, extra, code, details) => {
    const request: ListOperationRunTargetsRequest = {
      operationRunId: { id: UNKNOWN_ID },
      status: 0,
      phaseScope: 0,
      ...extra,
    };
    expect(await failure(s.flow.listOperationRunTargets(request))).toEqual({ code, details });
  });
});
