import { describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../../src/domain/errors.js";
import type { ListRunsQuery } from "../../src/domain/list-queries.js";
import {
  DEFAULT_PAGE_LIMIT,
  type ListRunsQueryInput,
  MAX_PAGE_LIMIT,
  matchesKinds,
  matchesName,
  matchesRunsQuery,
  matchesStates,
  type NameQuery,
  phaseRange,
  RUN_ID_REQUIRED,
  requireRunId,
  runOperationKind,
  UPGRADE_FIRMWARE_CODE,
  validateListRunsQuery,
  validateListTargetsQuery,
  validateListTasksQuery,
  validatePage,
} from "../../src/domain/list-queries.js";
import type { PhaseScope, RunConfig, RunReason, RunStatus } from "../../src/domain/model.js";
import { isNilUuid, isUuid, NIL_UUID, normalizeUuid, uuidError } from "../../src/domain/uuid.js";

const RUN = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
const RACK = "a1b2c3d4-0000-4000-8000-000000000001";

describe("uuid", () => {
  it.each([
    [RUN, true],
    [RUN.toUpperCase(), true],
    ["3F2504e0-4f89-11D3-9a0c-0305e82c3301", true],
    [NIL_UUID, true],
    ["3f2504e04f8911d39a0c0305e82c3301", false],
    [`{${RUN}}`, false],
    [`urn:uuid:${RUN}`, false],
    [` ${RUN}`, false],
    ["3f2504e0-4f89-11d3-9a0c-0305e82c330g", false],
    ["", false],
  ])("isUuid(%j) → %s", (s, expected) => {
    expect(isUuid(s)).toBe(expected);
  });

  it.each([
    [NIL_UUID, true],
    [RUN, false],
    ["nil", false],
  ])("isNilUuid(%j) → %s", (s, expected) => {
    expect(isNilUuid(s)).toBe(expected);
  });

  it("normalizeUuid lowercases a UUID and refuses anything else", () => {
    expect(normalizeUuid(RUN.toUpperCase())).toBe(RUN);
    expect(normalizeUuid("rack-1")).toBeUndefined();
  });

  it.each([
    [RUN, undefined],
    ["", "invalid UUID length: 0"],
    ["abc", "invalid UUID length: 3"],
    ["ü", "invalid UUID length: 2"],
    ["3f2504e0_4f89_11d3_9a0c_0305e82c3301", "invalid UUID format"],
  ])("uuidError(%j) → %j, worded like Go's uuid.Parse", (s, expected) => {
    expect(uuidError(s)).toBe(expected);
  });
});

describe("pagination", () => {
  it.each([
    [undefined, { offset: 0, limit: DEFAULT_PAGE_LIMIT }],
    [
      { offset: 0, limit: 0 },
      { offset: 0, limit: 100 },
    ],
    [
      { offset: 20, limit: 10 },
      { offset: 20, limit: 10 },
    ],
    [
      { offset: 0, limit: 1000 },
      { offset: 0, limit: 1000 },
    ],
    [
      { offset: 5, limit: 1001 },
      { offset: 5, limit: MAX_PAGE_LIMIT },
    ],
  ])("%j → %j", (input, expected) => {
    expect(validatePage(input)).toEqual({ ok: true, value: expected });
  });

  it("reports a negative offset and a negative limit together", () => {
    expect(validatePage({ offset: -1, limit: -5 })).toEqual({
      ok: false,
      violations: [
        { field: "pagination.offset", rule: "offset must not be negative" },
        { field: "pagination.limit", rule: "limit must not be negative" },
      ],
    });
  });
});

describe("validateListRunsQuery", () => {
  const empty: ListRunsQueryInput = { states: [], kinds: [] };

  it("an empty request is no filter with the default page", () => {
    expect(validateListRunsQuery(empty)).toEqual({
      ok: true,
      value: { states: [], kinds: [], page: { offset: 0, limit: 100 } },
    });
  });

  it("keeps valid filters as given", () => {
    const input: ListRunsQueryInput = {
      name: { patterns: ["canary%", "100\\%"], isWildcard: true, useOr: true },
      states: [{ status: "PAUSED", reason: "SAFETY_GATE" }, { status: "FAILED" }, { reason: "PHASE_GATE" }],
      kinds: [{ type: "FIRMWARE_CONTROL", code: "upgrade" }, { type: "POWER_CONTROL" }],
      page: { offset: 10, limit: 5 },
    };
    expect(validateListRunsQuery(input)).toEqual({
      ok: true,
      value: {
        name: input.name,
        states: [{ status: "PAUSED", reason: "SAFETY_GATE" }, { status: "FAILED" }, { reason: "PHASE_GATE" }],
        kinds: [{ type: "FIRMWARE_CONTROL", code: "upgrade" }, { type: "POWER_CONTROL" }],
        page: { offset: 10, limit: 5 },
      },
    });
  });

  it.each<[string, Partial<ListRunsQueryInput>, [string, string][]]>([
    [
      "a state entry with neither status nor reason",
      { states: [{ status: "RUNNING" }, {}] },
      [["filter.states[1]", "operation run state filter must set status, reason, or both"]],
    ],
    [
      "an UNKNOWN status",
      { states: [{ status: "UNKNOWN" }] },
      [["filter.states[0].status", "unknown operation run status in filter"]],
    ],
    [
      "an UNKNOWN reason beside a valid status",
      { states: [{ status: "PAUSED", reason: "UNKNOWN" }] },
      [["filter.states[0].reason", "unknown operation run status reason in filter"]],
    ],
    [
      "an operation kind without a type",
      { kinds: [{ type: "UNKNOWN", code: "upgrade" }] },
      [["filter.operation_kinds[0].type", "operation kind filter must set operation type"]],
    ],
    [
      "an explicitly empty operation code",
      { kinds: [{ type: "FIRMWARE_CONTROL" }, { type: "FIRMWARE_CONTROL", code: "" }] },
      [["filter.operation_kinds[1].code", "operation kind filter code must not be empty"]],
    ],
    [
      "a wildcard pattern ending in a lone escape character",
      { name: { patterns: ["ok", "%rack\\"], isWildcard: true, useOr: false } },
      [["filter.name.patterns[1]", "LIKE pattern must not end with escape character"]],
    ],
    [
      "a negative offset",
      { page: { offset: -3, limit: 0 } },
      [["pagination.offset", "offset must not be negative"]],
    ],
  ])("rejects %s", (_, patch, expected) => {
    expect(validateListRunsQuery({ ...empty, ...patch })).toEqual({
      ok: false,
      violations: expected.map(([field, rule]) => ({ field, rule })),
    });
  });

  it("an exact-match pattern may end with a backslash", () => {
    const result = validateListRunsQuery({
      ...empty,
      name: { patterns: ["%rack\\"], isWildcard: false, useOr: false },
    });
    expect(result.ok).toBe(true);
  });

  it("returns every violation at once", () => {
    const result = validateListRunsQuery({
      states: [{}, { status: "UNKNOWN", reason: "UNKNOWN" }],
      kinds: [{ type: "UNKNOWN", code: "" }],
      page: { offset: -1, limit: -1 },
    });
    expect(result).toEqual({
      ok: false,
      violations: [
        { field: "filter.states[0]", rule: "operation run state filter must set status, reason, or both" },
        { field: "filter.states[1].status", rule: "unknown operation run status in filter" },
        { field: "filter.states[1].reason", rule: "unknown operation run status reason in filter" },
        { field: "filter.operation_kinds[0].type", rule: "operation kind filter must set operation type" },
        { field: "filter.operation_kinds[0].code", rule: "operation kind filter code must not be empty" },
        { field: "pagination.offset", rule: "offset must not be negative" },
        { field: "pagination.limit", rule: "limit must not be negative" },
      ],
    });
  });
});

describe("run ids and the other list queries", () => {
  it.each([undefined, "", "run-1", NIL_UUID])(
    "requireRunId(%j) throws InvalidArgument with the reference text",
    (raw) => {
      expect(() => requireRunId(raw)).toThrowError(new InvalidArgumentError("operation run ID is required"));
      expect(() => requireRunId(raw)).toThrowError(InvalidArgumentError);
    },
  );

  it("requireRunId lowercases a valid id", () => {
    expect(requireRunId(RUN.toUpperCase())).toBe(RUN);
  });

  it.each([undefined, "x", NIL_UUID])(
    "ListTargets with run id %j fails with exactly the reference message",
    (runId) => {
      const input = runId === undefined ? {} : { runId };
      expect(
        validateListTargetsQuery({
          ...input,
          status: "UNKNOWN",
          phaseScope: "UNKNOWN",
          page: { offset: -1, limit: 0 },
        }),
      ).toEqual({ ok: false, violations: [{ field: "", rule: RUN_ID_REQUIRED }] });
    },
  );

  it("ListTargets: UNKNOWN status is no filter and UNKNOWN scope is CURRENT_PHASE", () => {
    expect(
      validateListTargetsQuery({ runId: RUN.toUpperCase(), status: "UNKNOWN", phaseScope: "UNKNOWN" }),
    ).toEqual({
      ok: true,
      value: { runId: RUN, phaseScope: "CURRENT_PHASE", page: { offset: 0, limit: 100 } },
    });
  });

  it("ListTargets keeps an explicit status, scope and page", () => {
    expect(
      validateListTargetsQuery({
        runId: RUN,
        status: "BLOCKED",
        phaseScope: "COMPLETED_PHASES",
        page: { offset: 3, limit: 4 },
      }),
    ).toEqual({
      ok: true,
      value: { runId: RUN, status: "BLOCKED", phaseScope: "COMPLETED_PHASES", page: { offset: 3, limit: 4 } },
    });
  });

  it("ListTargets reports a bad page", () => {
    expect(
      validateListTargetsQuery({
        runId: RUN,
        status: "UNKNOWN",
        phaseScope: "UNKNOWN",
        page: { offset: 0, limit: -1 },
      }),
    ).toEqual({ ok: false, violations: [{ field: "pagination.limit", rule: "limit must not be negative" }] });
  });

  it("ListTasks lowercases rack and component ids", () => {
    expect(
      validateListTasksQuery({
        rackId: RACK.toUpperCase(),
        componentId: RUN.toUpperCase(),
        activeOnly: true,
        withReport: false,
      }),
    ).toEqual({
      ok: true,
      value: {
        rackId: RACK,
        componentId: RUN,
        activeOnly: true,
        withReport: false,
        page: { offset: 0, limit: 100 },
      },
    });
  });

  it("ListTasks without ids filters nothing by rack or component", () => {
    expect(
      validateListTasksQuery({ activeOnly: false, withReport: true, page: { offset: 0, limit: 2000 } }),
    ).toEqual({
      ok: true,
      value: { activeOnly: false, withReport: true, page: { offset: 0, limit: 1000 } },
    });
  });

  it("ListTasks reports malformed ids and a bad page together", () => {
    expect(
      validateListTasksQuery({
        rackId: "rack-1",
        componentId: "",
        activeOnly: false,
        withReport: false,
        page: { offset: -2, limit: 1 },
      }),
    ).toEqual({
      ok: false,
      violations: [
        { field: "pagination.offset", rule: "offset must not be negative" },
        { field: "rack_id", rule: 'must be a valid UUID (got "rack-1")' },
        { field: "component_id", rule: 'must be a valid UUID (got "")' },
      ],
    });
  });
});

describe("matchesName", () => {
  const exact = (...patterns: string[]): NameQuery => ({ patterns, isWildcard: false, useOr: false });
  const like = (useOr: boolean, ...patterns: string[]): NameQuery => ({ patterns, isWildcard: true, useOr });

  it.each<[string, NameQuery, boolean]>([
    ["anything", exact(), true],
    ["fw-canary", exact("fw-canary"), true],
    ["fw-canary", exact("FW-CANARY"), false],
    ["fw-canary", exact("fw-can"), false],
    ["fw-canary", exact("other", "fw-canary"), true],
    ["fw-canary", { patterns: ["other", "fw-canary"], isWildcard: false, useOr: true }, true],
    ["fw-canary", exact("fw%"), false],
    // A wildcard pattern touching neither end with % means "contains".
    ["fw-canary-1", like(false, "canary"), true],
    ["fw-canary-1", like(false, "CANARY"), false],
    ["fw-canary-1", like(false, "canary%"), false],
    ["canary-1", like(false, "canary%"), true],
    ["fw-canary", like(false, "%canary"), true],
    ["fw-canary-1", like(false, "%canary"), false],
    ["fw-canary-1", like(false, "fw_canary"), true],
    ["fw--canary", like(false, "fw_canary%"), false],
    ["a", like(false, "_"), true],
    ["é", like(false, "_"), true],
    ["🚀", like(false, "%_%"), true],
    ["", like(false, "_"), false],
    ["", like(false, ""), true],
    ["x", like(false, ""), false],
    ["anything", like(false, "%"), true],
    ["", like(false, "%%"), true],
    ["abc", like(false, "%a%b%c%"), true],
    ["acb", like(false, "%a%b%c%"), false],
    ["aaab", like(false, "%a%ab"), true],
    ["mississippi", like(false, "%issip%i"), true],
    ["100%", like(false, "100\\%"), true],
    ["1000", like(false, "100\\%"), false],
    ["a_b", like(false, "%a\\_b%"), true],
    ["axb", like(false, "%a\\_b%"), false],
    ["c:\\fw", like(false, "%\\\\%"), true],
    ["rack\\", like(false, "%rack\\"), false],
    // Several wildcard patterns: AND unless use_or.
    ["fw-canary-eu", like(false, "canary", "eu"), true],
    ["fw-canary-us", like(false, "canary", "eu"), false],
    ["fw-canary-us", like(true, "canary", "eu"), true],
    ["fw-full-us", like(true, "canary", "eu"), false],
  ])("%j against %j → %s", (name, query, expected) => {
    expect(matchesName(name, query)).toBe(expected);
  });

  // A backtracking matcher takes time exponential in the `%` count here and never ends within the
  // test timeout; the single-backtrack scan is O(name × pattern). No clock is read: the timeout is
  // the guard, so the machine's load cannot make this fail.
  it("answers patterns that make backtracking regexes explode (5,000 chars, 30 wildcards)", () => {
    expect(matchesName("a".repeat(5000), like(false, `${"%a".repeat(30)}%b`))).toBe(false);
    expect(matchesName(`${"a".repeat(5000)}b`, like(false, `${"%a".repeat(30)}%b`))).toBe(true);
  });
});

describe("matchesStates, matchesKinds and matchesRunsQuery", () => {
  const config = { operation: { kind: "upgradeFirmware" } } as RunConfig;
  const run = (status: RunStatus, reason: RunReason) => ({ name: "fw-canary", status, reason, config });

  it.each<[ListRunsQuery["states"], boolean]>([
    [[], true],
    [[{ status: "PAUSED" }], true],
    [[{ reason: "SAFETY_GATE" }], true],
    [[{ status: "PAUSED", reason: "SAFETY_GATE" }], true],
    [[{ status: "PAUSED", reason: "PHASE_GATE" }], false],
    [[{ status: "RUNNING" }], false],
    [[{ status: "RUNNING" }, { reason: "SAFETY_GATE" }], true],
  ])("a PAUSED/SAFETY_GATE run against states %j → %s", (states, expected) => {
    expect(matchesStates(run("PAUSED", "SAFETY_GATE"), states)).toBe(expected);
  });

  it("every run is FIRMWARE_CONTROL with the reference's firmware upgrade code", () => {
    expect(UPGRADE_FIRMWARE_CODE).toBe("upgrade");
    expect(runOperationKind(config)).toEqual({ type: "FIRMWARE_CONTROL", code: "upgrade" });
  });

  it.each<[ListRunsQuery["kinds"], boolean]>([
    [[], true],
    [[{ type: "FIRMWARE_CONTROL" }], true],
    [[{ type: "FIRMWARE_CONTROL", code: "upgrade" }], true],
    [[{ type: "FIRMWARE_CONTROL", code: "UpgradeFirmware" }], false],
    [[{ type: "POWER_CONTROL" }], false],
    [[{ type: "POWER_CONTROL" }, { type: "FIRMWARE_CONTROL", code: "upgrade" }], true],
  ])("kinds %j → %s", (kinds, expected) => {
    expect(matchesKinds(run("RUNNING", "NONE"), kinds)).toBe(expected);
  });

  it.each<[string, Partial<ListRunsQuery>, boolean]>([
    ["no filter", {}, true],
    ["a matching name", { name: { patterns: ["canary"], isWildcard: true, useOr: false } }, true],
    ["a different name", { name: { patterns: ["full"], isWildcard: true, useOr: false } }, false],
    ["a different state", { states: [{ status: "COMPLETED" }] }, false],
    ["a different kind", { kinds: [{ type: "POWER_CONTROL" }] }, false],
    [
      "all three matching",
      {
        name: { patterns: ["fw-canary"], isWildcard: false, useOr: false },
        states: [{ status: "RUNNING" }],
        kinds: [{ type: "FIRMWARE_CONTROL" }],
      },
      true,
    ],
  ])("matchesRunsQuery with %s → %s", (_, patch, expected) => {
    const query: ListRunsQuery = { states: [], kinds: [], page: { offset: 0, limit: 100 }, ...patch };
    expect(matchesRunsQuery(run("RUNNING", "NONE"), query)).toBe(expected);
  });
});

describe("phaseRange", () => {
  it.each<[PhaseScope, number, ReturnType<typeof phaseRange>]>([
    ["CURRENT_PHASE", 0, { from: 0, to: 0 }],
    ["CURRENT_PHASE", 2, { from: 2, to: 2 }],
    ["COMPLETED_PHASES", 0, "empty"],
    ["COMPLETED_PHASES", 1, { from: 0, to: 0 }],
    ["COMPLETED_PHASES", 2, { from: 0, to: 1 }],
    ["CURRENT_AND_COMPLETED_PHASES", 0, { from: 0, to: 0 }],
    ["CURRENT_AND_COMPLETED_PHASES", 2, { from: 0, to: 2 }],
  ])("%s at phase %i → %j", (scope, current, expected) => {
    expect(phaseRange(scope, current)).toEqual(expected);
  });
});
