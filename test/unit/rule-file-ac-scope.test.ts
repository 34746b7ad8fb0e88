/** The rule file's `acScope` (cli/rule-file.ts): rack or tray onto RuleStep.ac_scope; anything else refused at its path. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadRuleFile } from "../../cli/rule-file.js";
import { AcCycleScope } from "../../src/gen/flowadmin/v1/admin.js";

const dir = mkdtempSync(join(tmpdir(), "rule-file-ac-scope-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const fileWith = (scope: string): string => {
  const path = join(dir, `rule-${scope}.yaml`);
  writeFileSync(
    path,
    [
      "name: whole-rack",
      "stages:",
      "  - componentTypes: [COMPUTE]",
      "    steps:",
      "      - action: update-firmware",
      "      - action: ac-cycle",
      `        acScope: ${scope}`,
      "      - action: wait-bring-up",
    ].join("\n"),
  );
  return path;
};

describe("rule file: acScope", () => {
  it("rack and tray (any case) map onto ac_scope; a step without it has none", async () => {
    const scopes = async (scope: string) =>
      (await loadRuleFile(fileWith(scope))).stages[0]?.steps.map((s) => s.acScope);
    expect(await scopes("rack")).toEqual([undefined, AcCycleScope.AC_CYCLE_SCOPE_RACK, undefined]);
    expect(await scopes("Tray")).toEqual([undefined, AcCycleScope.AC_CYCLE_SCOPE_TRAY, undefined]);
  });

  it("anything else is refused naming the key's path", async () => {
    const path = fileWith("row");
    await expect(loadRuleFile(path)).rejects.toThrow(
      `${path} is not a valid rule file:\n${path}: stages[0].steps[1].acScope: must be rack or tray (got "row")`,
    );
  });
});
