/**
 * Bad input end to end: undefined enum numbers, oversized strings and lists,
 * negative pagination, malformed UUIDs, undecodable bytes. Each must be answered with a clear
 * status (InvalidArgument naming the field, or what grpc-js answers for an oversized message),
 * never Internal, never a crash, and never a partial write.
 *
 * Two properties close the suite: random CreateOperationRun requests (valid and invalid, built
 * from the proto's shape) and random bytes. Whatever comes in, the server answers with a status,
 * keeps serving, and a rejected request leaves the runs and targets tables exactly as they were.
 */
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type ComponentType,
  type ConflictStrategy,
  type CreateOperationRunRequest,
  CreateOperationRunRequest as CreateOperationRunRequestCodec,
  FlowService,
  type OperationRunPhysicalLocationOrdering_Strategy,
  type OperationRunSafetyGateScope,
  type OperationRunStatus,
  type OperationType,
} from "../../src/gen/flow/v1/flow.js";
import { FlowInventoryAdminService } from "../../src/gen/flowadmin/v1/admin.js";
import { componentId, rackGroup } from "../support/fixtures-inventory.js";
import {
  countGate,
  createRun,
  equalPhases,
  failure,
  outcome,
  pauseActiveRuns,
  racksSpec,
  rateGate,
  runRequest,
  startTestStack,
  type TestStack,
} from "../support/stack.js";

const BAD = rackGroup(30, { name: "bad", count: 6 });
const UNKNOWN_ID = "0badc0de-0000-4000-8000-000000000000";
const NIL_ID = "00000000-0000-0000-0000-000000000000";
const MB = 1024 * 1024;

const GATES = "configuration.options.safety_policy.gates";
const RETRY = "configuration.options.conflict_policy.retry";
const SPEC = "configuration.operation.upgrade_firmware.target_spec";

let s: TestStack;

beforeAll(async () => {
  s = await startTestStack({ label: "badinput", groups: [BAD], tickMs: 2000 });
});
afterAll(async () => {
  await s?.stop();
});
afterEach(async () => {
  await pauseActiveRuns(s.flow);
});

async function runsTotal(): Promise<number> {
  return (await s.flow.listOperationRuns({ filter: undefined, pagination: { offset: 0, limit: 1 } })).total;
}

/** Snapshot of everything a create could write: raw table items and the listed total. */
async function written(): Promise<{ runs: number; targets: number; listed: number }> {
  const [items, listed] = await Promise.all([s.countItems(), runsTotal()]);
  return { ...items, listed };
}

async function expectInvalid(request: CreateOperationRunRequest, details: string): Promise<void> {
  const before = await written();
  expect(await failure(s.flow.createOperationRun(request))).toEqual({ code: "INVALID_ARGUMENT", details });
  expect(await written()).toEqual(before);
}

const one = [BAD.ids[0]!];
const seconds = (n: number, nanos = 0) => ({ seconds: n, nanos });

describe("undefined enum numbers are InvalidArgument naming the field", () => {
  const withGateScope = (scope: number) =>
    runRequest({ rackIds: one, gates: [rateGate(10, scope as OperationRunSafetyGateScope)] });
  it.each([
    ["a gate scope of 42", () => withGateScope(42), `${GATES}[0].failure_rate.scope: unknown enum value 42`],
    [
      "a negative gate scope",
      () => withGateScope(-1),
      `${GATES}[0].failure_rate.scope: unknown enum value -1`,
    ],
    [
      "a component type of 77 in a rack target",
      () => runRequest({ targetSpec: racksSpec(one, [77 as ComponentType]) }),
      `${SPEC}.racks.targets[0].component_types[0]: unknown enum value 77`,
    ],
    [
      "a component type of 99 in the default-scope filter",
      () =>
        runRequest({
          targetScope: {
            excludeOperationRunIds: [],
            defaultScopeComponentFilter: {
              filter: { $case: "types", value: { types: [99 as ComponentType] } },
            },
          },
        }),
      "configuration.operation.target_scope.default_scope_component_filter.types.types[0]: unknown enum value 99",
    ],
    [
      "a physical-location strategy of 9",
      () => {
        const r = runRequest({ rackIds: one });
        r.configuration!.options!.orderingPolicy = {
          ordering: {
            $case: "physicalLocation",
            value: { strategy: 9 as OperationRunPhysicalLocationOrdering_Strategy },
          },
        };
        return r;
      },
      "configuration.options.ordering_policy.physical_location.strategy: unknown enum value 9",
    ],
    [
      "a queue conflict strategy of 7",
      () =>
        runRequest({
          rackIds: one,
          firmware: { queueOptions: { conflictStrategy: 7 as ConflictStrategy, queueTimeoutSeconds: 0 } },
        }),
      "configuration.operation.upgrade_firmware.queue_options.conflict_strategy: unknown enum value 7",
    ],
    [
      "an external component reference of type 12",
      () =>
        runRequest({
          targetSpec: {
            targets: {
              $case: "components",
              value: {
                targets: [
                  { identifier: { $case: "external", value: { type: 12 as ComponentType, id: "SN-1" } } },
                ],
              },
            },
          },
        }),
      `${SPEC}.components.targets[0].external.type: unknown enum value 12`,
    ],
  ])("CreateOperationRun with %s", async (_title, build, details) => {
    await expectInvalid(build(), details);
  });

  it("ListOperationRuns with a state status of 99 and a kind type of 5", async () => {
    expect(
      await failure(
        s.flow.listOperationRuns({
          filter: {
            name: undefined,
            states: [{ status: 99 as OperationRunStatus }],
            operationKinds: [{ type: 5 as OperationType }],
          },
        }),
      ),
    ).toEqual({
      code: "INVALID_ARGUMENT",
      details:
        "filter.states[0].status: unknown enum value 99; filter.operation_kinds[0].type: unknown enum value 5",
    });
  });
});

describe("oversized input is refused with the limit named, or by the transport", () => {
  it("a 1 MB name", async () => {
    await expectInvalid(
      runRequest({ name: "n".repeat(MB), rackIds: one }),
      `name: must be at most 256 characters (got ${MB})`,
    );
  });

  it("a 5000-character description and a 300-character seed, both reported", async () => {
    await expectInvalid(
      runRequest({ description: "d".repeat(5000), seed: "s".repeat(300), rackIds: one }),
      "description: must be at most 4096 characters (got 5000); configuration.selector.percentage.seed: must be at most 256 characters (got 300)",
    );
  });

  it("10,000 safety gates", async () => {
    const gates = Array.from({ length: 10_000 }, () => countGate(1));
    await expectInvalid(
      runRequest({ rackIds: one, gates }),
      `${GATES}: must have at most 32 entries (got 10000)`,
    );
  });

  it("1,001 rack targets and 101 excluded runs", async () => {
    await expectInvalid(
      runRequest({
        rackIds: Array.from({ length: 1001 }, () => BAD.ids[1]!),
        targetScope: {
          excludeOperationRunIds: Array.from({ length: 101 }, () => ({ id: UNKNOWN_ID })),
          defaultScopeComponentFilter: undefined,
        },
      }),
      [
        `${SPEC}.racks.targets: must have at most 1000 entries (got 1001)`,
        "configuration.operation.target_scope.exclude_operation_run_ids: must have at most 100 entries (got 101)",
      ].join("; "),
    );
  });

  it("a billion equal phases", async () => {
    await expectInvalid(
      runRequest({ rackIds: one, phasePolicy: equalPhases(1_000_000_000) }),
      "configuration.options.phase_policy.equal.phase_count: must be at most 100 (got 1000000000)",
    );
  });

  it("durations outside google.protobuf.Duration's range or with mixed signs", async () => {
    await expectInvalid(
      runRequest({
        rackIds: one,
        conflictPolicy: {
          strategy: {
            $case: "retry",
            value: {
              retryTimeout: seconds(1e15),
              initialRetryDelay: seconds(1, 2_000_000_000),
              maxRetryDelay: seconds(5, -1),
            },
          },
        },
      }),
      [
        `${RETRY}.retry_timeout: must be a valid duration: seconds out of range (got 1000000000000000)`,
        `${RETRY}.initial_retry_delay: must be a valid duration: nanos out of range or of the wrong sign (got 2000000000)`,
        `${RETRY}.max_retry_delay: must be a valid duration: nanos out of range or of the wrong sign (got -1)`,
      ].join("; "),
    );
  });

  it("a 5 MB request is refused by the transport (ResourceExhausted) and the server keeps serving", async () => {
    const before = await written();
    const result = await failure(
      s.flow.createOperationRun(runRequest({ name: "n".repeat(5 * MB), rackIds: one })),
    );
    expect(result.code).toBe("RESOURCE_EXHAUSTED");
    expect(await written()).toEqual(before);
    expect((await s.flow.version({})).version).not.toBe("");
  });

  it("a 1 MB cancel reason is refused naming the field, and the run stays as it was", async () => {
    const id = await createRun(s.flow, runRequest({ rackIds: [BAD.ids[2]!] }));
    expect(await failure(s.flow.cancelOperationRun({ id: { id }, reason: "r".repeat(MB) }))).toEqual({
      code: "INVALID_ARGUMENT",
      details: `reason: must be at most 4096 characters (got ${MB})`,
    });
    const run = await s.flow.getOperationRun({ id: { id }, includeStats: false });
    expect(run.operationRun?.summary?.statusMessage).not.toContain("rrrr");
    await s.flow.cancelOperationRun({ id: { id }, reason: "" });
  });
});

describe("negative pagination and malformed UUIDs", () => {
  it.each([
    [
      "ListOperationRuns",
      () => s.flow.listOperationRuns({ filter: undefined, pagination: { offset: -1, limit: -1 } }),
      "pagination.offset: offset must not be negative; pagination.limit: limit must not be negative",
    ],
    [
      "ListOperationRunTargets",
      () =>
        s.flow.listOperationRunTargets({
          operationRunId: { id: UNKNOWN_ID },
          status: 0,
          phaseScope: 0,
          pagination: { offset: -10, limit: 5 },
        }),
      "pagination.offset: offset must not be negative",
    ],
    [
      "ListTasks",
      () => s.flow.listTasks({ activeOnly: false, withReport: false, pagination: { offset: 0, limit: -1 } }),
      "pagination.limit: limit must not be negative",
    ],
    [
      "ListRacks (inventory admin)",
      () => s.admin.listRacks({ pagination: { offset: -1, limit: 1 } }),
      "pagination.offset: offset must not be negative",
    ],
    [
      "GetOperationRun with a malformed id",
      () => s.flow.getOperationRun({ id: { id: "g" }, includeStats: false }),
      "operation run ID is required",
    ],
    [
      "GetTasksByIDs with a malformed and a nil id",
      () => s.flow.getTasksByIDs({ taskIds: [{ id: "x" }, { id: NIL_ID }] }),
      'task_ids[0]: must be a UUID (got "x"); task_ids[1]: must not be the nil UUID',
    ],
    [
      "CancelTask with a malformed id",
      () => s.flow.cancelTask({ taskId: { id: "x" } }),
      "task ID is required",
    ],
    [
      "ListTasks with a malformed rack id",
      () => s.flow.listTasks({ rackId: { id: "x" }, activeOnly: false, withReport: false }),
      'rack_id: must be a valid UUID (got "x")',
    ],
  ])("%s → InvalidArgument", async (_title, call, details) => {
    expect(await failure(call())).toEqual({ code: "INVALID_ARGUMENT", details });
  });

  it("a page limit far above the maximum is capped, not refused", async () => {
    const res = await s.flow.listOperationRuns({
      filter: undefined,
      pagination: { offset: 0, limit: 1_000_000 },
    });
    expect(res.total).toBe(res.operationRuns.length);
  });
});

describe("undecodable bytes", () => {
  const create = FlowService.createOperationRun.path;

  it.each([
    ["a lone 0xff", [0xff]],
    ["a truncated varint", [0x08, 0x80]],
    ["a length prefix past the end", [0x0a, 0x7f, 0x61]],
    ["a wire type 7 (undefined)", [0x0f]],
  ])(
    "CreateOperationRun with %s → InvalidArgument 'malformed request: …', nothing written",
    async (_title, bytes) => {
      const before = await written();
      const result = await s.rawCall(create, Uint8Array.from(bytes));
      expect(result.code).toBe("INVALID_ARGUMENT");
      expect(result.details).toMatch(/^malformed request: /);
      expect(await written()).toEqual(before);
    },
  );

  it("an empty message decodes to an empty request: both required fields reported", async () => {
    expect(await s.rawCall(create, new Uint8Array())).toEqual({
      code: "INVALID_ARGUMENT",
      details: "name: name is required; configuration: configuration is required",
    });
  });

  it("a valid request cut one byte short is refused", async () => {
    const bytes = CreateOperationRunRequestCodec.encode(runRequest({ rackIds: one })).finish();
    const result = await s.rawCall(create, bytes.slice(0, bytes.length - 1));
    expect(result.code).toBe("INVALID_ARGUMENT");
  });

  it("every RPC of both services answers garbage with a status other than Internal or Unknown", async () => {
    const paths = [...Object.values(FlowService), ...Object.values(FlowInventoryAdminService)].map(
      (m) => m.path,
    );
    for (const path of paths) {
      for (const bytes of [
        [0xff, 0xff],
        [0x0a, 0x05, 0x01],
        [0x12, 0x00, 0xff],
      ]) {
        const result = await s.rawCall(path, Uint8Array.from(bytes));
        expect(["INTERNAL", "UNKNOWN", "UNAVAILABLE"], `${path} ${JSON.stringify(result)}`).not.toContain(
          result.code,
        );
      }
    }
    expect((await s.flow.version({})).version).not.toBe("");
  });
});

// ---------------------------------------------------------------------------------------------
// Properties

/** Codes a rejected request may get: the client's fault, stated. Never Internal, Unknown, Unavailable. */
const CLIENT_ERRORS = ["INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION"];

const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 4 });
const int = (min: number, max: number) => fc.integer({ min, max });
/** Defined values, UNKNOWN (0), and numbers the proto does not define (-1, max+1, max+2). */
const enumNumber = (max: number) => int(-1, max + 2);
const uuidish = fc.oneof(
  fc.constantFrom(...BAD.ids),
  fc.constantFrom(componentId(30, 0, 0), componentId(30, 1, 1)),
  fc.uuid(),
  fc.constantFrom("", "nope", NIL_ID, "ZZZZZZZZ-0000-4000-8000-000000000000", BAD.ids[0]!.toUpperCase()),
);
const duration = fc.record({
  seconds: int(-5, 4000),
  nanos: fc.constantFrom(0, 500_000_000, -1, 2_000_000_000),
});
const gate = fc.oneof(
  fc.constant({ gate: undefined }),
  fc
    .record({ scope: enumNumber(2), failureThresholdPercent: int(-5, 110) })
    .map((value) => ({ gate: { $case: "failureRate" as const, value } })),
  fc
    .record({ scope: enumNumber(2), failureThresholdCount: int(-2, 5) })
    .map((value) => ({ gate: { $case: "failureCount" as const, value } })),
);
const componentTarget = fc.record({
  identifier: fc.oneof(
    fc.constant(undefined),
    uuidish.map((id) => ({ $case: "id" as const, value: { id } })),
    fc
      .record({ type: enumNumber(6), id: fc.constantFrom("SN-bad-0-0", "SN-bad-3-1", "", "x") })
      .map((value) => ({ $case: "external" as const, value })),
  ),
});
const rackTarget = fc.record({
  identifier: fc.oneof(
    fc.constant(undefined),
    uuidish.map((id) => ({ $case: "id" as const, value: { id } })),
    fc.constantFrom("bad-1", "nope", "").map((value) => ({ $case: "name" as const, value })),
    fc.constantFrom("EXT-bad-2", "EXT-none", "").map((value) => ({ $case: "externalId" as const, value })),
  ),
  componentTypes: fc.array(enumNumber(6), { maxLength: 2 }),
});
const nvlTarget = fc.record({
  identifier: fc.oneof(
    fc.constant(undefined),
    uuidish.map((id) => ({ $case: "id" as const, value: { id } })),
    fc.constantFrom("nvl-none", "").map((value) => ({ $case: "name" as const, value })),
  ),
  componentTypes: fc.array(enumNumber(6), { maxLength: 1 }),
});
const targetSpec = fc.oneof(
  fc.constant({ targets: undefined }),
  fc
    .array(rackTarget, { maxLength: 3 })
    .map((targets) => ({ targets: { $case: "racks" as const, value: { targets } } })),
  fc
    .array(componentTarget, { maxLength: 3 })
    .map((targets) => ({ targets: { $case: "components" as const, value: { targets } } })),
  fc
    .array(nvlTarget, { maxLength: 2 })
    .map((targets) => ({ targets: { $case: "nvlDomains" as const, value: { targets } } })),
);
const firmware = fc
  .record({
    targetSpec: maybe(targetSpec),
    ruleId: maybe(uuidish.map((id) => ({ id }))),
    authenticationData: maybe(
      fc.constantFrom("s3cret-prop", "").map((value) => ({ value: { $case: "shared" as const, value } })),
    ),
    // An hour ago, or a day or two ahead: end_time already past, or not after start_time.
    startTime: maybe(fc.constantFrom(-3_600_000, 86_400_000).map((ms) => new Date(Date.now() + ms))),
    endTime: maybe(fc.constantFrom(-3_600_000, 2 * 86_400_000).map((ms) => new Date(Date.now() + ms))),
  })
  .map((fw) => ({
    ...fw,
    targetVersion: "2.0.0",
    description: "",
    subTargets: [],
    overrideReadinessCheck: false,
    overrideVersionCheck: false,
  }));
const componentFilter = fc.oneof(
  fc.constant({ filter: undefined }),
  fc
    .array(enumNumber(6), { maxLength: 2 })
    .map((types) => ({ filter: { $case: "types" as const, value: { types } } })),
  fc
    .array(componentTarget, { maxLength: 2 })
    .map((targets) => ({ filter: { $case: "components" as const, value: { targets } } })),
);
/** Maintenance windows: valid, malformed and never-firing crons, with or without a duration. */
const maintenanceWindow = fc.record({
  cron: fc.constantFrom("0 2 * * *", "*/5 * * * MON-FRI", "61 * * * *", "0 0 30 2 *", "", "x y"),
  duration: maybe(duration),
});
const options = fc.record({
  maxConcurrentTargets: int(-2, 5),
  maintenanceWindows: fc.array(maintenanceWindow, { maxLength: 2 }),
  safetyPolicy: maybe(fc.record({ gates: fc.array(gate, { maxLength: 3 }) })),
  conflictPolicy: maybe(
    fc.record({
      strategy: maybe(
        fc
          .record({
            retryTimeout: maybe(duration),
            initialRetryDelay: maybe(duration),
            maxRetryDelay: maybe(duration),
          })
          .map((value) => ({ $case: "retry" as const, value })),
      ),
    }),
  ),
  orderingPolicy: maybe(
    fc.oneof(
      fc.constant({ ordering: undefined }),
      fc.constantFrom("", "o1").map((seed) => ({ ordering: { $case: "random" as const, value: { seed } } })),
      enumNumber(2).map((strategy) => ({
        ordering: { $case: "physicalLocation" as const, value: { strategy } },
      })),
    ),
  ),
  phasePolicy: maybe(
    fc.record({
      plan: fc.oneof(
        fc.constant(undefined),
        int(-1, 5).map((phaseCount) => ({ $case: "equal" as const, value: { phaseCount } })),
        fc.array(int(-5, 110), { maxLength: 3 }).map((ps) => ({
          $case: "percentage" as const,
          value: { phases: ps.map((percentage) => ({ percentage })) },
        })),
        fc
          .array(int(-1, 4), { maxLength: 3 })
          .map((cs) => ({ $case: "count" as const, value: { phases: cs.map((count) => ({ count })) } })),
      ),
      advancePolicy: maybe(fc.record({ autoAdvance: fc.boolean() })),
    }),
  ),
});
const configuration = fc.record({
  selector: maybe(
    fc.oneof(
      fc.constant({ selector: undefined }),
      fc
        .record({ percentage: int(-5, 110), seed: fc.constantFrom("", "s1", "s2") })
        .map((value) => ({ selector: { $case: "percentage" as const, value } })),
    ),
  ),
  options: maybe(options),
  operation: maybe(
    fc.record({
      operation: maybe(firmware.map((value) => ({ $case: "upgradeFirmware" as const, value }))),
      targetScope: maybe(
        fc.record({
          excludeOperationRunIds: fc.array(
            uuidish.map((id) => ({ id })),
            { maxLength: 2 },
          ),
          defaultScopeComponentFilter: maybe(componentFilter),
        }),
      ),
    }),
  ),
});
/** Anything the proto can carry: mostly invalid somewhere. */
const wildRequest = fc.record({
  name: fc.oneof(fc.constantFrom("", "  ", "prop-run", "n".repeat(300)), fc.string({ maxLength: 12 })),
  description: fc.string({ maxLength: 8 }),
  configuration: maybe(configuration),
}) as fc.Arbitrary<CreateOperationRunRequest>;

/** Mostly valid: each part is right nine times in ten, else drawn from the wild arbitraries. */
const usually = <T, U>(valid: fc.Arbitrary<T>, wild: fc.Arbitrary<U>) =>
  fc.oneof({ arbitrary: valid, weight: 9 }, { arbitrary: wild, weight: 1 });
const validRacks = fc.subarray(BAD.ids, { minLength: 1, maxLength: 3 }).map((ids) => racksSpec(ids));
const nearlyValidRequest = fc
  .record({
    percentage: usually(int(1, 100), int(-5, 110)),
    maxConcurrent: usually(int(1, 5), int(-2, 0)),
    gates: usually(
      fc.constant(null).map(() => [countGate(1)]),
      fc.array(gate, { maxLength: 3 }),
    ),
    phasePolicy: usually(
      fc.constant(undefined),
      options.map((o) => o.phasePolicy),
    ),
    conflictPolicy: usually(
      fc.constant(undefined),
      options.map((o) => o.conflictPolicy),
    ),
    targetSpec: usually(validRacks, targetSpec),
    targetScope: usually(
      fc.constant(undefined),
      configuration.map((c) => c.operation?.targetScope),
    ),
  })
  .map((p) => runRequest({ name: "prop-run", ...p }));
const createRequest = fc.oneof(wildRequest, nearlyValidRequest);

describe("properties: whatever comes in, a status comes out and a rejection writes nothing", () => {
  it("random CreateOperationRun requests", async () => {
    const seen = { accepted: 0, rejected: 0 };
    await fc.assert(
      fc.asyncProperty(createRequest, async (request) => {
        const before = await written();
        const result = await outcome(s.flow.createOperationRun(request));
        const after = await written();
        if (result.ok) {
          seen.accepted++;
          const id = result.value.id?.id ?? "";
          expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
          expect(after.runs).toBe(before.runs + 1);
          expect(after.listed).toBe(before.listed + 1);
          expect(after.targets).toBeGreaterThan(before.targets);
          // Paused at once, so the dispatcher leaves it alone (see pauseActiveRuns).
          await s.flow.pauseOperationRun({ id: { id } });
        } else {
          seen.rejected++;
          expect(CLIENT_ERRORS, `${result.code}: ${result.details}`).toContain(result.code);
          expect(result.details).not.toBe("");
          expect(after).toEqual(before);
        }
      }),
      { numRuns: Number(process.env.E2E_PROPERTY_RUNS ?? 40) },
    );
    // The generator must reach both sides, or the property says nothing about one of them.
    expect(seen.rejected).toBeGreaterThan(0);
    expect(seen.accepted).toBeGreaterThan(0);
    expect((await s.flow.version({})).version).not.toBe("");
  });

  it("random bytes as a CreateOperationRun request", async () => {
    const create = FlowService.createOperationRun.path;
    // One snapshot around the whole property (per-call scans would dominate its run time): every
    // call that did not answer OK must have written nothing, so the tables grow by the OKs alone.
    const before = await written();
    let ok = 0;
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 256 }), async (bytes) => {
        const result = await s.rawCall(create, bytes);
        expect(["OK", ...CLIENT_ERRORS], `${result.code}: ${result.details}`).toContain(result.code);
        if (result.code === "OK") ok++;
      }),
      { numRuns: 300 },
    );
    const after = await written();
    expect(after.runs - before.runs).toBe(ok);
    expect(after.listed - before.listed).toBe(ok);
    if (ok === 0) expect(after.targets).toBe(before.targets);
    expect((await s.flow.version({})).version).not.toBe("");
  });
});
