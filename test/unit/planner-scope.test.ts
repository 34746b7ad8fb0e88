/**
 * The planner's target scope (src/domain/planner.ts): the default scope, explicit racks, NVLink
 * domains and components, exclusions, and the merge of rows for the same rack.
 */
import { describe, expect, it } from "vitest";
import type { InventoryComponent } from "../../src/domain/inventory.js";
import type { TargetSpec } from "../../src/domain/model.js";
import { freezeComponents, mergeRows, type planRun } from "../../src/domain/planner.js";
import { componentId, plan, rack, rackId, rackIdsOf, racks, thrown } from "../support/planner-cases.js";

const componentsOf = (p: ReturnType<typeof planRun>, id: string) =>
  p.targets.find((t) => t.rackId === id)?.componentsByType;

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
