/** docs/security.md shows the permission table of src/domain/permissions.ts, row for row. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { permissionTableRows } from "../../src/domain/permissions.js";

const doc = readFileSync(new URL("../../docs/security.md", import.meta.url), "utf8");

describe("docs/security.md", () => {
  it("its permission table is the code's, every RPC in order", () => {
    const start = doc.indexOf("<!-- permission-table:start -->\n");
    const end = doc.indexOf("<!-- permission-table:end -->");
    expect(start).toBeGreaterThan(0);
    const rows = doc
      .slice(start, end)
      .split("\n")
      .filter((line) => line.startsWith("| `"));
    expect(rows).toEqual(permissionTableRows());
  });
});
