/**
 * The planner's phases and target rows (src/domain/planner.ts), and the components it freezes.
 */
import { describe, expect, it } from "vitest";
import { seededOrder } from "../../src/domain/hash.js";
import type { InventoryComponent, InventoryRack } from "../../src/domain/inventory.js";
import { freezeComponents } from "../../src/domain/planner.js";
import { hex, plan, rackId, rackIdsOf, racks, thrown } from "../support/planner-cases.js";

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
