/**
 * The planner's selection (src/domain/planner.ts): the seeded hash order, golden selections, the
 * selection size ceil(n * pct / 100), the candidate limit and the empty plan.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { rankKey, seededOrder } from "../../src/domain/hash.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { ComponentType, TargetSpec } from "../../src/domain/model.js";
import { CANDIDATE_TARGET_LIMIT, freezeComponents } from "../../src/domain/planner.js";
import { plan, rack, rackId, rackIdsOf, racks, thrown } from "../support/planner-cases.js";

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

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
