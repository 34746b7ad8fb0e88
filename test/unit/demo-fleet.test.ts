import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { generateDemoFleet, rowLabel, seededUuid } from "../../local/demo-fleet.js";
import { parseInventory, serializeInventory } from "../../src/domain/inventory-document.js";
import { isUuid } from "../../src/domain/uuid.js";

const fleet = generateDemoFleet();

describe("demo fleet: shape", () => {
  it("has 120 racks of 39 components (4,680 in all)", () => {
    expect(fleet).toHaveLength(120);
    for (const rack of fleet) expect(rack.components).toHaveLength(39);
  });

  it("every rack is GB200 NVL72-like: 18 compute, 9 NVSwitch, 8 power shelves, 2 ToR, 1 UMS, 1 CDU", () => {
    for (const rack of fleet) {
      const counts: Record<string, number> = {};
      for (const c of rack.components) counts[c.type] = (counts[c.type] ?? 0) + 1;
      expect(counts).toEqual({ COMPUTE: 18, NVSWITCH: 9, POWERSHELF: 8, TORSWITCH: 2, UMS: 1, CDU: 1 });
    }
  });

  it("every rack has an external id, a location, an NVLink domain and firmware on every component", () => {
    for (const rack of fleet) {
      expect(rack.externalId).toMatch(/^EXT-[A-H](0[1-9]|1[0-5])$/);
      expect(rack.location?.datacenter).toBe("dc1");
      expect(rack.nvlDomain?.name).toBe(rack.name.replace("rack-", "nvl-"));
      for (const c of rack.components) expect(c.firmwareVersion).toMatch(/^\d+\.\d+\.\d+$/);
    }
  });

  it("the first and last racks sit at A01 and H15", () => {
    expect(fleet[0]).toMatchObject({
      name: "rack-a01",
      externalId: "EXT-A01",
      location: { row: "A", position: 1 },
    });
    expect(fleet[119]).toMatchObject({
      name: "rack-h15",
      externalId: "EXT-H15",
      location: { row: "H", position: 15 },
    });
  });

  it("rows hold 15 racks each, rows A to H", () => {
    const perRow: Record<string, number> = {};
    for (const rack of fleet) perRow[rack.location!.row] = (perRow[rack.location!.row] ?? 0) + 1;
    expect(perRow).toEqual({ A: 15, B: 15, C: 15, D: 15, E: 15, F: 15, G: 15, H: 15 });
  });

  it("ids are unique UUIDs across racks, domains and components", () => {
    const ids = [
      ...fleet.map((r) => r.id),
      ...fleet.map((r) => r.nvlDomain!.id),
      ...fleet.flatMap((r) => r.components.map((c) => c.id)),
    ];
    expect(ids).toHaveLength(120 * 2 + 4680);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(isUuid(id)).toBe(true);
  });

  it("names, external ids and component serials are unique", () => {
    expect(new Set(fleet.map((r) => r.name)).size).toBe(120);
    expect(new Set(fleet.map((r) => r.externalId)).size).toBe(120);
    expect(new Set(fleet.flatMap((r) => r.components.map((c) => c.externalId))).size).toBe(4680);
  });

  it("both the current and the previous firmware occur (about 1 in 8 behind)", () => {
    const compute = fleet.flatMap((r) => r.components.filter((c) => c.type === "COMPUTE"));
    const behind = compute.filter((c) => c.firmwareVersion === "1.1.4").length;
    expect(compute.filter((c) => c.firmwareVersion === "1.2.0").length + behind).toBe(compute.length);
    expect(behind).toBeGreaterThan(compute.length / 16);
    expect(behind).toBeLessThan(compute.length / 4);
  });

  it("passes the inventory file's own validation", () => {
    expect(parseInventory(serializeInventory(fleet), "demo.json")).toEqual(fleet);
  });
});

describe("demo fleet: determinism", () => {
  it("the same seed gives the same fleet; another seed gives disjoint ids", () => {
    expect(generateDemoFleet()).toEqual(fleet);
    const other = generateDemoFleet({ seed: "other" });
    const ids = new Set(fleet.map((r) => r.id));
    expect(other.some((r) => ids.has(r.id))).toBe(false);
    expect(other.map((r) => r.name)).toEqual(fleet.map((r) => r.name));
  });

  it("the rack count is configurable, and rows continue past Z as AA", () => {
    expect(generateDemoFleet({ racks: 0 })).toEqual([]);
    const big = generateDemoFleet({ racks: 27 * 15 });
    expect(big.at(-1)?.name).toBe("rack-aa15");
    expect(() => generateDemoFleet({ racks: -1 })).toThrow("racks must be a non-negative integer (got -1)");
  });

  it("rowLabel counts like spreadsheet columns", () => {
    expect([0, 1, 25, 26, 27, 51, 52, 701, 702].map(rowLabel)).toEqual([
      "A",
      "B",
      "Z",
      "AA",
      "AB",
      "AZ",
      "BA",
      "ZZ",
      "AAA",
    ]);
  });
});

describe("demo fleet: seededUuid", () => {
  it("is an RFC 9562 version-8 UUID with the RFC variant", () => {
    const id = seededUuid("flow-demo", "rack:A01");
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("is sha256(seed:name) with the version and variant bits set", () => {
    const hex = createHash("sha256").update("s:n").digest("hex");
    const id = seededUuid("s", "n").replaceAll("-", "");
    expect(id.slice(0, 12)).toBe(hex.slice(0, 12));
    expect(id[12]).toBe("8");
    expect(id.slice(13, 16)).toBe(hex.slice(13, 16));
    expect(id.slice(18)).toBe(hex.slice(18, 32));
  });
});
