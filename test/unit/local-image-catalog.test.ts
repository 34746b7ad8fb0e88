/**
 * The local stack's seeded image catalog (local/image-catalog.ts): every version examples/ names
 * is in EXAMPLE_VERSIONS (so the quick start's runs find their images), every demo fleet version
 * and every type is seeded, the bytes are deterministic, and bucket names are valid S3 names.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEMO_FIRMWARE } from "../../local/demo-fleet.js";
import { EXAMPLE_VERSIONS, localImageBucket, seedBytes, seedVersions } from "../../local/image-catalog.js";
import { COMPONENT_TYPES } from "../../src/domain/model.js";

const EXAMPLES = join(import.meta.dirname, "..", "..", "examples");

describe("the local image catalog's seed", () => {
  it("covers every targetVersion examples/ names", () => {
    const named = new Set<string>();
    for (const file of readdirSync(EXAMPLES)) {
      const text = readFileSync(join(EXAMPLES, file), "utf8");
      for (const m of text.matchAll(/targetVersion"?\s*:\s*"?([^"\s,]+)"?/g)) named.add(m[1]!);
    }
    expect(named.size).toBeGreaterThan(0);
    expect([...named].filter((v) => !(EXAMPLE_VERSIONS as readonly string[]).includes(v))).toEqual([]);
  });

  it("every type at every demo fleet, example and extra version, each once", () => {
    const seeded = seedVersions(["9.9.9", "2.0.0"]);
    for (const type of COMPONENT_TYPES) {
      const versions = seeded.filter((s) => s.componentType === type).map((s) => s.version);
      expect(versions.sort()).toEqual(
        [...new Set([...DEMO_FIRMWARE[type], ...EXAMPLE_VERSIONS, "9.9.9"])].sort(),
      );
    }
  });

  it("deterministic 4 KiB bytes: the package header with the version, then the type and version", () => {
    const bytes = seedBytes("CDU", "2.0.0");
    expect(bytes.length).toBe(4096);
    expect(bytes.toString("utf8", 0, 13)).toBe("FLOWFW 2.0.0\n");
    expect(bytes.toString("utf8", 30, 60)).toBe("flow local firmware CDU 2.0.0\n");
    expect(seedBytes("CDU", "2.0.0").equals(bytes)).toBe(true);
  });

  it("bucket names from table prefixes are S3 names", () => {
    expect(localImageBucket("flow-")).toBe("flow-images");
    expect(localImageBucket("e2e-Policy_1a2b-")).toBe("e2e-policy-1a2b-images");
    expect(localImageBucket(`${"x".repeat(80)}-`)).toHaveLength(63);
  });
});
