import { describe, expect, it } from "vitest";
import { unreadable } from "../../src/domain/input-file.js";
import {
  InventoryFileError,
  parseInventory,
  parseInventoryDocument,
  serializeInventory,
} from "../../src/domain/inventory-document.js";

const RACK_A = "4f6f1a9e-0000-4000-8000-000000000001";
const RACK_B = "4f6f1a9e-0000-4000-8000-000000000002";
const DOMAIN = "4f6f1a9e-0000-4000-8000-0000000000d1";
const COMP_1 = "4f6f1a9e-0000-4000-8000-0000000000c1";
const COMP_2 = "4f6f1a9e-0000-4000-8000-0000000000c2";

function rack(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: RACK_A,
    name: "rack-a01",
    externalId: "EXT-A01",
    nvlDomain: { id: DOMAIN, name: "nvl-01" },
    location: { datacenter: "dc1", row: "A", position: 1 },
    components: [{ id: COMP_1, type: "COMPUTE", externalId: "SN-123", firmwareVersion: "1.2.0" }],
    ...overrides,
  };
}

/** The error message parseInventory throws for `doc`, or "no error". */
function errorOf(doc: unknown, file = "inventory.json"): string {
  try {
    parseInventory(typeof doc === "string" ? doc : JSON.stringify(doc), file);
    return "no error";
  } catch (err) {
    expect(err).toBeInstanceOf(InventoryFileError);
    expect((err as Error).name).toBe("InventoryFileError");
    return (err as Error).message;
  }
}

describe("inventory file: valid input", () => {
  it("parses the example from local-stack.md", () => {
    const racks = parseInventory(JSON.stringify({ racks: [rack()] }), "inventory.json");
    expect(racks).toEqual([
      {
        id: RACK_A,
        name: "rack-a01",
        externalId: "EXT-A01",
        nvlDomain: { id: DOMAIN, name: "nvl-01" },
        location: { datacenter: "dc1", row: "A", position: 1 },
        components: [{ id: COMP_1, type: "COMPUTE", externalId: "SN-123", firmwareVersion: "1.2.0" }],
      },
    ]);
  });

  it("optional fields may be absent, and stay absent (no undefined keys)", () => {
    const racks = parseInventory(
      JSON.stringify({ racks: [{ id: RACK_A, name: "r", components: [{ id: COMP_1, type: "CDU" }] }] }),
      "f.json",
    );
    expect(racks).toEqual([{ id: RACK_A, name: "r", components: [{ id: COMP_1, type: "CDU" }] }]);
    expect(Object.keys(racks[0]!)).toEqual(["id", "name", "components"]);
  });

  it("accepts every component type name", () => {
    const types = ["COMPUTE", "NVSWITCH", "POWERSHELF", "TORSWITCH", "UMS", "CDU"];
    const components = types.map((type, i) => ({ id: `4f6f1a9e-0000-4000-8000-00000000010${i}`, type }));
    const racks = parseInventory(JSON.stringify({ racks: [rack({ components })] }), "f.json");
    expect(racks[0]!.components.map((c) => c.type)).toEqual(types);
  });

  it("normalizes upper-case UUIDs to lowercase", () => {
    const racks = parseInventory(JSON.stringify({ racks: [rack({ id: RACK_A.toUpperCase() })] }), "f.json");
    expect(racks[0]!.id).toBe(RACK_A);
  });

  it("an empty racks list is a valid (empty) inventory", () => {
    expect(parseInventory('{"racks":[]}', "f.json")).toEqual([]);
  });

  it("serializeInventory output parses back to the same racks", () => {
    const racks = parseInventory(JSON.stringify({ racks: [rack()] }), "f.json");
    expect(parseInventory(serializeInventory(racks), "f.json")).toEqual(racks);
  });
});

describe("inventory file: firmware policy (model, vendor, baselines)", () => {
  it("components may carry a model and a vendor; the file may carry baselines, and both round-trip", () => {
    const doc = {
      racks: [rack({ components: [{ id: COMP_1, type: "COMPUTE", model: "GB200", vendor: "Acme" }] })],
      baselines: [
        { componentType: "COMPUTE", version: "2.0.0" },
        { componentType: "COMPUTE", model: "GB200", vendor: "Acme", version: "2.1.0" },
      ],
    };
    const parsed = parseInventoryDocument(JSON.stringify(doc), "f.json");
    expect(parsed.racks[0]!.components).toEqual([
      { id: COMP_1, type: "COMPUTE", model: "GB200", vendor: "Acme" },
    ]);
    expect(parsed.baselines).toEqual(doc.baselines);
    expect(parseInventoryDocument(serializeInventory(parsed.racks, parsed.baselines), "f.json")).toEqual(
      parsed,
    );
    // Readiness: READY is the default and is stored as nothing; the others keep their reason.
    const ready = parseInventoryDocument(
      JSON.stringify({
        racks: [
          rack({
            components: [
              { id: COMP_1, type: "CDU", readiness: { state: "READY" } },
              { id: COMP_2, type: "CDU", readiness: { state: "NOT_READY", reason: "burn-in" } },
            ],
          }),
        ],
      }),
      "f.json",
    );
    expect(ready.racks[0]!.components).toEqual([
      { id: COMP_1, type: "CDU" },
      { id: COMP_2, type: "CDU", readiness: { state: "NOT_READY", reason: "burn-in" } },
    ]);
    // A file without baselines is the old format, unchanged.
    expect(parseInventoryDocument(JSON.stringify({ racks: [] }), "f.json").baselines).toEqual([]);
    expect(serializeInventory([])).toBe('{\n  "racks": []\n}\n');
  });

  const cases: [string, unknown, string][] = [
    [
      "baselines not a list",
      { racks: [], baselines: {} },
      "inventory.json: baselines: must be an array (got object)",
    ],
    [
      "a baseline not an object",
      { racks: [], baselines: [1] },
      "inventory.json: baselines[0]: must be an object (got number)",
    ],
    [
      "a baseline's unknown type and missing version",
      { racks: [], baselines: [{ componentType: "GPU" }] },
      `inventory.json: baselines[0].componentType: must be one of COMPUTE, NVSWITCH, POWERSHELF, TORSWITCH, UMS, CDU (got "GPU")\ninventory.json: baselines[0].version: missing required field`,
    ],
    [
      "a baseline's empty model and vendor",
      { racks: [], baselines: [{ componentType: "CDU", model: "", vendor: " v", version: "1" }] },
      'inventory.json: baselines[0].model: must not be empty\ninventory.json: baselines[0].vendor: must not start or end with whitespace (got " v")',
    ],
    [
      "two baselines of one key",
      {
        racks: [],
        baselines: [
          { componentType: "CDU", version: "1" },
          { componentType: "CDU", version: "2" },
        ],
      },
      "inventory.json: baselines[1]: duplicate baseline for CDU (first at baselines[0])",
    ],
    [
      "an unknown baseline field",
      { racks: [], baselines: [{ componentType: "CDU", version: "1", type: "CDU" }] },
      "inventory.json: baselines[0].type: unknown field (allowed: componentType, model, vendor, version)",
    ],
    [
      "a baseline version too long (the domain's rule, the file's path)",
      { racks: [], baselines: [{ componentType: "CDU", version: "v".repeat(129) }] },
      "inventory.json: baselines[0].version: must be at most 128 characters (got 129)",
    ],
    [
      "a readiness without a reason, and one of an unknown state",
      {
        racks: [
          rack({
            components: [
              { id: COMP_1, type: "CDU", readiness: { state: "MAINTENANCE" } },
              { id: COMP_2, type: "CDU", readiness: { state: "BROKEN", reason: "x" } },
            ],
          }),
        ],
      },
      'inventory.json: racks[0].components[0].readiness.reason: a MAINTENANCE component needs a reason\ninventory.json: racks[0].components[1].readiness.state: must be one of READY, NOT_READY, MAINTENANCE (got "BROKEN")',
    ],
    [
      "a readiness field typo",
      {
        racks: [rack({ components: [{ id: COMP_1, type: "CDU", readiness: { state: "READY", why: "x" } }] })],
      },
      "inventory.json: racks[0].components[0].readiness.why: unknown field (allowed: state, reason)",
    ],
    [
      "an empty component model",
      { racks: [rack({ components: [{ id: COMP_1, type: "CDU", model: "" }] })] },
      "inventory.json: racks[0].components[0].model: must not be empty",
    ],
  ];
  it.each(cases)("%s", (_, doc, message) => {
    expect(errorOf(doc)).toBe(message);
  });
});

describe("inventory file: errors name the file, the JSON path and the rule", () => {
  const typeList = "COMPUTE, NVSWITCH, POWERSHELF, TORSWITCH, UMS, CDU";
  const cases: [string, unknown, string][] = [
    ["not JSON", "{racks:", "inventory.json: (root): is not valid JSON ("],
    ["a JSON array", [], "inventory.json: (root): must be an object (got array)"],
    ["no racks", {}, "inventory.json: racks: missing required field"],
    ["racks an object", { racks: {} }, "inventory.json: racks: must be an array (got object)"],
    ["racks null", { racks: null }, "inventory.json: racks: must be an array (got null)"],
    [
      "unknown top-level field",
      { racks: [], rack: [] },
      "inventory.json: rack: unknown field (allowed: racks, baselines)",
    ],
    ["rack not an object", { racks: [5] }, "inventory.json: racks[0]: must be an object (got number)"],
    [
      "rack id missing",
      { racks: [rack({ id: undefined })] },
      "inventory.json: racks[0].id: missing required field",
    ],
    [
      "rack id not a UUID",
      { racks: [rack({ id: "rack-1" })] },
      'inventory.json: racks[0].id: must be a UUID like 4f6f1a9e-0000-4000-8000-000000000001 (got "rack-1")',
    ],
    [
      "rack id nil",
      { racks: [rack({ id: "00000000-0000-0000-0000-000000000000" })] },
      "inventory.json: racks[0].id: must not be the nil UUID",
    ],
    ["rack name empty", { racks: [rack({ name: "" })] }, "inventory.json: racks[0].name: must not be empty"],
    [
      "rack name padded",
      { racks: [rack({ name: " r " })] },
      'inventory.json: racks[0].name: must not start or end with whitespace (got " r ")',
    ],
    [
      "externalId a number",
      { racks: [rack({ externalId: 7 })] },
      "inventory.json: racks[0].externalId: must be a string (got number)",
    ],
    [
      "nvlDomain without name",
      { racks: [rack({ nvlDomain: { id: DOMAIN } })] },
      "inventory.json: racks[0].nvlDomain.name: missing required field",
    ],
    [
      "location position negative",
      { racks: [rack({ location: { datacenter: "dc1", row: "A", position: -1 } })] },
      "inventory.json: racks[0].location.position: must be a non-negative integer (got -1)",
    ],
    [
      "location position a string",
      { racks: [rack({ location: { datacenter: "dc1", row: "A", position: "1" } })] },
      "inventory.json: racks[0].location.position: must be a number (got string)",
    ],
    [
      "location typo",
      { racks: [rack({ location: { datacenter: "dc1", row: "A", positon: 1 } })] },
      "inventory.json: racks[0].location.positon: unknown field (allowed: datacenter, row, position)",
    ],
    [
      "components missing",
      { racks: [rack({ components: undefined })] },
      "inventory.json: racks[0].components: missing required field",
    ],
    [
      "component not an object",
      { racks: [rack({ components: ["SN-123"] })] },
      "inventory.json: racks[0].components[0]: must be an object (got string)",
    ],
    [
      "component type missing",
      { racks: [rack({ components: [{ id: COMP_1 }] })] },
      "inventory.json: racks[0].components[0].type: missing required field",
    ],
    [
      "component type unknown",
      {
        racks: [
          rack(),
          rack({ id: RACK_B, name: "b", externalId: "EXT-B", components: [{ id: COMP_2, type: "GPU" }] }),
        ],
      },
      `inventory.json: racks[1].components[0].type: must be one of ${typeList} (got "GPU")`,
    ],
    [
      "component type with prefix",
      { racks: [rack({ components: [{ id: COMP_1, type: "COMPONENT_TYPE_COMPUTE" }] })] },
      `inventory.json: racks[0].components[0].type: must be one of ${typeList} (got "COMPONENT_TYPE_COMPUTE")`,
    ],
    [
      "component field typo",
      { racks: [rack({ components: [{ id: COMP_1, type: "UMS", firmwareVerison: "1" }] })] },
      "inventory.json: racks[0].components[0].firmwareVerison: unknown field (allowed: id, type, externalId, firmwareVersion, model, vendor, readiness)",
    ],
    [
      "firmwareVersion empty",
      { racks: [rack({ components: [{ id: COMP_1, type: "UMS", firmwareVersion: "" }] })] },
      "inventory.json: racks[0].components[0].firmwareVersion: must not be empty",
    ],
    [
      "duplicate rack id",
      { racks: [rack(), rack({ name: "other", externalId: "EXT-B" })] },
      `inventory.json: racks[1].id: duplicate rack id "${RACK_A}" (first at racks[0].id)`,
    ],
    [
      "duplicate rack name",
      { racks: [rack(), rack({ id: RACK_B, externalId: "EXT-B", components: [] })] },
      'inventory.json: racks[1].name: duplicate rack name "rack-a01" (first at racks[0].name)',
    ],
    [
      "duplicate rack externalId",
      { racks: [rack(), rack({ id: RACK_B, name: "b", components: [] })] },
      'inventory.json: racks[1].externalId: duplicate rack externalId "EXT-A01" (first at racks[0].externalId)',
    ],
    [
      "duplicate component id across racks",
      {
        racks: [
          rack(),
          rack({ id: RACK_B, name: "b", externalId: "EXT-B", components: [{ id: COMP_1, type: "UMS" }] }),
        ],
      },
      `inventory.json: racks[1].components[0].id: duplicate component id "${COMP_1}" (first at racks[0].components[0].id)`,
    ],
    [
      "duplicate (type, externalId)",
      {
        racks: [
          rack({
            components: [
              { id: COMP_1, type: "COMPUTE", externalId: "SN-1" },
              { id: COMP_2, type: "COMPUTE", externalId: "SN-1" },
            ],
          }),
        ],
      },
      'inventory.json: racks[0].components[1].externalId: duplicate COMPUTE externalId "SN-1" (first at racks[0].components[0].externalId)',
    ],
    [
      "one domain id with two names",
      {
        racks: [
          rack(),
          rack({
            id: RACK_B,
            name: "b",
            externalId: "EXT-B",
            components: [],
            nvlDomain: { id: DOMAIN, name: "nvl-02" },
          }),
        ],
      },
      'inventory.json: racks[1].nvlDomain.name: domain 4f6f1a9e-0000-4000-8000-0000000000d1 is named "nvl-01" at racks[0].nvlDomain',
    ],
    [
      "one domain name with two ids",
      {
        racks: [
          rack(),
          rack({
            id: RACK_B,
            name: "b",
            externalId: "EXT-B",
            components: [],
            nvlDomain: { id: RACK_B, name: "nvl-01" },
          }),
        ],
      },
      `inventory.json: racks[1].nvlDomain.id: domain name "nvl-01" has id ${DOMAIN} at racks[0].nvlDomain`,
    ],
  ];

  it.each(cases)("%s", (_name, doc, expected) => {
    expect(errorOf(doc)).toContain(expected);
  });

  it("the same component type is allowed to reuse another type's externalId", () => {
    const components = [
      { id: COMP_1, type: "COMPUTE", externalId: "SN-1" },
      { id: COMP_2, type: "NVSWITCH", externalId: "SN-1" },
    ];
    expect(errorOf({ racks: [rack({ components })] })).toBe("no error");
  });

  it("lists every problem, one per line, and stops listing after 20", () => {
    const message = errorOf({ racks: [rack({ id: "x", name: 3 })] });
    expect(message.split("\n")).toEqual([
      'inventory.json: racks[0].id: must be a UUID like 4f6f1a9e-0000-4000-8000-000000000001 (got "x")',
      "inventory.json: racks[0].name: must be a string (got number)",
    ]);
    const many = errorOf({ racks: Array.from({ length: 25 }, () => 0) });
    const lines = many.split("\n");
    expect(lines).toHaveLength(21);
    expect(lines[20]).toBe("inventory.json: … and 5 more problems");
  });

  it("the error carries the file and the problems as data", () => {
    try {
      parseInventory('{"racks":[{}]}', "/etc/flow/inv.json");
      expect.unreachable();
    } catch (err) {
      const e = err as InventoryFileError;
      expect(e.file).toBe("/etc/flow/inv.json");
      expect(e.problems).toEqual([
        { path: "racks[0].id", rule: "missing required field" },
        { path: "racks[0].name", rule: "missing required field" },
        { path: "racks[0].components", rule: "missing required field" },
      ]);
    }
  });
});

describe("inventory file: a file that cannot be read", () => {
  it("is one problem at the root, with what reading it threw", () => {
    const error = new InventoryFileError("/no/such.json", [
      unreadable(new Error("ENOENT: no such file or directory, open '/no/such.json'")),
    ]);
    expect(error.message).toBe(
      "/no/such.json: (root): cannot be read (ENOENT: no such file or directory, open '/no/such.json')",
    );
  });
});
