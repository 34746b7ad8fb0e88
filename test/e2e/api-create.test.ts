/**
 * CreateOperationRun and PlanOperationRun end to end: a real gRPC client against the local stack
 * (moto DynamoDB, the use cases, the gRPC server, the simulated BMC fleet). Covers the create rules
 * of operation-runs.md and reference-behaviour.md: validation with the field named, the defaults
 * stored in the effective configuration, planner errors and their status codes, the candidate
 * limit, seeded selection and ordering, phase allocation, exclusions, and credentials never read back.
 *
 * Every BMC of this suite hangs: created runs dispatch, but nothing here waits for them.
 */
import { createHash } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  ComponentType,
  type CreateOperationRunRequest,
  OperationRunPhysicalLocationOrdering_Strategy,
  OperationRunSafetyGateScope,
  OperationRunTargetPhaseScope,
  OperationType,
} from "../../src/gen/flow/v1/flow.js";
import { componentId, FAST_SUCCESS, rackGroup, rackId } from "../support/fixtures-inventory.js";
import {
  countGate,
  countPhases,
  createRun,
  equalPhases,
  failure,
  getRun,
  listTargets,
  pauseActiveRuns,
  percentagePhases,
  type RunSpec,
  racksSpec,
  rateGate,
  runRequest,
  sleep,
  startTestStack,
  type TestStack,
} from "../support/stack.js";

const PLAN = rackGroup(1, { name: "plan", count: 14 });
const BULK = rackGroup(2, { name: "bulk", count: 101, types: ["COMPUTE"] });
const CDU = rackGroup(3, { name: "cdu", count: 3, types: ["CDU", "COMPUTE"] });
const NVL_DOMAIN = { id: "0000000a-0000-4000-8000-00000000d001", name: "nvl-e2e" };
const NVL = rackGroup(4, { name: "nvl", count: 2, nvlDomain: NVL_DOMAIN });
/** Racks for plans whose exact shape matters; runs over them hang too, which plans do not see. */
const SPARE = rackGroup(5, { name: "spare", count: 12 });

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const UNKNOWN_ID = "0badc0de-0000-4000-8000-000000000000";
const NIL_ID = "00000000-0000-0000-0000-000000000000";

let s: TestStack;

beforeAll(async () => {
  s = await startTestStack({
    label: "create",
    groups: [PLAN, BULK, CDU, NVL, SPARE],
    defaults: FAST_SUCCESS,
    tickMs: 2000,
  });
});
afterAll(async () => {
  await s?.stop();
});
// Runs created here only need to exist; left active, they would keep the dispatcher busy.
afterEach(async () => {
  await pauseActiveRuns(s.flow);
});

async function runsTotal(): Promise<number> {
  return (await s.flow.listOperationRuns({ filter: undefined, pagination: { offset: 0, limit: 1 } })).total;
}

type Written = { runs: number; targets: number; listed: number };

/** Everything a create could write: raw items of the runs and targets tables, and the listed total. */
async function written(): Promise<Written> {
  const [items, listed] = await Promise.all([s.countItems(), runsTotal()]);
  return { ...items, listed };
}

/** Calls `create`, expects it to fail with `code`/`details`, and proves nothing was written. */
async function expectRejected(
  request: CreateOperationRunRequest,
  code: string,
  details: string,
): Promise<void> {
  const before = await written();
  expect(await failure(s.flow.createOperationRun(request))).toEqual({ code, details });
  expect(await written()).toEqual(before);
}

/** The reference's seeded order, computed independently of src/domain: sha256 hex, ties by id. */
function seeded(ids: readonly string[], seed: string): string[] {
  const key = (id: string) => createHash("sha256").update(`${seed}:${id}`).digest("hex");
  return [...ids].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : a < b ? -1 : 1));
}

const RETRY = "configuration.options.conflict_policy.retry";
const GATES = "configuration.options.safety_policy.gates";
const PHASES = "configuration.options.phase_policy";
const SCOPE = "configuration.operation.target_scope";
const FILTER = `${SCOPE}.default_scope_component_filter`;
const SPEC = "configuration.operation.upgrade_firmware.target_spec";

const seconds = (n: number) => ({ seconds: n, nanos: 0 });
const one = [PLAN.ids[0]!];

describe("CreateOperationRun validation: InvalidArgument naming the field, nothing written", () => {
  const cases: [string, RunSpec | (() => CreateOperationRunRequest), string][] = [
    ["a blank name (trimmed first)", { name: "   ", rackIds: one }, "name: name is required"],
    [
      "no configuration and no name: every violation at once, joined by '; '",
      () => ({ ...runRequest(), name: "", configuration: undefined }),
      "name: name is required; configuration: configuration is required",
    ],
    [
      "no selector",
      () => {
        const r = runRequest({ rackIds: one });
        r.configuration!.selector = undefined;
        return r;
      },
      "configuration.selector: selector is required",
    ],
    [
      "a selector with no branch set",
      () => {
        const r = runRequest({ rackIds: one });
        r.configuration!.selector = { selector: undefined };
        return r;
      },
      "configuration.selector: selector is required",
    ],
    [
      "percentage 0",
      { rackIds: one, percentage: 0 },
      "configuration.selector.percentage.percentage: percentage selector must be between 1 and 100",
    ],
    [
      "percentage 101",
      { rackIds: one, percentage: 101 },
      "configuration.selector.percentage.percentage: percentage selector must be between 1 and 100",
    ],
    [
      "no options",
      () => {
        const r = runRequest({ rackIds: one });
        r.configuration!.options = undefined;
        return r;
      },
      "configuration.options: options are required",
    ],
    [
      "max_concurrent_targets 0",
      { rackIds: one, maxConcurrent: 0 },
      "configuration.options.max_concurrent_targets: options.max_concurrent_targets must be greater than 0",
    ],
    [
      "max_concurrent_targets negative",
      { rackIds: one, maxConcurrent: -3 },
      "configuration.options.max_concurrent_targets: options.max_concurrent_targets must be greater than 0",
    ],
    [
      "no safety policy",
      () => {
        const r = runRequest({ rackIds: one });
        r.configuration!.options!.safetyPolicy = undefined;
        return r;
      },
      "configuration.options.safety_policy: options.safety_policy is required",
    ],
    ["no gates", { rackIds: one, gates: [] }, `${GATES}: safety_policy must contain at least one gate`],
    [
      "a gate with no branch set",
      { rackIds: one, gates: [{ gate: undefined }] },
      `${GATES}[0]: unsupported safety gate`,
    ],
    [
      "failure rate 0 % (second gate)",
      { rackIds: one, gates: [countGate(1), rateGate(0)] },
      `${GATES}[1].failure_rate.failure_threshold_percent: failure_rate.failure_threshold_percent must be between 1 and 100`,
    ],
    [
      "failure rate 101 %",
      { rackIds: one, gates: [rateGate(101)] },
      `${GATES}[0].failure_rate.failure_threshold_percent: failure_rate.failure_threshold_percent must be between 1 and 100`,
    ],
    [
      "failure count 0",
      { rackIds: one, gates: [countGate(0)] },
      `${GATES}[0].failure_count.failure_threshold_count: failure_count.failure_threshold_count must be greater than 0`,
    ],
    [
      "an explicit zero retry_timeout (not replaced by the default)",
      {
        rackIds: one,
        conflictPolicy: {
          strategy: {
            $case: "retry",
            value: { retryTimeout: seconds(0), initialRetryDelay: undefined, maxRetryDelay: undefined },
          },
        },
      },
      `${RETRY}.retry_timeout: retry_timeout must be greater than 0`,
    ],
    [
      "a negative initial_retry_delay",
      {
        rackIds: one,
        conflictPolicy: {
          strategy: {
            $case: "retry",
            value: { retryTimeout: undefined, initialRetryDelay: seconds(-1), maxRetryDelay: undefined },
          },
        },
      },
      `${RETRY}.initial_retry_delay: initial_retry_delay must be greater than 0`,
    ],
    [
      "a zero max_retry_delay",
      {
        rackIds: one,
        conflictPolicy: {
          strategy: {
            $case: "retry",
            value: { retryTimeout: undefined, initialRetryDelay: undefined, maxRetryDelay: seconds(0) },
          },
        },
      },
      `${RETRY}.max_retry_delay: max_retry_delay must be greater than 0`,
    ],
    [
      "initial_retry_delay 10 min against the 5 min default maximum",
      {
        rackIds: one,
        conflictPolicy: {
          strategy: {
            $case: "retry",
            value: { retryTimeout: undefined, initialRetryDelay: seconds(600), maxRetryDelay: undefined },
          },
        },
      },
      `${RETRY}.max_retry_delay: max_retry_delay must be greater than or equal to initial_retry_delay`,
    ],
    [
      "physical_location ordering",
      () => {
        const r = runRequest({ rackIds: one });
        r.configuration!.options!.orderingPolicy = {
          ordering: {
            $case: "physicalLocation",
            value: { strategy: OperationRunPhysicalLocationOrdering_Strategy.STRATEGY_ROW_BY_ROW },
          },
        };
        return r;
      },
      "configuration.options.ordering_policy.physical_location: physical_location ordering is not supported yet",
    ],
    [
      "equal phase_count 0",
      { rackIds: one, phasePolicy: equalPhases(0) },
      `${PHASES}.equal.phase_count: equal phase_count must be greater than 0`,
    ],
    [
      "no percentage phases",
      { rackIds: one, phasePolicy: percentagePhases([]) },
      `${PHASES}.percentage.phases: percentage phase policy must include at least one phase`,
    ],
    [
      "a percentage phase of 0 (the sum is 100)",
      { rackIds: one, phasePolicy: percentagePhases([0, 100]) },
      `${PHASES}.percentage.phases[0].percentage: percentage phase percentages must be between 1 and 100`,
    ],
    [
      "percentage phases summing to 90",
      { rackIds: one, phasePolicy: percentagePhases([50, 40]) },
      `${PHASES}.percentage.phases: percentage phase percentages must sum to 100`,
    ],
    [
      "no count phases",
      { rackIds: one, phasePolicy: countPhases([]) },
      `${PHASES}.count.phases: count phase policy must include at least one phase`,
    ],
    [
      "a count phase of 0",
      { rackIds: one, phasePolicy: countPhases([2, 0]) },
      `${PHASES}.count.phases[1].count: count phase counts must be greater than 0`,
    ],
    [
      "no operation",
      () => {
        const r = runRequest({ rackIds: one });
        r.configuration!.operation = undefined;
        return r;
      },
      "configuration.operation: operation is required",
    ],
    [
      "an operation with no branch set (only a target scope)",
      () => {
        const r = runRequest({ rackIds: one });
        r.configuration!.operation = {
          operation: undefined,
          targetScope: { excludeOperationRunIds: [], defaultScopeComponentFilter: undefined },
        };
        return r;
      },
      "configuration.operation: operation is required",
    ],
    [
      "a malformed excluded run id",
      {
        rackIds: one,
        targetScope: {
          excludeOperationRunIds: [{ id: "not-a-uuid" }],
          defaultScopeComponentFilter: undefined,
        },
      },
      `${SCOPE}.exclude_operation_run_ids[0]: target_scope.exclude_operation_run_ids[0] must be a valid UUID`,
    ],
    [
      "a nil excluded run id (second entry)",
      {
        rackIds: one,
        targetScope: {
          excludeOperationRunIds: [{ id: UNKNOWN_ID }, { id: NIL_ID }],
          defaultScopeComponentFilter: undefined,
        },
      },
      `${SCOPE}.exclude_operation_run_ids[1]: target_scope.exclude_operation_run_ids[1] must be a valid UUID`,
    ],
    [
      "a type filter with no types",
      {
        targetScope: {
          excludeOperationRunIds: [],
          defaultScopeComponentFilter: { filter: { $case: "types", value: { types: [] } } },
        },
      },
      `${FILTER}.types.types: component filter kind "types" requires at least one type`,
    ],
    [
      "a type filter with UNKNOWN",
      {
        targetScope: {
          excludeOperationRunIds: [],
          defaultScopeComponentFilter: {
            filter: { $case: "types", value: { types: [ComponentType.COMPONENT_TYPE_UNKNOWN] } },
          },
        },
      },
      `${FILTER}.types.types[0]: target_scope.default_scope_component_filter.types[0] is unknown`,
    ],
    [
      "a component filter with no components",
      {
        targetScope: {
          excludeOperationRunIds: [],
          defaultScopeComponentFilter: { filter: { $case: "components", value: { targets: [] } } },
        },
      },
      `${FILTER}.components.targets: component filter kind "components" requires at least one component`,
    ],
    [
      "a component filter by external reference",
      {
        targetScope: {
          excludeOperationRunIds: [],
          defaultScopeComponentFilter: {
            filter: {
              $case: "components",
              value: {
                targets: [
                  {
                    identifier: {
                      $case: "external",
                      value: { type: ComponentType.COMPONENT_TYPE_COMPUTE, id: "SN-plan-0-0" },
                    },
                  },
                ],
              },
            },
          },
        },
      },
      `${FILTER}.components.targets[0]: target_scope.default_scope_component_filter.components[0] must use component UUID`,
    ],
    [
      "a component filter with a malformed UUID",
      {
        targetScope: {
          excludeOperationRunIds: [],
          defaultScopeComponentFilter: {
            filter: {
              $case: "components",
              value: { targets: [{ identifier: { $case: "id", value: { id: "123" } } }] },
            },
          },
        },
      },
      `${FILTER}.components.targets[0].id: target_scope.default_scope_component_filter.components[0] must be a valid UUID`,
    ],
    [
      "a default-scope filter next to a target spec",
      {
        rackIds: one,
        targetScope: {
          excludeOperationRunIds: [],
          defaultScopeComponentFilter: {
            filter: { $case: "types", value: { types: [ComponentType.COMPONENT_TYPE_COMPUTE] } },
          },
        },
      },
      `${FILTER}: target_scope.default_scope_component_filter requires target_spec to be omitted`,
    ],
    [
      "a target spec with no kind set",
      { targetSpec: { targets: undefined } },
      `${SPEC}: target_spec must have one of racks, nvl_domains, or components set`,
    ],
    [
      "an empty rack list",
      { rackIds: [] },
      `${SPEC}.racks.targets: racks.targets must have at least one entry`,
    ],
    [
      "an empty component list",
      { targetSpec: { targets: { $case: "components", value: { targets: [] } } } },
      `${SPEC}.components.targets: components.targets must have at least one entry`,
    ],
    [
      "an empty NVLink domain list",
      { targetSpec: { targets: { $case: "nvlDomains", value: { targets: [] } } } },
      `${SPEC}.nvl_domains.targets: nvl_domains.targets must have at least one entry`,
    ],
    [
      "a malformed rack id",
      { rackIds: ["r1"] },
      `${SPEC}.racks.targets[0].id: invalid rack uuid "r1": invalid UUID length: 2`,
    ],
    ["an empty rack id", { rackIds: [""] }, `${SPEC}.racks.targets[0].id: rack target id must not be empty`],
    [
      "a rack target with no identifier",
      {
        targetSpec: {
          targets: { $case: "racks", value: { targets: [{ identifier: undefined, componentTypes: [] }] } },
        },
      },
      `${SPEC}.racks.targets[0]: rack target must have either id, external_id, or name set`,
    ],
    [
      "an empty rack name",
      {
        targetSpec: {
          targets: {
            $case: "racks",
            value: { targets: [{ identifier: { $case: "name", value: "" }, componentTypes: [] }] },
          },
        },
      },
      `${SPEC}.racks.targets[0].name: rack target name must not be empty`,
    ],
    [
      "an empty rack external id",
      {
        targetSpec: {
          targets: {
            $case: "racks",
            value: { targets: [{ identifier: { $case: "externalId", value: "" }, componentTypes: [] }] },
          },
        },
      },
      `${SPEC}.racks.targets[0].external_id: rack target external_id must not be empty`,
    ],
    [
      "an UNKNOWN component type in a rack target",
      { targetSpec: racksSpec(one, [ComponentType.COMPONENT_TYPE_UNKNOWN]) },
      `${SPEC}.racks.targets[0].component_types[0]: unknown component type COMPONENT_TYPE_UNKNOWN in rack target filter`,
    ],
    [
      "a malformed component id",
      {
        targetSpec: {
          targets: {
            $case: "components",
            value: { targets: [{ identifier: { $case: "id", value: { id: "x" } } }] },
          },
        },
      },
      `${SPEC}.components.targets[0].id: invalid component uuid "x": invalid UUID length: 1`,
    ],
    [
      "an empty external component id",
      {
        targetSpec: {
          targets: {
            $case: "components",
            value: {
              targets: [
                {
                  identifier: {
                    $case: "external",
                    value: { type: ComponentType.COMPONENT_TYPE_COMPUTE, id: "" },
                  },
                },
              ],
            },
          },
        },
      },
      `${SPEC}.components.targets[0].external.id: external component id must not be empty`,
    ],
    [
      "an empty NVLink domain name",
      {
        targetSpec: {
          targets: {
            $case: "nvlDomains",
            value: { targets: [{ identifier: { $case: "name", value: "" }, componentTypes: [] }] },
          },
        },
      },
      `${SPEC}.nvl_domains.targets[0].name: NVLink domain target name must not be empty`,
    ],
    [
      "a malformed rule id",
      { rackIds: one, firmware: { ruleId: { id: "bad" } } },
      "configuration.operation.upgrade_firmware.rule_id: must be a valid non-zero UUID",
    ],
    [
      "three violations in three parts, in the validator's order",
      { rackIds: one, percentage: 0, maxConcurrent: 0, gates: [] },
      [
        "configuration.selector.percentage.percentage: percentage selector must be between 1 and 100",
        "configuration.options.max_concurrent_targets: options.max_concurrent_targets must be greater than 0",
        `${GATES}: safety_policy must contain at least one gate`,
      ].join("; "),
    ],
  ];

  // One snapshot around the whole table: per-case table scans would triple its run time.
  let before: Written;
  beforeAll(async () => {
    before = await written();
  });

  it.each(cases)("%s", async (_title, spec, details) => {
    const request = typeof spec === "function" ? spec() : runRequest(spec);
    expect(await failure(s.flow.createOperationRun(request))).toEqual({ code: "INVALID_ARGUMENT", details });
  });

  it("none of the requests above wrote anything (raw table items and listed total unchanged)", async () => {
    expect(await written()).toEqual(before);
  });

  it("PlanOperationRun answers the same violation as CreateOperationRun", async () => {
    const request = runRequest({ rackIds: one, percentage: 0 });
    expect(await failure(s.flow.planOperationRun(request))).toEqual({
      code: "INVALID_ARGUMENT",
      details: "configuration.selector.percentage.percentage: percentage selector must be between 1 and 100",
    });
  });
});

describe("CreateOperationRun planning errors: status code and message, nothing written", () => {
  const racksBy = (
    identifier: { $case: "name"; value: string } | { $case: "externalId"; value: string },
  ) => ({
    targets: { $case: "racks" as const, value: { targets: [{ identifier, componentTypes: [] }] } },
  });

  const cases: [string, RunSpec, string, string][] = [
    [
      "an unknown rack id (second entry)",
      { rackIds: [PLAN.ids[0]!, UNKNOWN_ID] },
      "NOT_FOUND",
      `rack target 1: rack ${UNKNOWN_ID} is not found`,
    ],
    [
      "an unknown rack external id",
      { targetSpec: racksBy({ $case: "externalId", value: "EXT-nope" }) },
      "NOT_FOUND",
      "rack target 0: rack with external id EXT-nope is not found",
    ],
    [
      "an unknown rack name",
      { targetSpec: racksBy({ $case: "name", value: "nope" }) },
      "NOT_FOUND",
      "rack target 0: rack nope is not found",
    ],
    [
      "an unknown NVLink domain name",
      {
        targetSpec: {
          targets: {
            $case: "nvlDomains",
            value: { targets: [{ identifier: { $case: "name", value: "nope" }, componentTypes: [] }] },
          },
        },
      },
      "NOT_FOUND",
      "NVLink domain target 0: nvl domain nope is not found",
    ],
    [
      "an unknown component id",
      {
        targetSpec: {
          targets: {
            $case: "components",
            value: { targets: [{ identifier: { $case: "id", value: { id: UNKNOWN_ID } } }] },
          },
        },
      },
      "NOT_FOUND",
      `component target 0: component ${UNKNOWN_ID} is not found`,
    ],
    [
      "an unknown external component",
      {
        targetSpec: {
          targets: {
            $case: "components",
            value: {
              targets: [
                {
                  identifier: {
                    $case: "external",
                    value: { type: ComponentType.COMPONENT_TYPE_COMPUTE, id: "SN-nope" },
                  },
                },
              ],
            },
          },
        },
      },
      "NOT_FOUND",
      "component target 0: component external_id=SN-nope not found",
    ],
    [
      "an excluded run that does not exist",
      {
        rackIds: one,
        targetScope: { excludeOperationRunIds: [{ id: UNKNOWN_ID }], defaultScopeComponentFilter: undefined },
      },
      "NOT_FOUND",
      `excluded operation run not found: ${UNKNOWN_ID}`,
    ],
    [
      "an NVLink domain id no rack carries: an empty plan",
      {
        targetSpec: {
          targets: {
            $case: "nvlDomains",
            value: {
              targets: [{ identifier: { $case: "id", value: { id: UNKNOWN_ID } }, componentTypes: [] }],
            },
          },
        },
      },
      "INVALID_ARGUMENT",
      "operation run has no planned targets",
    ],
    [
      "a rack whose type filter matches none of its components: an empty plan",
      { targetSpec: racksSpec(one, [ComponentType.COMPONENT_TYPE_CDU]) },
      "INVALID_ARGUMENT",
      "operation run has no planned targets",
    ],
    [
      "a default-scope component filter matching nothing: an empty plan",
      {
        targetScope: {
          excludeOperationRunIds: [],
          defaultScopeComponentFilter: {
            filter: {
              $case: "components",
              value: { targets: [{ identifier: { $case: "id", value: { id: UNKNOWN_ID } } }] },
            },
          },
        },
      },
      "INVALID_ARGUMENT",
      "operation run has no planned targets",
    ],
    [
      "equal phases: 2 racks in 3 phases",
      { rackIds: PLAN.ids.slice(0, 2), phasePolicy: equalPhases(3) },
      "INVALID_ARGUMENT",
      "equal phase 3 resolves to zero targets for 2 selected targets",
    ],
    [
      "percentage phases: 2 racks at 99/1",
      { rackIds: PLAN.ids.slice(0, 2), phasePolicy: percentagePhases([99, 1]) },
      "INVALID_ARGUMENT",
      "percentage phase 2 resolves to zero targets for 2 selected targets",
    ],
    [
      "count phases exceeding the selection: 3 racks, counts 2 + 2",
      { rackIds: PLAN.ids.slice(0, 3), phasePolicy: countPhases([2, 2]) },
      "INVALID_ARGUMENT",
      "count phase counts exceed selected target count",
    ],
    [
      "an explicit scope of 101 racks, even at 1 %",
      { rackIds: BULK.ids, percentage: 1 },
      "INTERNAL",
      "operation run candidate scope exceeds target limit 100",
    ],
    [
      "the default scope (every rack of this inventory: 132), even at 1 %",
      { percentage: 1 },
      "INTERNAL",
      "operation run candidate scope exceeds target limit 100",
    ],
  ];

  let before: Written;
  beforeAll(async () => {
    before = await written();
  });

  it.each(cases.map(([title, spec, code, details]) => [title, code, details, spec] as const))(
    "%s → %s",
    async (_title, code, details, spec) => {
      expect(await failure(s.flow.createOperationRun(runRequest(spec)))).toEqual({ code, details });
    },
  );

  it("none of the requests above wrote anything (raw table items and listed total unchanged)", async () => {
    expect(await written()).toEqual(before);
  });

  it("an explicit scope of exactly 100 racks is within the limit (PlanOperationRun)", async () => {
    const plan = await s.flow.planOperationRun(
      runRequest({ rackIds: BULK.ids.slice(0, 100), percentage: 1 }),
    );
    expect(plan.candidateCount).toBe(100);
    expect(plan.targets).toHaveLength(1);
  });
});

describe("CreateOperationRun: defaults are stored in the effective configuration", () => {
  it("a minimal request reads back with every default filled in, identically on every read", async () => {
    const request = runRequest({
      name: "  minimal defaults  ",
      description: "  kept as sent  ",
      rackIds: SPARE.ids.slice(0, 3),
      gates: [countGate(2, OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_UNKNOWN)],
    });
    const { id } = await s.flow.createOperationRun(request);
    expect(id?.id).toMatch(UUID_V4);

    const first = await getRun(s.flow, id!.id);
    const second = await getRun(s.flow, id!.id);
    const config = first.configuration!;
    expect(second.configuration).toEqual(config);

    expect(first.summary).toMatchObject({
      id: { id: id!.id },
      name: "minimal defaults",
      description: "  kept as sent  ",
      operationKind: { type: OperationType.OPERATION_TYPE_FIRMWARE_CONTROL, code: "upgrade" },
      totalPhases: 1,
    });
    const selector = config.selector?.selector;
    expect(selector?.$case).toBe("percentage");
    expect(selector?.value.percentage).toBe(100);
    expect(selector?.value.seed).toMatch(UUID_V4);
    const ordering = config.options?.orderingPolicy?.ordering;
    expect(ordering?.$case).toBe("random");
    const orderingSeed = ordering?.$case === "random" ? ordering.value.seed : "";
    expect(orderingSeed).toMatch(UUID_V4);
    expect(orderingSeed).not.toBe(selector?.value.seed);

    expect(config.options?.conflictPolicy).toEqual({
      strategy: {
        $case: "retry",
        value: { retryTimeout: seconds(3600), initialRetryDelay: seconds(30), maxRetryDelay: seconds(300) },
      },
    });
    expect(config.options?.safetyPolicy?.gates).toEqual([
      countGate(2, OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE),
    ]);
    expect(config.options?.phasePolicy).toEqual({
      plan: { $case: "equal", value: { phaseCount: 1 } },
      advancePolicy: { autoAdvance: false },
    });
    expect(config.options?.maxConcurrentTargets).toBe(10);
    expect(first.stats).toBeUndefined();
  });

  it.each([
    ["only retry_timeout", { retryTimeout: seconds(120) }, [120, 30, 300]],
    ["only initial_retry_delay", { initialRetryDelay: seconds(10) }, [3600, 10, 300]],
    ["only max_retry_delay", { maxRetryDelay: seconds(60) }, [3600, 30, 60]],
    ["no duration at all", {}, [3600, 30, 300]],
  ] as const)(
    "each retry duration defaults on its own: %s",
    async (_title, sent, [timeout, initial, max]) => {
      const id = await createRun(
        s.flow,
        runRequest({
          rackIds: one,
          conflictPolicy: {
            strategy: {
              $case: "retry",
              value: {
                retryTimeout: undefined,
                initialRetryDelay: undefined,
                maxRetryDelay: undefined,
                ...sent,
              },
            },
          },
        }),
      );
      const run = await getRun(s.flow, id);
      expect(run.configuration?.options?.conflictPolicy?.strategy?.value).toEqual({
        retryTimeout: seconds(timeout),
        initialRetryDelay: seconds(initial),
        maxRetryDelay: seconds(max),
      });
    },
  );

  it("a conflict policy with no strategy set is retry with the three defaults", async () => {
    const id = await createRun(s.flow, runRequest({ rackIds: one, conflictPolicy: { strategy: undefined } }));
    expect((await getRun(s.flow, id)).configuration?.options?.conflictPolicy?.strategy?.value).toEqual({
      retryTimeout: seconds(3600),
      initialRetryDelay: seconds(30),
      maxRetryDelay: seconds(300),
    });
  });

  it("explicit seeds, scopes, plans and auto_advance are stored as sent", async () => {
    const id = await createRun(
      s.flow,
      runRequest({
        rackIds: SPARE.ids.slice(3, 7),
        seed: "selector-seed",
        orderingSeed: "ordering-seed",
        gates: [
          rateGate(25, OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN),
          countGate(3, OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE),
        ],
        phasePolicy: percentagePhases([50, 50], true),
      }),
    );
    const run = await getRun(s.flow, id);
    const options = run.configuration?.options;
    expect(run.configuration?.selector?.selector?.value.seed).toBe("selector-seed");
    expect(options?.orderingPolicy).toEqual({
      ordering: { $case: "random", value: { seed: "ordering-seed" } },
    });
    expect(options?.safetyPolicy?.gates).toEqual([
      rateGate(25, OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN),
      countGate(3, OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE),
    ]);
    expect(options?.phasePolicy).toEqual(percentagePhases([50, 50], true));
    expect(run.summary?.totalPhases).toBe(2);
  });

  it("an empty random-ordering seed, an ordering policy with no branch, a phase policy with no plan: all defaulted", async () => {
    const request = runRequest({ rackIds: one, orderingSeed: "" });
    request.configuration!.options!.phasePolicy = { plan: undefined, advancePolicy: undefined };
    const withEmptySeed = await getRun(s.flow, await createRun(s.flow, request));
    const ordering = withEmptySeed.configuration?.options?.orderingPolicy?.ordering;
    expect(ordering?.$case === "random" && ordering.value.seed).toMatch(UUID_V4);
    expect(withEmptySeed.configuration?.options?.phasePolicy).toEqual({
      plan: { $case: "equal", value: { phaseCount: 1 } },
      advancePolicy: { autoAdvance: false },
    });

    const unset = runRequest({ rackIds: one });
    unset.configuration!.options!.orderingPolicy = { ordering: undefined };
    const withNoBranch = await getRun(s.flow, await createRun(s.flow, unset));
    const ordering2 = withNoBranch.configuration?.options?.orderingPolicy?.ordering;
    expect(ordering2?.$case === "random" && ordering2.value.seed).toMatch(UUID_V4);
  });

  it("total_phases: count phases add a remainder phase only when targets remain (10 → 2,3,5; 5 → 2,3)", async () => {
    const ten = await createRun(
      s.flow,
      runRequest({ rackIds: SPARE.ids.slice(0, 10), phasePolicy: countPhases([2, 3]) }),
    );
    const five = await createRun(
      s.flow,
      runRequest({ rackIds: SPARE.ids.slice(0, 5), phasePolicy: countPhases([2, 3]) }),
    );
    expect((await getRun(s.flow, ten)).summary?.totalPhases).toBe(3);
    expect((await getRun(s.flow, five)).summary?.totalPhases).toBe(2);
  });
});

describe("CreateOperationRun: selection, ordering and phases are seeded and exact", () => {
  it("1 % of three candidate racks selects one", async () => {
    const scope = SPARE.ids.slice(0, 3);
    const id = await createRun(s.flow, runRequest({ rackIds: scope, percentage: 1 }));
    const targets = await listTargets(s.flow, id);
    expect(targets).toHaveLength(1);
    expect(scope).toContain(targets[0]?.rackId?.id);
  });

  it("the cohort and its order are the reference's sha256 ranking, for the selector and the ordering seed", async () => {
    const scope = PLAN.ids.slice(0, 12);
    const id = await createRun(
      s.flow,
      runRequest({ rackIds: scope, percentage: 50, seed: "sel-A", orderingSeed: "ord-B" }),
    );
    const expected = seeded(seeded(scope, "sel-A").slice(0, 6), "ord-B");
    const targets = await listTargets(s.flow, id);
    expect(targets.map((t) => t.rackId?.id)).toEqual(expected);
    expect(targets.map((t) => t.sequenceIndex)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(targets.every((t) => t.phaseIndex === 0)).toBe(true);
  });

  it("the same seeds give the same targets in the same order, run after run and in a dry run", async () => {
    const spec: RunSpec = { rackIds: SPARE.ids, percentage: 40, seed: "same-1", orderingSeed: "same-2" };
    const a = await createRun(s.flow, runRequest(spec));
    const b = await createRun(s.flow, runRequest(spec));
    const plan = await s.flow.planOperationRun(runRequest(spec));
    const racksOf = (ts: { rackId?: { id: string } | undefined; sequenceIndex: number }[]) =>
      ts.map((t) => [t.rackId?.id, t.sequenceIndex]);
    const first = racksOf(await listTargets(s.flow, a));
    expect(first).toHaveLength(5);
    expect(racksOf(await listTargets(s.flow, b))).toEqual(first);
    expect(racksOf(plan.targets)).toEqual(first);
  });

  it.each([
    ["7 racks at 50/50", percentagePhases([50, 50]), 7, [4, 3]],
    ["10 racks at 10/30/60", percentagePhases([10, 30, 60]), 10, [1, 3, 6]],
    ["10 racks in 3 equal phases", equalPhases(3), 10, [4, 3, 3]],
    ["5 racks in 3 equal phases", equalPhases(3), 5, [2, 2, 1]],
    ["10 racks at counts 2, 3", countPhases([2, 3]), 10, [2, 3, 5]],
  ] as const)("phase allocation, cumulative rounding up: %s → %j", async (_title, phasePolicy, n, sizes) => {
    const plan = await s.flow.planOperationRun(runRequest({ rackIds: SPARE.ids.slice(0, n), phasePolicy }));
    expect(plan.totalPhases).toBe(sizes.length);
    const counted = sizes.map((_, phase) => plan.targets.filter((t) => t.phaseIndex === phase).length);
    expect(counted).toEqual(sizes);
    expect(plan.targets.map((t) => t.sequenceIndex)).toEqual([...Array(n).keys()]);
  });

  it("7 racks at 50/50 freeze 4 targets in phase 0 and 3 in phase 1 (the created run's target rows)", async () => {
    const id = await createRun(
      s.flow,
      runRequest({ rackIds: SPARE.ids.slice(0, 7), phasePolicy: percentagePhases([50, 50]) }),
    );
    // Phase 1 is the future here, so only phase 0 is listed; the plan was frozen whole, though.
    const current = await listTargets(
      s.flow,
      id,
      OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_PHASE,
    );
    expect(current.map((t) => t.phaseIndex)).toEqual([0, 0, 0, 0]);
    expect((await getRun(s.flow, id)).summary?.totalPhases).toBe(2);
  });
});

describe("CreateOperationRun: scopes and exclusions", () => {
  it("exclude_operation_run_ids removes a prior run's racks; excluding every rack is an empty plan", async () => {
    const scope = PLAN.ids.slice(0, 4);
    const a = await createRun(s.flow, runRequest({ rackIds: scope, percentage: 50, seed: "excl" }));
    const aRacks = (await listTargets(s.flow, a)).map((t) => t.rackId?.id);
    expect(aRacks).toHaveLength(2);

    const exclude = (ids: string[]) => ({
      excludeOperationRunIds: ids.map((id) => ({ id })),
      defaultScopeComponentFilter: undefined,
    });
    const b = await createRun(s.flow, runRequest({ rackIds: scope, targetScope: exclude([a]) }));
    const bRacks = (await listTargets(s.flow, b)).map((t) => t.rackId?.id);
    expect([...bRacks].sort()).toEqual(scope.filter((id) => !aRacks.includes(id)).sort());

    // An upper-case id is the same run.
    await expectRejected(
      runRequest({ rackIds: scope, targetScope: exclude([a.toUpperCase(), b]) }),
      "INVALID_ARGUMENT",
      "operation run has no planned targets",
    );
  });

  it("exclusion subtracts components: a rack whose COMPUTE was flashed keeps only its NVSWITCH", async () => {
    const [r4, r5] = [PLAN.ids[4]!, PLAN.ids[5]!];
    const prior = await createRun(
      s.flow,
      runRequest({ targetSpec: racksSpec([r4], [ComponentType.COMPONENT_TYPE_COMPUTE]) }),
    );
    const next = await createRun(
      s.flow,
      runRequest({
        rackIds: [r4, r5],
        targetScope: { excludeOperationRunIds: [{ id: prior }], defaultScopeComponentFilter: undefined },
      }),
    );
    const byRack = new Map((await listTargets(s.flow, next)).map((t) => [t.rackId?.id, t.componentsByType]));
    expect(byRack.get(r4)).toEqual({
      groups: [{ type: ComponentType.COMPONENT_TYPE_NVSWITCH, componentIds: [{ id: componentId(1, 4, 1) }] }],
    });
    expect(byRack.get(r5)).toEqual({
      groups: [
        { type: ComponentType.COMPONENT_TYPE_COMPUTE, componentIds: [{ id: componentId(1, 5, 0) }] },
        { type: ComponentType.COMPONENT_TYPE_NVSWITCH, componentIds: [{ id: componentId(1, 5, 1) }] },
      ],
    });
  });

  it("a default scope narrowed by a type filter: the three CDU racks, CDU components only", async () => {
    const id = await createRun(
      s.flow,
      runRequest({
        targetScope: {
          excludeOperationRunIds: [],
          defaultScopeComponentFilter: {
            filter: { $case: "types", value: { types: [ComponentType.COMPONENT_TYPE_CDU] } },
          },
        },
      }),
    );
    const targets = await listTargets(s.flow, id);
    expect(targets.map((t) => t.rackId?.id).sort()).toEqual([...CDU.ids].sort());
    for (const t of targets) {
      const n = CDU.ids.indexOf(t.rackId!.id);
      expect(t.componentsByType).toEqual({
        groups: [{ type: ComponentType.COMPONENT_TYPE_CDU, componentIds: [{ id: componentId(3, n, 0) }] }],
      });
      expect(t.rackExternalId).toBe(`EXT-cdu-${n}`);
    }
  });

  it("component groups are ordered CDU before COMPUTE (by type name), whatever the inventory order", async () => {
    const id = await createRun(s.flow, runRequest({ rackIds: [CDU.ids[0]!] }));
    const [target] = await listTargets(s.flow, id);
    expect(target?.componentsByType?.groups.map((g) => g.type)).toEqual([
      ComponentType.COMPONENT_TYPE_CDU,
      ComponentType.COMPONENT_TYPE_COMPUTE,
    ]);
  });

  it("racks by name and by external id, NVLink domains by name, components by id: each resolves", async () => {
    const byName = await createRun(
      s.flow,
      runRequest({
        targetSpec: {
          targets: {
            $case: "racks",
            value: {
              targets: [
                { identifier: { $case: "name", value: "plan-6" }, componentTypes: [] },
                { identifier: { $case: "externalId", value: "EXT-plan-7" }, componentTypes: [] },
              ],
            },
          },
        },
      }),
    );
    expect((await listTargets(s.flow, byName)).map((t) => t.rackId?.id).sort()).toEqual([
      rackId(1, 6),
      rackId(1, 7),
    ]);

    const byDomain = await createRun(
      s.flow,
      runRequest({
        targetSpec: {
          targets: {
            $case: "nvlDomains",
            value: {
              targets: [{ identifier: { $case: "name", value: NVL_DOMAIN.name }, componentTypes: [] }],
            },
          },
        },
      }),
    );
    expect((await listTargets(s.flow, byDomain)).map((t) => t.rackId?.id).sort()).toEqual(
      [...NVL.ids].sort(),
    );

    // Two components of one rack: one rack target carrying both.
    const byComponents = await createRun(
      s.flow,
      runRequest({
        targetSpec: {
          targets: {
            $case: "components",
            value: {
              targets: [
                { identifier: { $case: "id", value: { id: componentId(1, 8, 1) } } },
                { identifier: { $case: "id", value: { id: componentId(1, 8, 0) } } },
              ],
            },
          },
        },
      }),
    );
    const targets = await listTargets(s.flow, byComponents);
    expect(targets).toHaveLength(1);
    expect(targets[0]?.componentsByType?.groups.flatMap((g) => g.componentIds.map((c) => c.id))).toEqual([
      componentId(1, 8, 0),
      componentId(1, 8, 1),
    ]);
  });
});

describe("PlanOperationRun (dry run)", () => {
  it("returns the plan CreateOperationRun freezes, with external ids, and writes nothing", async () => {
    const spec: RunSpec = {
      rackIds: PLAN.ids.slice(9, 14),
      percentage: 60,
      seed: "dry-1",
      orderingSeed: "dry-2",
      phasePolicy: equalPhases(2),
    };
    const [items, total] = await Promise.all([s.countItems(), runsTotal()]);
    const plan = await s.flow.planOperationRun(runRequest(spec));
    expect(await s.countItems()).toEqual(items);
    expect(await runsTotal()).toBe(total);

    expect(plan.candidateCount).toBe(5);
    expect(plan.totalPhases).toBe(2);
    const expectedOrder = seeded(seeded(PLAN.ids.slice(9, 14), "dry-1").slice(0, 3), "dry-2");
    expect(plan.targets.map((t) => t.rackId?.id)).toEqual(expectedOrder);
    expect(plan.targets.map((t) => t.phaseIndex)).toEqual([0, 0, 1]);
    expect(plan.targets.map((t) => t.rackExternalId)).toEqual(
      expectedOrder.map((id) => `EXT-plan-${PLAN.ids.indexOf(id)}`),
    );
    expect(plan.configuration?.selector?.selector?.value.seed).toBe("dry-1");

    await sleep(5);
    const id = await createRun(s.flow, runRequest(spec));
    // Phase 0 of the created run is the plan's phase 0, rack for rack.
    expect((await listTargets(s.flow, id)).map((t) => t.rackId?.id)).toEqual(expectedOrder.slice(0, 2));
  });
});

describe("firmware credentials go in and never come out", () => {
  it("authentication_data is absent from GetOperationRun, ListOperationRuns and PlanOperationRun", async () => {
    const secret = "hunter2-e2e-secret";
    const shared = runRequest({
      name: "with-credentials",
      rackIds: [SPARE.ids[11]!],
      firmware: { authenticationData: { value: { $case: "shared", value: secret } } },
    });
    const perComponent = runRequest({
      name: "with-credentials",
      rackIds: [SPARE.ids[10]!],
      firmware: {
        authenticationData: {
          value: { $case: "perComponent", value: { compute: `${secret}-c`, nvswitch: `${secret}-n` } },
        },
      },
    });
    const ids = [await createRun(s.flow, shared), await createRun(s.flow, perComponent)];
    for (const id of ids) {
      const run = await getRun(s.flow, id, true);
      const fw = run.configuration?.operation?.operation?.value;
      expect(fw?.authenticationData).toBeUndefined();
      expect(JSON.stringify(run)).not.toContain(secret);
    }
    const listed = await s.flow.listOperationRuns({
      filter: {
        name: { patterns: ["with-credentials"], isWildcard: false, useOr: false },
        states: [],
        operationKinds: [],
      },
    });
    expect(listed.total).toBe(2);
    expect(JSON.stringify(listed)).not.toContain(secret);
    const plan = await s.flow.planOperationRun(shared);
    expect(plan.configuration?.operation?.operation?.value.authenticationData).toBeUndefined();
    expect(JSON.stringify(plan)).not.toContain(secret);
  });
});

describe("CreateOperationRun client_request_id (extension 100): a retry finds its run", () => {
  const request = (clientRequestId: string, name = "idempotent") =>
    runRequest({ name, rackIds: SPARE.ids.slice(0, 2), clientRequestId, seed: "" });

  it("the same id and request answers the first run's id, and creates nothing more", async () => {
    const id = await createRun(s.flow, request("e2e-req-1"));
    const before = await written();
    expect(await createRun(s.flow, request("e2e-req-1"))).toBe(id);
    expect(await written()).toEqual(before);
  });

  it("five concurrent creates with one id: one run, every caller told its id", async () => {
    const before = await runsTotal();
    const ids = await Promise.all(Array.from({ length: 5 }, () => createRun(s.flow, request("e2e-req-2"))));
    expect(new Set(ids).size).toBe(1);
    expect(await runsTotal()).toBe(before + 1);
  });

  it("the same id with another request is INVALID_ARGUMENT naming the field; so is a malformed id", async () => {
    await createRun(s.flow, request("e2e-req-3"));
    await expectRejected(
      request("e2e-req-3", "another-name"),
      "INVALID_ARGUMENT",
      "client_request_id: was used for a different request; a retry must resend the same request",
    );
    await expectRejected(
      request("not an id"),
      "INVALID_ARGUMENT",
      "client_request_id: must be 1 to 64 printable ASCII characters without spaces, e.g. a UUID (got 9 characters)",
    );
  });

  it("PlanOperationRun refuses a reused id like create, and plans otherwise", async () => {
    await createRun(s.flow, request("e2e-req-4"));
    expect(await failure(s.flow.planOperationRun(request("e2e-req-4", "other")))).toEqual({
      code: "INVALID_ARGUMENT",
      details: "client_request_id: was used for a different request; a retry must resend the same request",
    });
    expect((await s.flow.planOperationRun(request("e2e-req-4"))).targets).toHaveLength(2);
  });
});
