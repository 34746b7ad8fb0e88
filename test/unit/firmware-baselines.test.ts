/** Firmware baselines: most specific wins, missing coverage named, drift, editing, validation. */
import { describe, expect, it } from "vitest";
import {
  describeBaselineKey,
  type FirmwareBaseline,
  firmwareDrift,
  MAX_BASELINE_TEXT,
  MAX_BASELINES,
  plannedRows,
  removeBaseline,
  resolveBaseline,
  resolveVersions,
  rowVersions,
  sortBaselines,
  uncoveredRule,
  upsertBaselines,
  validateBaselines,
  versionOf,
} from "../../src/domain/firmware-baselines.js";
import type { InventoryComponent, InventoryRack } from "../../src/domain/inventory.js";

const TYPE_ONLY: FirmwareBaseline = { componentType: "COMPUTE", version: "2.0.0" };
const BY_MODEL: FirmwareBaseline = { componentType: "COMPUTE", model: "GB200", version: "2.1.0" };
const BY_VENDOR: FirmwareBaseline = { componentType: "COMPUTE", vendor: "Acme", version: "1.9.0" };
const BY_BOTH: FirmwareBaseline = {
  componentType: "COMPUTE",
  model: "GB200",
  vendor: "Acme",
  version: "2.2.0",
};
const SWITCH: FirmwareBaseline = { componentType: "NVSWITCH", version: "4.0" };

describe("firmware baselines: the most specific baseline wins", () => {
  const cases: [
    string,
    Pick<InventoryComponent, "type" | "model" | "vendor">,
    FirmwareBaseline[],
    string | undefined,
  ][] = [
    ["the type alone", { type: "COMPUTE" }, [TYPE_ONLY, BY_MODEL, BY_VENDOR, BY_BOTH], "2.0.0"],
    ["model beats the type", { type: "COMPUTE", model: "GB200" }, [TYPE_ONLY, BY_MODEL, BY_VENDOR], "2.1.0"],
    ["vendor beats the type", { type: "COMPUTE", vendor: "Acme" }, [TYPE_ONLY, BY_MODEL, BY_VENDOR], "1.9.0"],
    [
      "model beats vendor",
      { type: "COMPUTE", model: "GB200", vendor: "Acme" },
      [BY_VENDOR, BY_MODEL, TYPE_ONLY],
      "2.1.0",
    ],
    [
      "model and vendor beat model",
      { type: "COMPUTE", model: "GB200", vendor: "Acme" },
      [BY_MODEL, BY_BOTH, BY_VENDOR, TYPE_ONLY],
      "2.2.0",
    ],
    [
      "another model falls back to the vendor",
      { type: "COMPUTE", model: "GB300", vendor: "Acme" },
      [TYPE_ONLY, BY_MODEL, BY_VENDOR, BY_BOTH],
      "1.9.0",
    ],
    [
      "another vendor falls back to the model",
      { type: "COMPUTE", model: "GB200", vendor: "Other" },
      [TYPE_ONLY, BY_MODEL, BY_VENDOR, BY_BOTH],
      "2.1.0",
    ],
    [
      "a narrowed baseline never covers a component without that field",
      { type: "COMPUTE" },
      [BY_MODEL, BY_VENDOR],
      undefined,
    ],
    ["matching is exact (case counts)", { type: "COMPUTE", model: "gb200" }, [BY_MODEL], undefined],
    ["another type is not covered", { type: "NVSWITCH", model: "GB200" }, [TYPE_ONLY, BY_MODEL], undefined],
    ["no baselines at all", { type: "CDU" }, [], undefined],
  ];
  it.each(cases)("%s", (_, component, baselines, version) => {
    expect(resolveBaseline(component, baselines)?.version).toBe(version);
  });
});

describe("firmware baselines: resolving components and plans", () => {
  it("groups components by version (versions and ids sorted) and names the uncovered types in enum order", () => {
    const result = resolveVersions(
      [
        { id: "c3", type: "COMPUTE", model: "GB200" },
        { id: "c1", type: "COMPUTE" },
        { id: "u1", type: "CDU" },
        { id: "c2", type: "COMPUTE" },
        { id: "n1", type: "NVSWITCH" },
        { id: "p1", type: "POWERSHELF" },
      ],
      [TYPE_ONLY, BY_MODEL],
    );
    expect(result.versions).toEqual([
      { version: "2.0.0", componentIds: ["c1", "c2"] },
      { version: "2.1.0", componentIds: ["c3"] },
    ]);
    expect(result.uncovered).toEqual(["NVSWITCH", "POWERSHELF", "CDU"]);
    expect(uncoveredRule(result.uncovered)).toBe(
      "target_version is not set and no firmware baseline covers NVSWITCH, POWERSHELF, CDU",
    );
  });

  it("a plan's targets resolve against the racks' components (model, vendor); an unknown id counts by its type", () => {
    const racks: InventoryRack[] = [
      {
        id: "r1",
        name: "r1",
        components: [
          { id: "a", type: "COMPUTE", model: "GB200" },
          { id: "b", type: "NVSWITCH" },
        ],
      },
    ];
    const rows = plannedRows(
      [
        {
          rackId: "r1",
          componentsByType: [
            { type: "COMPUTE", componentIds: ["a"] },
            { type: "NVSWITCH", componentIds: ["b"] },
          ],
        },
        { rackId: "r2", componentsByType: [{ type: "CDU", componentIds: ["gone"] }] },
      ],
      racks,
    );
    const { versions, uncovered } = rowVersions(rows, [TYPE_ONLY, BY_MODEL, SWITCH]);
    expect(versions.get("r1")).toEqual([
      { version: "2.1.0", componentIds: ["a"] },
      { version: "4.0", componentIds: ["b"] },
    ]);
    expect(versions.get("r2")).toEqual([]);
    expect(uncovered).toEqual(["CDU"]);
    expect(versionOf(versions.get("r1") ?? [])).toEqual(
      new Map([
        ["a", "2.1.0"],
        ["b", "4.0"],
      ]),
    );
  });
});

describe("firmware baselines: editing the list", () => {
  it("sorts by type (enum order), then model, then vendor, the unnarrowed first", () => {
    expect(sortBaselines([SWITCH, BY_BOTH, BY_VENDOR, BY_MODEL, TYPE_ONLY])).toEqual([
      TYPE_ONLY,
      BY_VENDOR,
      BY_MODEL,
      BY_BOTH,
      SWITCH,
    ]);
    const a: FirmwareBaseline = { componentType: "COMPUTE", model: "A", version: "1" };
    const b: FirmwareBaseline = { componentType: "COMPUTE", model: "B", version: "1" };
    expect(sortBaselines([b, a, b])).toEqual([a, b, b]);
  });

  it("upsert replaces the baseline of the same key and keeps the others", () => {
    const next = upsertBaselines([TYPE_ONLY, BY_MODEL], [{ ...BY_MODEL, version: "3.0" }, SWITCH]);
    expect(next).toEqual([TYPE_ONLY, { ...BY_MODEL, version: "3.0" }, SWITCH]);
  });

  it("remove takes exactly the baseline of the key and says whether there was one", () => {
    expect(removeBaseline([TYPE_ONLY, BY_MODEL], { componentType: "COMPUTE", model: "GB200" })).toEqual({
      baselines: [TYPE_ONLY],
      removed: true,
    });
    expect(removeBaseline([TYPE_ONLY], { componentType: "COMPUTE", vendor: "Acme" })).toEqual({
      baselines: [TYPE_ONLY],
      removed: false,
    });
  });

  it("describes keys for messages", () => {
    expect(describeBaselineKey(TYPE_ONLY)).toBe("COMPUTE");
    expect(describeBaselineKey(BY_BOTH)).toBe('COMPUTE model "GB200" vendor "Acme"');
    expect(describeBaselineKey(BY_VENDOR)).toBe('COMPUTE vendor "Acme"');
  });
});

describe("firmware baselines: validation reports every problem with its path", () => {
  it("accepts model and vendor as optional ('' = any)", () => {
    expect(
      validateBaselines(
        [
          { componentType: "COMPUTE", model: "", vendor: "", version: "2.0.0" },
          { componentType: "COMPUTE", model: "GB200", vendor: "Acme", version: "2.2.0" },
        ],
        "baselines",
      ),
    ).toEqual({ ok: true, value: [TYPE_ONLY, BY_BOTH] });
  });

  it("every violation at once: type, version, whitespace, length, duplicate keys", () => {
    const long = "x".repeat(MAX_BASELINE_TEXT + 1);
    expect(
      validateBaselines(
        [
          { componentType: "UNKNOWN", model: "", vendor: "", version: "" },
          { componentType: "COMPUTE", model: " GB200", vendor: long, version: "2.0.0" },
          { componentType: "NVSWITCH", model: "", vendor: "", version: "4.0" },
          { componentType: "NVSWITCH", model: "", vendor: "", version: "4.1" },
          { componentType: "CDU", model: "", vendor: "", version: "../COMPUTE/9" },
        ],
        "baselines",
      ),
    ).toEqual({
      ok: false,
      violations: [
        { field: "baselines[0].component_type", rule: "must be a known component type (got UNKNOWN)" },
        { field: "baselines[0].version", rule: "must not be empty" },
        { field: "baselines[1].model", rule: 'must not start or end with whitespace (got " GB200")' },
        {
          field: "baselines[1].vendor",
          rule: `must be at most ${MAX_BASELINE_TEXT} characters (got ${long.length})`,
        },
        { field: "baselines[3]", rule: "duplicate baseline for NVSWITCH (first at baselines[2])" },
        {
          field: "baselines[4].version",
          rule: `must be letters, digits, '.', '_', '+' and '-', starting with a letter or digit (got "../COMPUTE/9")`,
        },
      ],
    });
  });

  it("refuses more than MAX_BASELINES entries", () => {
    const many = Array.from({ length: MAX_BASELINES + 1 }, (_, i) => ({
      componentType: "COMPUTE" as const,
      model: `m${i}`,
      vendor: "",
      version: "1",
    }));
    const result = validateBaselines(many, "baselines");
    expect(result.ok ? [] : result.violations).toEqual([
      { field: "baselines", rule: `must have at most ${MAX_BASELINES} entries (got ${MAX_BASELINES + 1})` },
    ]);
  });
});

describe("firmware baselines: drift", () => {
  it("lists components off their baseline per rack (by type, then id), those without one, and counts the rest", () => {
    const racks: InventoryRack[] = [
      {
        id: "r1",
        name: "rack-1",
        components: [
          { id: "n1", type: "NVSWITCH", firmwareVersion: "3.9" },
          { id: "c2", type: "COMPUTE", firmwareVersion: "2.0.0" },
          { id: "c1", type: "COMPUTE", model: "GB200", vendor: "Acme", firmwareVersion: "2.0.0" },
          { id: "u1", type: "CDU", firmwareVersion: "1" },
        ],
      },
      { id: "r2", name: "rack-2", components: [{ id: "c3", type: "COMPUTE" }] },
    ];
    expect(firmwareDrift(racks, [TYPE_ONLY, BY_MODEL, SWITCH])).toEqual({
      drifted: [
        {
          rackId: "r1",
          rackName: "rack-1",
          componentId: "c1",
          type: "COMPUTE",
          model: "GB200",
          vendor: "Acme",
          current: "2.0.0",
          desired: "2.1.0",
        },
        {
          rackId: "r1",
          rackName: "rack-1",
          componentId: "n1",
          type: "NVSWITCH",
          current: "3.9",
          desired: "4.0",
        },
        { rackId: "r2", rackName: "rack-2", componentId: "c3", type: "COMPUTE", desired: "2.0.0" },
      ],
      uncovered: [{ rackId: "r1", rackName: "rack-1", componentId: "u1", type: "CDU", current: "1" }],
      atBaseline: 1,
    });
  });
});
