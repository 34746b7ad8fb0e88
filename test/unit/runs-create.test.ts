/**
 * CreateOperationRun and PlanOperationRun (createRunService in src/app/runs.ts) as tables on the
 * in-memory stores: validation failures surface as InvalidArgument before anything is read;
 * planning runs against the inventory (target spec kinds, the default scope, exclusions of prior
 * runs, the 100-row candidate limit, the empty plan); a create is ONE createRun of the frozen run
 * with its targets; planRun answers what createRun would freeze and writes nothing. The rules of
 * validation and planning themselves are tested pure (run-config-*.test.ts, planner-*.test.ts).
 */

import { status as GrpcStatus } from "@grpc/grpc-js";
import { beforeEach, describe, expect, it } from "vitest";
import { grpcStatusFor } from "../../src/adapters/grpc/status.js";
import { createRunService } from "../../src/app/runs.js";
import type { CreateRunInput, TargetSpecInput } from "../../src/domain/create-run-input.js";
import type { FlowError } from "../../src/domain/errors.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { ComponentType, Run, Target } from "../../src/domain/model.js";
import { clockOf } from "../support/clock.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import { everyImage } from "../support/memory-images.js";
import { MemoryInventoryStore, MemoryRunStore } from "../support/memory-stores.js";

const NOW = 1_700_000_200_000;
const ALL = { offset: 0, limit: 1000 };

function rack(
  n: number,
  options: { externalId?: string | null; types?: ComponentType[]; nvl?: string } = {},
) {
  const id = uuid(n, "aaaa0000");
  const value: InventoryRack = {
    id,
    name: `rack-${n}`,
    components: (options.types ?? ["NVSWITCH", "COMPUTE"]).map((type, i) => ({
      id: uuid(n * 10 + i, `c${type.length}c00000`),
      type,
    })),
  };
  if (options.externalId !== null) value.externalId = options.externalId ?? `EXT-${n}`;
  if (options.nvl !== undefined) value.nvlDomain = { id: uuid(1, "d0d00000"), name: options.nvl };
  return value;
}
const racks = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => rack(from + i));

/** A valid request with explicit seeds (so a plan and a create of it agree) and two equal phases. */
function request(
  changes: {
    targetSpec?: TargetSpecInput;
    exclude?: string[];
    filter?: ComponentType[];
    name?: string;
    percentage?: number;
    maxConcurrent?: number;
    phases?: number;
  } = {},
): CreateRunInput {
  return {
    name: changes.name ?? "  canary  ",
    description: "first racks",
    configuration: {
      selector: { kind: "percentage", percentage: changes.percentage ?? 100, seed: "cohort" },
      options: {
        maxConcurrentTargets: changes.maxConcurrent ?? 2,
        safetyPolicy: { gates: [{ kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 }] },
        orderingPolicy: { kind: "random", seed: "order" },
        phasePolicy: { plan: { kind: "equal", phaseCount: changes.phases ?? 2 } },
      },
      operation: {
        upgradeFirmware: {
          description: "fw 2.0",
          targetVersion: "2.0.0",
          subTargets: [],
          overrideReadinessCheck: false,
          overrideVersionCheck: false,
          ...(changes.targetSpec === undefined ? {} : { targetSpec: changes.targetSpec }),
        },
        targetScope: {
          excludeOperationRunIds: changes.exclude ?? [],
          ...(changes.filter === undefined
            ? {}
            : { defaultScopeComponentFilter: { kind: "types", types: changes.filter } }),
        },
      },
    },
  };
}

let runs: MemoryRunStore;
let inventory: MemoryInventoryStore;
let service: ReturnType<typeof createRunService>;
let ids = 0;

function setUp(inventoryRacks: InventoryRack[]) {
  runs = new MemoryRunStore();
  inventory = new MemoryInventoryStore(inventoryRacks);
  ids = 0;
  service = createRunService({
    images: everyImage,
    runs,
    inventory,
    clock: clockOf(() => NOW),
    newId: () => uuid(++ids, "1d000000"),
  });
}
beforeEach(() => setUp(racks(1, 5)));

async function created(input: CreateRunInput): Promise<{ run: Run; targets: Target[] }> {
  const { id } = await service.createRun(input);
  const run = (await runs.getRun(id)) as Run;
  const listed = await runs.listTargets(id, { phaseFrom: 0, phaseTo: 9, page: ALL });
  return { run, targets: listed?.targets ?? [] };
}
const rackIdsOf = (targets: Target[]) => targets.map((t) => t.rackId).sort();
const both = (input: CreateRunInput) => [service.createRun(input), service.planRun(input)];

describe("create: validation failures → InvalidArgument with every violation, nothing read or written", () => {
  const rows: [string, CreateRunInput, string][] = [
    ["a blank name", request({ name: " \t " }), "name: name is required"],
    [
      "selector percentage 0",
      request({ percentage: 0 }),
      "configuration.selector.percentage.percentage: percentage selector must be between 1 and 100",
    ],
    [
      "a blank name and max_concurrent_targets 0, in the reference's order",
      request({ name: "", maxConcurrent: 0 }),
      "name: name is required; configuration.options.max_concurrent_targets: options.max_concurrent_targets must be greater than 0",
    ],
  ];
  it.each(rows)("%s → %j", async (_, input, message) => {
    for (const call of both(input)) {
      await expect(call).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message });
    }
    expect(inventory.calls.of("loadAll")).toBe(0);
    expect(runs.calls.of("getRun")).toBe(0);
    expect(runs.writes()).toBe(0);
  });
});

describe("create: planning against the inventory", () => {
  it("no target spec: the default scope is every rack with all its components, in two equal phases", async () => {
    const { run, targets } = await created(request());
    expect(rackIdsOf(targets)).toEqual(racks(1, 5).map((r) => r.id));
    expect(run.phaseSizes).toEqual([3, 2]);
    expect(targets.map((t) => [t.sequenceIndex, t.phaseIndex])).toEqual([
      [0, 0],
      [1, 0],
      [2, 0],
      [3, 1],
      [4, 1],
    ]);
    const one = targets.find((t) => t.rackId === rack(1).id);
    // Frozen in type order (COMPUTE before NVSWITCH), whatever the inventory's order.
    expect(one?.componentsByType).toEqual([
      { type: "COMPUTE", componentIds: [rack(1).components[1]!.id] },
      { type: "NVSWITCH", componentIds: [rack(1).components[0]!.id] },
    ]);
  });

  it("a default-scope type filter keeps the racks that have the type, with those components only", async () => {
    setUp([...racks(1, 3), rack(4, { types: ["CDU", "COMPUTE"] })]);
    const { targets } = await created(request({ filter: ["CDU"], phases: 1 }));
    expect(targets.map((t) => [t.rackId, t.componentsByType])).toEqual([
      [
        rack(4).id,
        [{ type: "CDU", componentIds: [rack(4, { types: ["CDU", "COMPUTE"] }).components[0]!.id] }],
      ],
    ]);
  });

  const spec: [string, TargetSpecInput, number[]][] = [
    [
      "racks by id, name and external id",
      {
        kind: "racks",
        racks: [
          { ref: { by: "id", id: rack(1).id }, componentTypes: [] },
          { ref: { by: "name", name: "rack-2" }, componentTypes: [] },
          { ref: { by: "externalId", externalId: "EXT-3" }, componentTypes: ["COMPUTE"] },
        ],
      },
      [1, 2, 3],
    ],
    [
      "components by id",
      {
        kind: "components",
        components: [
          { by: "id", id: rack(4).components[0]!.id },
          { by: "id", id: rack(1).components[1]!.id },
        ],
      },
      [1, 4],
    ],
    [
      "an NVLink domain by name",
      { kind: "nvlDomains", domains: [{ ref: { by: "name", name: "nvl-a" }, componentTypes: [] }] },
      [2, 5],
    ],
  ];
  it.each(spec)("an explicit spec of %s resolves to its racks", async (_, targetSpec, expected) => {
    setUp(
      racks(1, 5).map((r, i) =>
        i === 1 || i === 4 ? { ...r, nvlDomain: { id: uuid(1, "d0d00000"), name: "nvl-a" } } : r,
      ),
    );
    const { targets } = await created(request({ targetSpec }));
    expect(rackIdsOf(targets)).toEqual(expected.map((n) => rack(n).id));
  });

  it("an unknown rack in the spec → NotFound 'rack target 0: rack <id> is not found', nothing written", async () => {
    const missing = uuid(99, "aaaa0000");
    const input = request({
      targetSpec: { kind: "racks", racks: [{ ref: { by: "id", id: missing }, componentTypes: [] }] },
    });
    for (const call of both(input)) {
      await expect(call).rejects.toMatchObject({
        code: "NOT_FOUND",
        message: `rack target 0: rack ${missing} is not found`,
      });
    }
    expect(runs.writes()).toBe(0);
  });

  it("the targets of every excluded run (all phases) drop out of the candidates", async () => {
    const first = await created(request({ percentage: 40 }));
    expect(first.targets).toHaveLength(2);
    const { targets } = await created(request({ exclude: [first.run.id] }));
    const left = racks(1, 5)
      .map((r) => r.id)
      .filter((id) => !rackIdsOf(first.targets).includes(id));
    expect(rackIdsOf(targets)).toEqual(left);
  });

  it("an excluded run that does not exist → NotFound 'excluded operation run not found: <id>'", async () => {
    const missing = uuid(42, "e0000000");
    for (const call of both(request({ exclude: [missing] }))) {
      await expect(call).rejects.toMatchObject({
        code: "NOT_FOUND",
        message: `excluded operation run not found: ${missing}`,
      });
    }
  });

  it("101 candidate racks → the candidate limit: gRPC Internal 'operation run candidate scope exceeds target limit 100'; 100 are fine", async () => {
    setUp(racks(1, 101));
    for (const call of both(request())) {
      const error: FlowError = await call.then(
        () => expect.fail("expected the candidate limit"),
        (e: FlowError) => e,
      );
      expect(error).toMatchObject({
        code: "CANDIDATE_LIMIT",
        message: "operation run candidate scope exceeds target limit 100",
      });
      expect(grpcStatusFor(error.code)).toBe(GrpcStatus.INTERNAL);
    }
    setUp(racks(1, 100));
    expect((await service.planRun(request())).plan.targets).toHaveLength(100);
  });

  it("excluded runs holding more than 100 targets between them → the same candidate limit", async () => {
    setUp(racks(1, 100));
    const a = await created(request({ percentage: 60 }));
    const b = await created(request({ percentage: 60 }));
    expect(a.targets.length + b.targets.length).toBe(120);
    await expect(service.createRun(request({ exclude: [a.run.id, b.run.id] }))).rejects.toMatchObject({
      code: "CANDIDATE_LIMIT",
      message: "operation run candidate scope exceeds target limit 100",
    });
  });

  it.each([
    ["an empty inventory", () => setUp([]), () => request()],
    ["a default-scope filter no rack matches", () => undefined, () => request({ filter: ["UMS"] })],
  ])("%s → InvalidArgument 'operation run has no planned targets'", async (_, arrange, input) => {
    arrange();
    for (const call of both(input())) {
      await expect(call).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message: "operation run has no planned targets",
      });
    }
    expect(runs.writes()).toBe(0);
  });

  it("two equal phases for one selected rack → InvalidArgument naming the empty phase", async () => {
    setUp([rack(1)]);
    await expect(service.createRun(request({ phases: 2 }))).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: "equal phase 2 resolves to zero targets for 1 selected targets",
    });
  });

  it("excluding a run that covered every rack → InvalidArgument 'operation run has no planned targets'", async () => {
    const everything = await created(request());
    runs.calls.reset();
    await expect(service.createRun(request({ exclude: [everything.run.id] }))).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: "operation run has no planned targets",
    });
    expect(runs.writes()).toBe(0);
  });
});

describe("create: ONE createRun of the frozen run with its targets", () => {
  it("the run: a fresh id, the trimmed name, the effective configuration, PENDING, zero counters, created now", async () => {
    const { id } = await service.createRun(request());
    expect(runs.calls.of("createRun")).toBe(1);
    expect(runs.writes()).toBe(1);
    const run = (await runs.getRun(id)) as Run;
    expect(id).toBe(uuid(1, "1d000000"));
    const zero = { completed: 0, failed: 0, terminated: 0, skipped: 0 };
    expect(run).toEqual({
      id,
      name: "canary",
      description: "first racks",
      config: {
        selector: { kind: "percentage", percentage: 100, seed: "cohort" },
        maxConcurrentTargets: 2,
        safetyGates: [{ kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 }],
        conflictRetry: { retryTimeoutMs: 3_600_000, initialRetryDelayMs: 30_000, maxRetryDelayMs: 300_000 },
        ordering: { kind: "random", seed: "order" },
        phasePlan: { kind: "equal", phaseCount: 2 },
        autoAdvance: false,
        operation: {
          kind: "upgradeFirmware",
          firmware: {
            description: "fw 2.0",
            targetVersion: "2.0.0",
            subTargets: [],
            overrideReadinessCheck: false,
            overrideVersionCheck: false,
          },
        },
        targetScope: { excludeOperationRunIds: [] },
      },
      status: "PENDING",
      reason: "NONE",
      statusMessage: "",
      phaseSizes: [3, 2],
      currentPhaseIndex: 0,
      counters: [zero, zero],
      inFlight: 0,
      createdAt: NOW,
      updatedAt: NOW,
    });
  });

  it("the targets: fresh ids, PENDING, in sequence order, each with its rack's external id frozen", async () => {
    const { run, targets } = await created(request());
    expect(targets.map((t) => t.id)).toEqual([2, 3, 4, 5, 6].map((n) => uuid(n, "1d000000")));
    const external = new Map(racks(1, 5).map((r) => [r.id, r.externalId]));
    for (const t of targets) {
      expect(t).toEqual({
        id: t.id,
        runId: run.id,
        rackId: t.rackId,
        sequenceIndex: t.sequenceIndex,
        phaseIndex: t.phaseIndex,
        status: "PENDING",
        message: "",
        componentsByType: t.componentsByType,
        rackExternalId: external.get(t.rackId),
        createdAt: NOW,
        updatedAt: NOW,
        conflictAttempts: 0,
      });
    }
  });

  it("a frozen external id is what ListOperationRunTargets answers later, without asking inventory again", async () => {
    const { run } = await created(request());
    await inventory.upsertRacks([{ ...rack(1), externalId: "EXT-RENAMED" }]);
    inventory.calls.reset();
    const listed = await service.listTargets({ runId: run.id, phaseScope: "CURRENT_PHASE", page: ALL });
    expect(listed.targets.find((t) => t.rackId === rack(1).id)?.rackExternalId).toBe("EXT-1");
    expect(inventory.calls.of("getRacksByIds")).toBe(0);
  });

  it("a rack with no external id at create: listing asks inventory, and FailedPrecondition while it still has none", async () => {
    setUp([rack(1, { externalId: null })]);
    const { run, targets } = await created(request({ phases: 1 }));
    expect("rackExternalId" in (targets[0] as Target)).toBe(false);
    const query = { runId: run.id, phaseScope: "CURRENT_PHASE" as const, page: ALL };
    await expect(service.listTargets(query)).rejects.toMatchObject({
      code: "FAILED_PRECONDITION",
      message: `rack "${rack(1).id}" has no external ID`,
    });
    await inventory.upsertRacks([{ ...rack(1), externalId: "EXT-LATE" }]);
    expect((await service.listTargets(query)).targets[0]?.rackExternalId).toBe("EXT-LATE");
  });

  it("firmware credentials go to the store with the run and never come back out of a read or a plan", async () => {
    const input = request();
    input.configuration!.operation!.upgradeFirmware!.authentication = { kind: "shared", secret: "hunter2" };
    const { id } = await service.createRun(input);
    expect(await runs.getRunSecrets(id)).toEqual({ kind: "shared", secret: "hunter2" });
    expect(JSON.stringify(await service.getRun(id, true))).not.toContain("hunter2");
    expect(JSON.stringify((await service.planRun(input)).config)).not.toContain("hunter2");
  });
});

describe("planRun: what createRun would freeze, written nowhere", () => {
  it("the same configuration, the same targets in the same phases, and each planned rack's external id", async () => {
    setUp([...racks(1, 4), rack(5, { externalId: null })]);
    const input = request({ percentage: 80 });
    const planned = await service.planRun(input);
    expect(runs.writes()).toBe(0);
    const { run, targets } = await created(input);
    expect(planned.config).toEqual(run.config);
    expect(planned.plan.phaseSizes).toEqual(run.phaseSizes);
    expect(planned.plan.targets).toEqual(
      targets.map(({ rackId, sequenceIndex, phaseIndex, componentsByType }) => ({
        rackId,
        sequenceIndex,
        phaseIndex,
        componentsByType,
      })),
    );
    expect(planned.plan.candidateCount).toBe(5);
    const expectedExternal = new Map(
      targets.map((t) => [t.rackId, t.rackId === rack(5).id ? "" : (t.rackExternalId as string)]),
    );
    expect(planned.rackExternalIds).toEqual(expectedExternal);
  });
});

describe("create: the failure-domain spread freezes each target's domain", () => {
  const placed = (n: number, row: string): InventoryRack => ({
    ...rack(n),
    location: { datacenter: "dc1", row, position: n },
  });
  const withSpread = (input: CreateRunInput, kind: "ROW" | "NVL_DOMAIN" = "ROW"): CreateRunInput => {
    const options = input.configuration?.options;
    if (options) options.failureDomainSpread = { kind, attribute: "", maxInFlight: 1 };
    return input;
  };

  it("the default scope (narrow index, no locations) reads the planned racks whole, once, and freezes their rows", async () => {
    setUp([placed(1, "A"), placed(2, "B"), placed(3, "A")]);
    inventory.calls.reset();
    const { run, targets } = await created(withSpread(request({ phases: 1 })));
    expect(inventory.calls.of("getRacksByIds")).toBe(1);
    expect(run.config.failureDomainSpread).toEqual({ kind: "ROW", maxInFlight: 1 });
    expect(Object.fromEntries(targets.map((t) => [t.rackId, t.failureDomain]))).toEqual({
      [rack(1).id]: "dc1/A",
      [rack(2).id]: "dc1/B",
      [rack(3).id]: "dc1/A",
    });
    const plan = await service.planRun(withSpread(request({ phases: 1 })));
    expect(plan.plan.targets.map((t) => t.failureDomain).sort()).toEqual(["dc1/A", "dc1/A", "dc1/B"]);
  });

  it("a planned rack without the domain refuses plan and create by name; nothing is written", async () => {
    setUp([placed(1, "A"), rack(2, { nvl: "nvl-1" })]);
    for (const call of both(withSpread(request({ phases: 1 })))) {
      await expect(call).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message:
          "configuration.options.failure_domain_spread: the inventory places no row for 1 planned rack: rack-2",
      });
    }
    expect(runs.calls.of("createRun")).toBe(0);
  });

  it("without a spread no domain is frozen and the default scope reads no rack whole (a target_version names every version)", async () => {
    setUp([placed(1, "A")]);
    inventory.calls.reset();
    const { targets } = await created(request({ phases: 1 }));
    expect("failureDomain" in (targets[0] as Target)).toBe(false);
    expect(inventory.calls.of("getRacksByIds")).toBe(0);
  });
});
