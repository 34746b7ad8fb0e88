/** The order `npm test` starts its files in: the known-slow files first, within their group. */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SLOW_FILES } from "../../vitest.config.js";
import { orderLongestFirst } from "../support/longest-first-sequencer.js";

const ROOT = join(import.meta.dirname, "..", "..");

describe("orderLongestFirst", () => {
  it("starts the listed files first in the list's order, across projects, each group before the next; the rest keep their order", () => {
    const given = [
      { groupOrder: 0, path: "test/unit/a.test.ts" },
      { groupOrder: 0, path: "test/unit/b.test.ts" },
      { groupOrder: 1, path: "test/deploy/rehearsal.test.ts" },
      { groupOrder: 1, path: "test/e2e/big.test.ts" },
      { groupOrder: 1, path: "test/e2e/restart.test.ts" },
      { groupOrder: 1, path: "test/e2e/small.test.ts" },
      { groupOrder: 1, path: "test/integration/x.test.ts" },
      { groupOrder: 1, path: "test/integration/slow.test.ts" },
    ];
    const slowest = [
      "test/e2e/restart.test.ts",
      "test/integration/slow.test.ts",
      "test/unit/b.test.ts",
      "test/deploy/rehearsal.test.ts",
      "test/e2e/gone.test.ts",
    ];
    expect(orderLongestFirst(given, slowest).map((f) => `${f.groupOrder} ${f.path}`)).toEqual([
      "0 test/unit/b.test.ts",
      "0 test/unit/a.test.ts",
      "1 test/e2e/restart.test.ts",
      "1 test/integration/slow.test.ts",
      "1 test/deploy/rehearsal.test.ts",
      "1 test/e2e/big.test.ts",
      "1 test/e2e/small.test.ts",
      "1 test/integration/x.test.ts",
    ]);
  });

  it("with no list, vitest's order stands", () => {
    const given = [
      { groupOrder: 1, path: "test/e2e/z.test.ts" },
      { groupOrder: 1, path: "test/e2e/a.test.ts" },
    ];
    expect(orderLongestFirst(given, [])).toEqual(given);
  });
});

describe("SLOW_FILES (vitest.config.ts)", () => {
  it("names only test files that exist, each once", () => {
    expect(SLOW_FILES.filter((f) => !existsSync(join(ROOT, f)))).toEqual([]);
    expect(new Set(SLOW_FILES).size).toBe(SLOW_FILES.length);
  });
});
