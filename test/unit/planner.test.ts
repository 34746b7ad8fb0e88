import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { rankKey, seededOrder } from "../../src/domain/hash.js";
import type { InventoryComponent, InventoryRack } from "../../src/domain/inventory.js";
import type {
  ComponentFilter,
  ComponentType,
  PhasePlan,
  RunConfig,
  TargetSpec,
} from "../../src/domain/model.js";
import {
  CANDIDATE_TARGET_LIMIT,
  type ExcludedTarget,
  freezeComponents,
  mergeRows,
  planRun,
} from "../../src/domain/planner.js";

// ---------------------------------------------------------------------------------------------
// Fixtures

const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");
const rackId = (n: number) => `00000000-0000-4000-8000-${hex(n, 12)}`;
const componentId = (rack: number, index: number) =>
  `c0000000-0000-4000-8000-${hex(rack, 6)}${hex(index, 6)}`;

/** Rack n with one component per listed type (component ids are ordered by position). */
function rack(
  n: number,
  types: ComponentType[] = ["COMPUTE", "NVSWITCH"],
  extra: Partial<InventoryRack> = {},
): InventoryRack {
  return {
    id: rackId(n),
    name: `rack-${n}`,
    externalId: `ext-rack-${n}`,
    components: types.map((type, i) => ({ id: componentId(n, i), type, externalId: `ext-${n}-${i}` })),
    ...extra,
  };
}

const racks = (count: number, types?: ComponentType[]) =>
  Array.from({ length: count }, (_, i) => rack(i + 1, types));

function config(
  overrides: {
    percentage?: number;
    selectorSeed?: string;
    orderingSeed?: string;
    phasePlan?: PhasePlan;
    targetSpec?: TargetSpec;
    filter?: ComponentFilter;
  } = {},
): RunConfig {
  return {
    selector: {
      kind: "percentage",
      percentage: overrides.percentage ?? 100,
      seed: overrides.selectorSeed ?? "sel",
    },
    maxConcurrentTargets: 1,
    safetyGates: [{ kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 }],
    conflictRetry: { retryTimeoutMs: 3_600_000, initialRetryDelayMs: 30_000, maxRetryDelayMs: 300_000 },
    ordering: { kind: "random", seed: overrides.orderingSeed ?? "ord" },
    phasePlan: overrides.phasePlan ?? { kind: "equal", phaseCount: 1 },
    autoAdvance: false,
    operation: {
      kind: "upgradeFirmware",
      firmware: {
        ...(overrides.targetSpec ? { targetSpec: overrides.targetSpec } : {}),
        description: "",
        subTargets: [],
        overrideReadinessCheck: false,
        overrideVersionCheck: false,
      },
    },
    targetScope: {
      excludeOperationRunIds: [],
      ...(overrides.filter ? { defaultScopeComponentFilter: overrides.filter } : {}),
    },
  };
}

function plan(
  inventory: InventoryRack[],
  overrides: Parameters<typeof config>[0] = {},
  excludedTargets: ExcludedTarget[] = [],
) {
  return planRun({ config: config(overrides), inventory, excludedTargets });
}

/** The thrown error's stable identity: name, code and exact message. */
function thrown(fn: () => unknown): { name: string; code: string; message: string } {
  try {
    fn();
  } catch (e) {
    const error = e as { name: string; code: string; message: string };
    return { name: error.name, code: error.code, message: error.message };
  }
  throw new Error("expected an error, none was thrown");
}

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
const rackIdsOf = (p: ReturnType<typeof planRun>) => p.targets.map((t) => t.rackId);
const componentsOf = (p: ReturnType<typeof planRun>, id: string) =>
  p.targets.find((t) => t.rackId === id)?.componentsByType;

// ---------------------------------------------------------------------------------------------

describe("planner: seeded hash order", () => {
  it("rank key is the lowercase hex SHA-256 of seed:rackId (the worked example)", () => {
    expect(rankKey("seed-a", "00000000-0000-4000-8000-000000000001")).toBe(
      "b458570fe4ae3fcbbb658a4b532905e955745d9896f135835e9b20b26d3d6d1f",
    );
  });

  it("orders by key ascending: the worked example gives …3, …2, …1", () => {
    const ids = [1, 2, 3].map(rackId);
    expect(seededOrder(ids, "seed-a")).toEqual([rackId(3), rackId(2), rackId(1)]);
    expect(ids).toEqual([rackId(1), rackId(2), rackId(3)]);
  });

  it("equal keys (the same id twice) keep both entries, and input order does not matter", () => {
    const ids = [rackId(2), rackId(1), rackId(2)];
    expect(seededOrder(ids, "seed-a")).toEqual([rackId(2), rackId(2), rackId(1)]);
    expect(seededOrder([...ids].reverse(), "seed-a")).toEqual(seededOrder(ids, "seed-a"));
  });

  it("compares keys byte-wise, not by locale", () => {
    const ids = Array.from({ length: 50 }, (_, i) => rackId(i));
    const expected = [...ids].sort((a, b) => (sha256(`x:${a}`) < sha256(`x:${b}`) ? -1 : 1));
    expect(seededOrder(ids, "x")).toEqual(expected);
  });
});

describe("planner: golden selection and order", () => {
  const ids = Array.from(
    { length: 10 },
    (_, i) => `5c1b2d3e-0000-4000-8000-0000000000${String(i).padStart(2, "0")}`,
  );
  const inventory: InventoryRack[] = ids.map((id, i) => ({
    id,
    name: `golden-${i}`,
    components: [{ id: `9c1b2d3e-0000-4000-8000-0000000000${String(i).padStart(2, "0")}`, type: "COMPUTE" }],
  }));
  const independentOrder = (list: string[], seed: string) =>
    [...list].sort((a, b) => (sha256(`${seed}:${a}`) < sha256(`${seed}:${b}`) ? -1 : 1));

  it("selector seed canary-seed ranks the 10 racks in a fixed order", () => {
    const pinned = [5, 8, 3, 4, 6, 2, 9, 0, 7, 1].map((i) => ids[i]);
    expect(independentOrder(ids, "canary-seed")).toEqual(pinned);
    const p = plan(inventory, { percentage: 100, selectorSeed: "canary-seed", orderingSeed: "canary-seed" });
    expect(rackIdsOf(p)).toEqual(pinned);
  });

  it("30 % selects the first 3 by selector seed, then orders them by the ordering seed", () => {
    const selected = independentOrder(ids, "canary-seed").slice(0, 3);
    const ordered = independentOrder(selected, "order-seed");
    expect(ordered).toEqual([ids[8], ids[3], ids[5]]);
    const p = plan(inventory, { percentage: 30, selectorSeed: "canary-seed", orderingSeed: "order-seed" });
    expect(rackIdsOf(p)).toEqual(ordered);
    expect(p.candidateCount).toBe(10);
  });
});

describe("planner: selection size ceil(n * pct / 100)", () => {
  it.each([
    [3, 1, 1],
    [3, 34, 2],
    [3, 100, 3],
    [10, 1, 1],
    [10, 10, 1],
    [10, 11, 2],
    [100, 1, 1],
    [100, 99, 99],
    [7, 50, 4],
  ])("%i candidates at %i %% → %i targets", (n, percentage, expected) => {
    const p = plan(racks(n), { percentage });
    expect(p.targets).toHaveLength(expected);
    expect(p.candidateCount).toBe(n);
  });

  it("a 0 % selector (never valid at create) plans nothing: empty plan", () => {
    expect(thrown(() => plan(racks(3), { percentage: 0 }))).toEqual({
      name: "InvalidArgumentError",
      code: "INVALID_ARGUMENT",
      message: "operation run has no planned targets",
    });
  });
});

describe("planner: candidate limit", () => {
  const limitError = {
    name: "CandidateLimitError",
    code: "CANDIDATE_LIMIT",
    message: "operation run candidate scope exceeds target limit 100",
  };

  it("the limit is 100", () => {
    expect(CANDIDATE_TARGET_LIMIT).toBe(100);
  });

  it("100 racks in the default scope plan fine", () => {
    expect(plan(racks(100), { percentage: 1 }).candidateCount).toBe(100);
  });

  it("101 racks in the default scope fail even at 1 %", () => {
    expect(thrown(() => plan(racks(101), { percentage: 1 }))).toEqual(limitError);
  });

  it("101 racks fail even when exclusions would leave fewer than 100", () => {
    const excluded = [{ rackId: rackId(1), componentsByType: freezeComponents(rack(1).components) }];
    expect(thrown(() => plan(racks(101), {}, excluded))).toEqual(limitError);
  });

  it("racks without a matching component do not count: 101 racks, one without compute, filtered to compute", () => {
    const inventory = [...racks(100), rack(101, ["NVSWITCH"])];
    const p = plan(inventory, { filter: { kind: "types", types: ["COMPUTE"] } });
    expect(p.candidateCount).toBe(100);
  });

  it("101 explicit rack entries fail", () => {
    const spec: TargetSpec = {
      kind: "racks",
      racks: racks(101).map((r) => ({ ref: { by: "id", id: r.id }, componentTypes: [] })),
    };
    expect(thrown(() => plan(racks(101), { targetSpec: spec }))).toEqual(limitError);
  });

  it("the same rack listed 101 times fails: the limit counts rows before they merge", () => {
    const spec: TargetSpec = {
      kind: "racks",
      racks: Array.from({ length: 101 }, () => ({ ref: { by: "id", id: rackId(1) }, componentTypes: [] })),
    };
    expect(thrown(() => plan(racks(1), { targetSpec: spec }))).toEqual(limitError);
  });

  it("101 component entries on one rack fail: each component entry is a row", () => {
    const big = rack(
      1,
      Array.from({ length: 101 }, (): ComponentType => "COMPUTE"),
    );
    const spec: TargetSpec = {
      kind: "components",
      components: big.components.map((c) => ({ by: "id", id: c.id })),
    };
    expect(thrown(() => plan([big], { targetSpec: spec }))).toEqual(limitError);
  });

  it("100 component entries on one rack plan one target with 100 components", () => {
    const big = rack(
      1,
      Array.from({ length: 100 }, (): ComponentType => "COMPUTE"),
    );
    const spec: TargetSpec = {
      kind: "components",
      components: big.components.map((c) => ({ by: "id", id: c.id })),
    };
    const p = plan([big], { targetSpec: spec });
    expect(p.targets).toHaveLength(1);
    expect(p.targets[0]?.componentsByType[0]?.componentIds).toHaveLength(100);
  });

  it("101 targets loaded from the excluded runs fail", () => {
    const excluded = racks(101).map((r) => ({
      rackId: r.id,
      componentsByType: freezeComponents(r.components),
    }));
    expect(thrown(() => plan(racks(5), {}, excluded))).toEqual(limitError);
  });

  it("100 targets loaded from the excluded runs are fine", () => {
    const excluded = racks(100).map((r) => ({
      rackId: r.id,
      componentsByType: freezeComponents(r.components),
    }));
    expect(plan(racks(101).slice(95), {}, excluded).candidateCount).toBe(1);
  });

  it("an empty base scope is an empty plan even with 101 excluded targets (the reference stops early)", () => {
    const excluded = racks(101).map((r) => ({
      rackId: r.id,
      componentsByType: freezeComponents(r.components),
    }));
    expect(thrown(() => plan([], {}, excluded))).toEqual({
      name: "InvalidArgumentError",
      code: "INVALID_ARGUMENT",
      message: "operation run has no planned targets",
    });
  });
});

describe("planner: empty plan", () => {
  const emptyPlan = {
    name: "InvalidArgumentError",
    code: "INVALID_ARGUMENT",
    message: "operation run has no planned targets",
  };

  it("an empty inventory", () => {
    expect(thrown(() => plan([]))).toEqual(emptyPlan);
  });

  it("a type filter that matches no component", () => {
    expect(thrown(() => plan(racks(3), { filter: { kind: "types", types: ["CDU"] } }))).toEqual(emptyPlan);
  });

  it("exclusions that remove every component", () => {
    const excluded = racks(3).map((r) => ({
      rackId: r.id,
      componentsByType: freezeComponents(r.components),
    }));
    expect(thrown(() => plan(racks(3), {}, excluded))).toEqual(emptyPlan);
  });

  it("an NVLink domain id that no rack carries", () => {
    const spec: TargetSpec = {
      kind: "nvlDomains",
      domains: [{ ref: { by: "id", id: rackId(99) }, componentTypes: [] }],
    };
    expect(thrown(() => plan(racks(3), { targetSpec: spec }))).toEqual(emptyPlan);
  });

  it("explicit racks whose type filter matches nothing are skipped silently", () => {
    const spec: TargetSpec = {
      kind: "racks",
      racks: [{ ref: { by: "id", id: rackId(1) }, componentTypes: ["UMS"] }],
    };
    expect(thrown(() => plan(racks(3), { targetSpec: spec }))).toEqual(emptyPlan);
  });
});

describe("planner: merge of rows for the same rack", () => {
  it("the same rack twice with different type filters becomes one target with both types", () => {
    const spec: TargetSpec = {
      kind: "racks",
      racks: [
        { ref: { by: "id", id: rackId(1) }, componentTypes: ["NVSWITCH"] },
        { ref: { by: "name", name: "rack-2" }, componentTypes: [] },
        { ref: { by: "externalId", externalId: "ext-rack-1" }, componentTypes: ["COMPUTE", "NVSWITCH"] },
      ],
    };
    const p = plan(racks(3), { targetSpec: spec });
    expect(p.candidateCount).toBe(2);
    expect(rackIdsOf(p).sort()).toEqual([rackId(1), rackId(2)]);
    expect(componentsOf(p, rackId(1))).toEqual([
      { type: "COMPUTE", componentIds: [componentId(1, 0)] },
      { type: "NVSWITCH", componentIds: [componentId(1, 1)] },
    ]);
  });

  it("first occurrence keeps its place, component ids once, first-seen order", () => {
    const [a, b] = [rack(1, ["COMPUTE", "COMPUTE"]), rack(2)];
    const [a0, a1] = a.components as [InventoryComponent, InventoryComponent];
    const merged = mergeRows([
      { rackId: a.id, components: [a1] },
      { rackId: b.id, components: b.components },
      { rackId: a.id, components: [a0, a1] },
    ]);
    expect(merged).toEqual([
      { rackId: a.id, components: [a1, a0] },
      { rackId: b.id, components: b.components },
    ]);
  });

  it("components of one rack named in several component entries become one target", () => {
    const inventory = racks(2, ["COMPUTE", "COMPUTE", "NVSWITCH"]);
    const spec: TargetSpec = {
      kind: "components",
      components: [
        { by: "id", id: componentId(1, 1) },
        { by: "external", type: "NVSWITCH", externalId: "ext-1-2" },
        { by: "id", id: componentId(1, 0) },
        { by: "id", id: componentId(1, 1) },
      ],
    };
    const p = plan(inventory, { targetSpec: spec });
    expect(p.targets).toEqual([
      {
        rackId: rackId(1),
        sequenceIndex: 0,
        phaseIndex: 0,
        componentsByType: [
          { type: "COMPUTE", componentIds: [componentId(1, 0), componentId(1, 1)] },
          { type: "NVSWITCH", componentIds: [componentId(1, 2)] },
        ],
      },
    ]);
  });
});

describe("planner: exclusions", () => {
  const inventory = racks(3, ["COMPUTE", "COMPUTE", "NVSWITCH"]);

  it("subtracts the excluded components and keeps the rest of the rack", () => {
    const excluded = [
      {
        rackId: rackId(1),
        componentsByType: [{ type: "COMPUTE" as const, componentIds: [componentId(1, 0)] }],
      },
    ];
    const p = plan(inventory, {}, excluded);
    expect(p.candidateCount).toBe(3);
    expect(componentsOf(p, rackId(1))).toEqual([
      { type: "COMPUTE", componentIds: [componentId(1, 1)] },
      { type: "NVSWITCH", componentIds: [componentId(1, 2)] },
    ]);
  });

  it("a rack whose every component is excluded (across several targets) drops out", () => {
    const excluded = [
      {
        rackId: rackId(2),
        componentsByType: [
          { type: "COMPUTE" as const, componentIds: [componentId(2, 0), componentId(2, 1)] },
        ],
      },
      {
        rackId: rackId(2),
        componentsByType: [{ type: "NVSWITCH" as const, componentIds: [componentId(2, 2)] }],
      },
    ];
    const p = plan(inventory, {}, excluded);
    expect(p.candidateCount).toBe(2);
    expect(rackIdsOf(p)).not.toContain(rackId(2));
  });

  it("an id excluded under another type, or on another rack, stays (subtraction is per rack and type)", () => {
    const excluded = [
      {
        rackId: rackId(1),
        componentsByType: [{ type: "NVSWITCH" as const, componentIds: [componentId(1, 0)] }],
      },
      {
        rackId: rackId(2),
        componentsByType: [{ type: "COMPUTE" as const, componentIds: [componentId(1, 1)] }],
      },
    ];
    const p = plan(inventory, {}, excluded);
    expect(componentsOf(p, rackId(1))).toEqual(
      freezeComponents(rack(1, ["COMPUTE", "COMPUTE", "NVSWITCH"]).components),
    );
  });

  it("excluded targets of racks outside the scope change nothing", () => {
    const excluded = [{ rackId: rackId(9), componentsByType: freezeComponents(rack(9).components) }];
    expect(plan(inventory, {}, excluded).candidateCount).toBe(3);
  });
});

describe("planner: default scope", () => {
  const inventory = [rack(1, ["COMPUTE", "NVSWITCH"]), rack(2, ["POWERSHELF"]), rack(3, ["COMPUTE"])];

  it("without a filter every rack with components is a candidate; racks with none drop out", () => {
    const p = plan([...inventory, rack(4, [])]);
    expect(p.candidateCount).toBe(3);
  });

  it("a type filter keeps only those types", () => {
    const p = plan(inventory, { filter: { kind: "types", types: ["COMPUTE"] } });
    expect(rackIdsOf(p).sort()).toEqual([rackId(1), rackId(3)]);
    expect(componentsOf(p, rackId(1))).toEqual([{ type: "COMPUTE", componentIds: [componentId(1, 0)] }]);
  });

  it("a component filter keeps only those component UUIDs (unknown ones are ignored)", () => {
    const p = plan(inventory, {
      filter: { kind: "components", componentIds: [componentId(1, 1), componentId(7, 7)] },
    });
    expect(p.targets).toEqual([
      {
        rackId: rackId(1),
        sequenceIndex: 0,
        phaseIndex: 0,
        componentsByType: [{ type: "NVSWITCH", componentIds: [componentId(1, 1)] }],
      },
    ]);
  });
});

describe("planner: explicit rack targets", () => {
  const inventory = [rack(1), rack(2), rack(3, ["COMPUTE"], { externalId: undefined })];
  const spec = (...entries: Extract<TargetSpec, { kind: "racks" }>["racks"]): TargetSpec => ({
    kind: "racks",
    racks: entries,
  });

  it.each([
    ["id", { by: "id", id: rackId(2) }],
    ["name", { by: "name", name: "rack-2" }],
    ["external id", { by: "externalId", externalId: "ext-rack-2" }],
  ] as const)("resolves a rack by %s", (_, ref) => {
    expect(rackIdsOf(plan(inventory, { targetSpec: spec({ ref, componentTypes: [] }) }))).toEqual([
      rackId(2),
    ]);
  });

  it("a component type filter narrows the rack's components", () => {
    const p = plan(inventory, {
      targetSpec: spec({ ref: { by: "id", id: rackId(1) }, componentTypes: ["NVSWITCH"] }),
    });
    expect(p.targets[0]?.componentsByType).toEqual([{ type: "NVSWITCH", componentIds: [componentId(1, 1)] }]);
  });

  it.each([
    [{ by: "id", id: rackId(9) }, `rack target 1: rack ${rackId(9)} is not found`],
    [{ by: "name", name: "nope" }, "rack target 1: rack nope is not found"],
    [{ by: "externalId", externalId: "ext-9" }, "rack target 1: rack with external id ext-9 is not found"],
  ] as const)("an unknown rack (%j) is NotFound with its 0-based entry index", (ref, message) => {
    const targetSpec = spec(
      { ref: { by: "id", id: rackId(1) }, componentTypes: [] },
      { ref, componentTypes: [] },
    );
    expect(thrown(() => plan(inventory, { targetSpec }))).toEqual({
      name: "NotFoundError",
      code: "NOT_FOUND",
      message,
    });
  });

  it("a name shared by two racks is InvalidArgument", () => {
    const twins = [rack(1), rack(2, undefined, { name: "rack-1" })];
    const targetSpec = spec({ ref: { by: "name", name: "rack-1" }, componentTypes: [] });
    expect(thrown(() => plan(twins, { targetSpec }))).toEqual({
      name: "InvalidArgumentError",
      code: "INVALID_ARGUMENT",
      message: 'rack target 0: rack name "rack-1" matches multiple racks; use rack id',
    });
  });
});

describe("planner: NVLink domain targets", () => {
  const domainA = { id: "d0000000-0000-4000-8000-00000000000a", name: "domain-a" };
  const domainB = { id: "d0000000-0000-4000-8000-00000000000b", name: "domain-b" };
  const inventory = [
    rack(1, ["COMPUTE", "NVSWITCH"], { nvlDomain: domainA }),
    rack(2, ["COMPUTE", "NVSWITCH"], { nvlDomain: domainA }),
    rack(3, ["COMPUTE", "NVSWITCH"], { nvlDomain: domainB }),
    rack(4, ["COMPUTE"]),
  ];

  it("a domain by id expands to its racks", () => {
    const targetSpec: TargetSpec = {
      kind: "nvlDomains",
      domains: [{ ref: { by: "id", id: domainA.id }, componentTypes: [] }],
    };
    const p = plan(inventory, { targetSpec });
    expect(rackIdsOf(p).sort()).toEqual([rackId(1), rackId(2)]);
  });

  it("a domain by name expands to its racks, with the component type filter", () => {
    const targetSpec: TargetSpec = {
      kind: "nvlDomains",
      domains: [{ ref: { by: "name", name: "domain-b" }, componentTypes: ["NVSWITCH"] }],
    };
    expect(plan(inventory, { targetSpec }).targets).toEqual([
      {
        rackId: rackId(3),
        sequenceIndex: 0,
        phaseIndex: 0,
        componentsByType: [{ type: "NVSWITCH", componentIds: [componentId(3, 1)] }],
      },
    ]);
  });

  it("an unknown domain name is NotFound", () => {
    const targetSpec: TargetSpec = {
      kind: "nvlDomains",
      domains: [
        { ref: { by: "id", id: domainA.id }, componentTypes: [] },
        { ref: { by: "name", name: "domain-z" }, componentTypes: [] },
      ],
    };
    expect(thrown(() => plan(inventory, { targetSpec }))).toEqual({
      name: "NotFoundError",
      code: "NOT_FOUND",
      message: "NVLink domain target 1: nvl domain domain-z is not found",
    });
  });
});

describe("planner: explicit component targets", () => {
  const inventory = [rack(1), rack(2), rack(3, ["COMPUTE"])];

  it("components by id and by external reference group by rack", () => {
    const targetSpec: TargetSpec = {
      kind: "components",
      components: [
        { by: "id", id: componentId(2, 1) },
        { by: "external", type: "COMPUTE", externalId: "ext-3-0" },
        { by: "external", type: "COMPUTE", externalId: "ext-2-0" },
      ],
    };
    const p = plan(inventory, { targetSpec });
    expect(p.candidateCount).toBe(2);
    expect(componentsOf(p, rackId(2))).toEqual([
      { type: "COMPUTE", componentIds: [componentId(2, 0)] },
      { type: "NVSWITCH", componentIds: [componentId(2, 1)] },
    ]);
    expect(componentsOf(p, rackId(3))).toEqual([{ type: "COMPUTE", componentIds: [componentId(3, 0)] }]);
  });

  it.each([
    [
      { by: "id", id: componentId(9, 9) },
      "NotFoundError",
      "NOT_FOUND",
      `component target 0: component ${componentId(9, 9)} is not found`,
    ],
    [
      { by: "external", type: "COMPUTE", externalId: "ext-9" },
      "NotFoundError",
      "NOT_FOUND",
      "component target 0: component external_id=ext-9 not found",
    ],
    [
      { by: "external", type: "COMPUTE", externalId: "ext-1-1" },
      "NotFoundError",
      "NOT_FOUND",
      "component target 0: component external_id=ext-1-1 not found",
    ],
  ] as const)("an unknown component %j is %s", (ref, name, code, message) => {
    expect(thrown(() => plan(inventory, { targetSpec: { kind: "components", components: [ref] } }))).toEqual({
      name,
      code,
      message,
    });
  });

  it("an external reference matching two components is FailedPrecondition", () => {
    const clash = [
      rack(1),
      rack(2, ["COMPUTE"], {
        components: [{ id: componentId(2, 0), type: "COMPUTE", externalId: "ext-1-0" }],
      }),
    ];
    const targetSpec: TargetSpec = {
      kind: "components",
      components: [{ by: "external", type: "COMPUTE", externalId: "ext-1-0" }],
    };
    expect(thrown(() => plan(clash, { targetSpec }))).toEqual({
      name: "FailedPreconditionError",
      code: "FAILED_PRECONDITION",
      message: "component target 0: component external_id=ext-1-0 is ambiguous",
    });
  });
});

describe("planner: phases and target rows", () => {
  it("10 racks in 3 equal phases: sequence 0..9, phases [4, 3, 3] in sequence order", () => {
    const p = plan(racks(10), { phasePlan: { kind: "equal", phaseCount: 3 } });
    expect(p.phaseSizes).toEqual([4, 3, 3]);
    expect(p.targets.map((t) => t.sequenceIndex)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(p.targets.map((t) => t.phaseIndex)).toEqual([0, 0, 0, 0, 1, 1, 1, 2, 2, 2]);
    expect(rackIdsOf(p)).toEqual(
      seededOrder(
        racks(10).map((r) => r.id),
        "ord",
      ),
    );
  });

  it("7 racks at 50/50 → 4 and 3", () => {
    expect(plan(racks(7), { phasePlan: { kind: "percentage", percentages: [50, 50] } }).phaseSizes).toEqual([
      4, 3,
    ]);
  });

  it("10 racks with counts [2, 3] → [2, 3, 5]; 5 racks → [2, 3]", () => {
    expect(plan(racks(10), { phasePlan: { kind: "count", counts: [2, 3] } }).phaseSizes).toEqual([2, 3, 5]);
    expect(plan(racks(5), { phasePlan: { kind: "count", counts: [2, 3] } }).phaseSizes).toEqual([2, 3]);
  });

  it("a zero-target phase is InvalidArgument with the 1-based phase number", () => {
    expect(
      thrown(() => plan(racks(2), { phasePlan: { kind: "percentage", percentages: [25, 25, 50] } })),
    ).toEqual({
      name: "InvalidArgumentError",
      code: "INVALID_ARGUMENT",
      message: "percentage phase 2 resolves to zero targets for 2 selected targets",
    });
  });

  it("zero-target phases are judged on the selection, not the candidates: 10 racks at 10 % in 2 phases", () => {
    expect(
      thrown(() => plan(racks(10), { percentage: 10, phasePlan: { kind: "equal", phaseCount: 2 } })),
    ).toEqual({
      name: "InvalidArgumentError",
      code: "INVALID_ARGUMENT",
      message: "equal phase 2 resolves to zero targets for 1 selected targets",
    });
  });

  it("count phases beyond the selection are InvalidArgument", () => {
    expect(thrown(() => plan(racks(4), { phasePlan: { kind: "count", counts: [2, 3] } }))).toEqual({
      name: "InvalidArgumentError",
      code: "INVALID_ARGUMENT",
      message: "count phase counts exceed selected target count",
    });
  });
});

describe("planner: frozen components", () => {
  it("groups in the reference's type-string order (CDU, Compute, NVSwitch, PowerShelf, ToRSwitch, UMS), ids sorted", () => {
    const id = (n: number) => `e0000000-0000-4000-8000-${hex(n, 12)}`;
    const components: InventoryComponent[] = [
      { id: id(9), type: "UMS" },
      { id: id(5), type: "COMPUTE" },
      { id: id(3), type: "TORSWITCH" },
      { id: id(1), type: "COMPUTE" },
      { id: id(7), type: "POWERSHELF" },
      { id: id(2), type: "NVSWITCH" },
      { id: id(8), type: "CDU" },
      { id: id(5), type: "COMPUTE" },
    ];
    expect(freezeComponents(components)).toEqual([
      { type: "CDU", componentIds: [id(8)] },
      { type: "COMPUTE", componentIds: [id(1), id(5)] },
      { type: "NVSWITCH", componentIds: [id(2)] },
      { type: "POWERSHELF", componentIds: [id(7)] },
      { type: "TORSWITCH", componentIds: [id(3)] },
      { type: "UMS", componentIds: [id(9)] },
    ]);
  });

  it("a planned target's components are sorted by id even when inventory lists them otherwise", () => {
    const r: InventoryRack = {
      id: rackId(1),
      name: "r",
      components: [
        { id: "ffffffff-0000-4000-8000-000000000000", type: "COMPUTE" },
        { id: "00000000-ffff-4000-8000-000000000000", type: "COMPUTE" },
      ],
    };
    expect(plan([r]).targets[0]?.componentsByType).toEqual([
      {
        type: "COMPUTE",
        componentIds: ["00000000-ffff-4000-8000-000000000000", "ffffffff-0000-4000-8000-000000000000"],
      },
    ]);
  });
});
