import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  behaviourFor,
  defaultFleetConfig,
  FleetFileError,
  loadFleetFile,
  parseFleet,
} from "../../local/fleet-file.js";

const RACK = "4f6f1a9e-0000-4000-8000-000000000001";
const OTHER_RACK = "4f6f1a9e-0000-4000-8000-000000000002";
const COMP = "4f6f1a9e-0000-4000-8000-0000000000c1";
const OTHER_COMP = "4f6f1a9e-0000-4000-8000-0000000000c2";

function errorOf(doc: unknown): string {
  try {
    parseFleet(typeof doc === "string" ? doc : JSON.stringify(doc), "fleet.json");
    return "no error";
  } catch (err) {
    expect(err).toBeInstanceOf(FleetFileError);
    expect((err as Error).name).toBe("FleetFileError");
    return (err as Error).message;
  }
}

describe("fleet file: parsing", () => {
  it("parses the example from local-stack.md", () => {
    const config = parseFleet(
      JSON.stringify({
        defaults: { updateMs: 500, outcome: "succeed" },
        racks: { [RACK]: { outcome: "fail" } },
        components: { [COMP]: { outcome: "hang", updateMs: 2000 } },
      }),
      "fleet.json",
    );
    expect(config).toEqual({
      defaults: { updateMs: 500, outcome: "succeed" },
      racks: { [RACK]: { outcome: "fail" } },
      components: { [COMP]: { outcome: "hang", updateMs: 2000 } },
    });
  });

  it("{} is the default fleet: every BMC succeeds after 500 ms", () => {
    expect(parseFleet("{}", "fleet.json")).toEqual(defaultFleetConfig());
    expect(defaultFleetConfig()).toEqual({
      defaults: { outcome: "succeed", updateMs: 500 },
      racks: {},
      components: {},
    });
  });

  it("partial defaults keep the other default field", () => {
    expect(parseFleet('{"defaults":{"updateMs":20}}', "f").defaults).toEqual({
      outcome: "succeed",
      updateMs: 20,
    });
  });

  it("accepts every outcome", () => {
    for (const outcome of ["succeed", "fail", "hang", "disconnect", "wrong-version", "not-ready"]) {
      expect(parseFleet(JSON.stringify({ defaults: { outcome } }), "f").defaults.outcome).toBe(outcome);
    }
  });

  it("stores ids lowercase", () => {
    const config = parseFleet(JSON.stringify({ racks: { [RACK.toUpperCase()]: { updateMs: 1 } } }), "f");
    expect(Object.keys(config.racks)).toEqual([RACK]);
  });
});

describe("fleet file: activation, field by field like the rest", () => {
  const config = parseFleet(
    JSON.stringify({
      defaults: { activation: "type" },
      racks: { [RACK]: { activation: "ac", resetMs: 40 } },
      components: { [COMP]: { activation: "immediate" } },
    }),
    "fleet.json",
  );
  it.each([
    ["the component's own", RACK, COMP, { activation: "immediate", resetMs: 40 }],
    ["the rack's", RACK, OTHER_COMP, { activation: "ac", resetMs: 40 }],
    ["the defaults'", OTHER_RACK, OTHER_COMP, { activation: "type" }],
  ])("%s", (_name, rackId, componentId, expected) => {
    expect(behaviourFor(config, rackId, componentId)).toEqual({
      outcome: "succeed",
      updateMs: 500,
      ...expected,
    });
  });
});

describe("fleet file: the most specific entry wins, field by field", () => {
  const config = parseFleet(
    JSON.stringify({
      defaults: { updateMs: 500, outcome: "succeed" },
      racks: { [RACK]: { outcome: "fail" } },
      components: { [COMP]: { outcome: "hang", updateMs: 2000 }, [OTHER_COMP]: { updateMs: 50 } },
    }),
    "fleet.json",
  );

  it.each([
    ["component entry over rack and defaults", RACK, COMP, { outcome: "hang", updateMs: 2000 }],
    ["component updateMs, rack outcome", RACK, OTHER_COMP, { outcome: "fail", updateMs: 50 }],
    [
      "rack outcome, default updateMs",
      RACK,
      "4f6f1a9e-0000-4000-8000-0000000000c9",
      { outcome: "fail", updateMs: 500 },
    ],
    [
      "defaults only",
      OTHER_RACK,
      "4f6f1a9e-0000-4000-8000-0000000000c9",
      { outcome: "succeed", updateMs: 500 },
    ],
    ["component entry applies in any rack", OTHER_RACK, COMP, { outcome: "hang", updateMs: 2000 }],
  ])("%s", (_name, rackId, componentId, expected) => {
    expect(behaviourFor(config, rackId, componentId)).toEqual(expected);
  });

  it("lookups ignore case", () => {
    expect(behaviourFor(config, RACK.toUpperCase(), COMP.toUpperCase())).toEqual({
      outcome: "hang",
      updateMs: 2000,
    });
  });
});

describe("fleet file: errors name the file, the JSON path and the rule", () => {
  const outcomes = "succeed, fail, hang, disconnect, wrong-version, not-ready";
  it.each([
    ["not JSON", "{", "fleet.json: (root): is not valid JSON ("],
    ["an array", [], "fleet.json: (root): must be an object (got array)"],
    [
      "unknown top-level field",
      { default: {} },
      "fleet.json: default: unknown field (allowed: defaults, racks, components)",
    ],
    ["defaults not an object", { defaults: "fast" }, "fleet.json: defaults: must be an object (got string)"],
    [
      "unknown outcome",
      { defaults: { outcome: "explode" } },
      `fleet.json: defaults.outcome: must be one of ${outcomes} (got "explode")`,
    ],
    [
      "outcome a number",
      { defaults: { outcome: 1 } },
      `fleet.json: defaults.outcome: must be one of ${outcomes} (got 1)`,
    ],
    [
      "updateMs negative",
      { defaults: { updateMs: -5 } },
      "fleet.json: defaults.updateMs: must be a non-negative integer (got -5)",
    ],
    [
      "updateMs fractional",
      { defaults: { updateMs: 1.5 } },
      "fleet.json: defaults.updateMs: must be a non-negative integer (got 1.5)",
    ],
    [
      "updateMs as text",
      { defaults: { updateMs: "2s" } },
      "fleet.json: defaults.updateMs: must be a number (got string)",
    ],
    [
      "updateMs over a day",
      { defaults: { updateMs: 86_400_001 } },
      "fleet.json: defaults.updateMs: must be at most 86400000 (one day; got 86400001)",
    ],
    [
      "behaviour field typo",
      { defaults: { outcomes: "fail" } },
      "fleet.json: defaults.outcomes: unknown field (allowed: outcome, updateMs, activation, resetMs, unhealthyAfterFlash)",
    ],
    [
      "an unknown activation",
      { defaults: { activation: "reboot" } },
      'fleet.json: defaults.activation: must be one of immediate, bmc, host, ac, type (got "reboot")',
    ],
    [
      "resetMs over a day",
      { racks: { [RACK]: { resetMs: 86_400_001 } } },
      `fleet.json: racks["${RACK}"].resetMs: must be at most 86400000 (one day; got 86400001)`,
    ],
    ["racks an array", { racks: [] }, "fleet.json: racks: must be an object (got array)"],
    [
      "rack key not a UUID",
      { racks: { "rack-a01": { outcome: "fail" } } },
      'fleet.json: racks["rack-a01"]: key must be a rack id (a UUID)',
    ],
    [
      "component key not a UUID",
      { components: { "SN-1": { outcome: "fail" } } },
      'fleet.json: components["SN-1"]: key must be a component id (a UUID)',
    ],
    [
      "rack entry with a bad outcome",
      { racks: { [RACK]: { outcome: "FAIL" } } },
      `fleet.json: racks["${RACK}"].outcome: must be one of ${outcomes} (got "FAIL")`,
    ],
    [
      "component entry not an object",
      { components: { [COMP]: "hang" } },
      `fleet.json: components["${COMP}"]: must be an object (got string)`,
    ],
    [
      "two keys for one id in different case",
      { components: { [COMP]: { outcome: "hang" }, [COMP.toUpperCase()]: { outcome: "fail" } } },
      `fleet.json: components["${COMP.toUpperCase()}"]: duplicate entry: the id differs from another one only in case`,
    ],
  ])("%s", (_name, doc, expected) => {
    expect(errorOf(doc)).toContain(expected);
  });

  it("loadFleetFile names the file on disk", async () => {
    const dir = await mkdtemp(join(tmpdir(), "fleet-"));
    try {
      const file = join(dir, "fleet.json");
      await writeFile(file, JSON.stringify({ defaults: { outcome: "boom" } }));
      await expect(loadFleetFile(file)).rejects.toThrow(`${file}: defaults.outcome: must be one of`);
      await writeFile(file, JSON.stringify({ defaults: { outcome: "hang" } }));
      expect((await loadFleetFile(file)).defaults).toEqual({ outcome: "hang", updateMs: 500 });
      await expect(loadFleetFile(join(dir, "nope.json"))).rejects.toThrow("(root): cannot be read (ENOENT");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
