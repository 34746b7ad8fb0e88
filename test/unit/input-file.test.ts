import { describe, expect, it } from "vitest";
import { Checker } from "../../src/domain/input-file.js";

// The inventory document's tests read every rule through a real file; these cover what only other
// files (the fleet file's id-keyed maps) use.
describe("Checker.object", () => {
  it("without a field list, any keys are allowed", () => {
    const c = new Checker();
    expect(c.object({ "4f6f1a9e-0000-4000-8000-000000000001": {} }, "racks")).toEqual({
      "4f6f1a9e-0000-4000-8000-000000000001": {},
    });
    expect(c.problems).toEqual([]);
  });

  it("with one, an unknown key is a problem at its path", () => {
    const c = new Checker();
    c.object({ a: 1, b: 2 }, "defaults", ["a"]);
    expect(c.problems).toEqual([{ path: "defaults.b", rule: "unknown field (allowed: a)" }]);
  });
});
