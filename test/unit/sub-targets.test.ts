/**
 * Sub-targets: the table per component type, validation (unknown names list the allowed ones),
 * what each component is flashed with, how they narrow a plan, and the verdict on a BMC's answer.
 */
import { describe, expect, it } from "vitest";
import { type BmcRequestRecord, verdict } from "../../src/domain/component-verdict.js";
import type { FieldViolation } from "../../src/domain/errors.js";
import { validateFirmwareTask } from "../../src/domain/firmware-template.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { RunConfig } from "../../src/domain/model.js";
import { planRun } from "../../src/domain/planner.js";
import {
  allowedSubTargetsText,
  checkSubTargets,
  flashedBy,
  SUB_TARGETS,
  subTargetsOf,
} from "../../src/domain/sub-targets.js";
import { runConfig } from "../support/domain-fixtures.js";

const ALLOWED =
  "COMPUTE: bmc, bios, cpld, gpu, nic; NVSWITCH: bmc, nvos, cpld; POWERSHELF: pmc, psu; TORSWITCH: nos, cpld; UMS: nos; CDU: controller";

function check(names: string[]): { names: string[]; violations: FieldViolation[] } {
  const violations: FieldViolation[] = [];
  return { names: checkSubTargets(names, "sub_targets", (v) => violations.push(v)), violations };
}

describe("sub-targets: the table and validation", () => {
  it("the documented table", () => {
    expect(SUB_TARGETS).toEqual({
      COMPUTE: ["bmc", "bios", "cpld", "gpu", "nic"],
      NVSWITCH: ["bmc", "nvos", "cpld"],
      POWERSHELF: ["pmc", "psu"],
      TORSWITCH: ["nos", "cpld"],
      UMS: ["nos"],
      CDU: ["controller"],
    });
    expect(allowedSubTargetsText()).toBe(ALLOWED);
  });

  it("known names of any type pass, lowercased; unknown ones and repeats are named with their index", () => {
    expect(check(["BMC", "psu"])).toEqual({ names: ["bmc", "psu"], violations: [] });
    expect(check(["bios", "gpuu", "Bios", ""])).toEqual({
      names: ["bios"],
      violations: [
        { field: "sub_targets[1]", rule: `unknown sub-target "gpuu"; allowed: ${ALLOWED}` },
        { field: "sub_targets[2]", rule: 'duplicate sub-target "Bios"' },
        { field: "sub_targets[3]", rule: `unknown sub-target ""; allowed: ${ALLOWED}` },
      ],
    });
  });

  it("UpgradeFirmware validation reports them at the request's path, with everything else", () => {
    const result = validateFirmwareTask(
      {
        targetSpec: { kind: "unset" },
        description: "",
        subTargets: ["nope"],
        overrideReadinessCheck: false,
        overrideVersionCheck: false,
      },
      0,
    );
    expect(result.ok ? [] : result.violations).toEqual([
      { field: "sub_targets[0]", rule: `unknown sub-target "nope"; allowed: ${ALLOWED}` },
      { field: "target_spec", rule: "target_spec must have one of racks, nvl_domains, or components set" },
    ]);
  });

  it.each([
    ["COMPUTE", ["bmc", "psu", "bios"], ["bmc", "bios"]],
    ["NVSWITCH", ["bmc", "psu", "bios"], ["bmc"]],
    ["POWERSHELF", ["bmc", "psu", "bios"], ["psu"]],
    ["CDU", ["bmc", "psu", "bios"], []],
  ] as const)("a %s asked for %o flashes %o (table order)", (type, asked, flashed) => {
    expect(subTargetsOf(type, asked)).toEqual(flashed);
    expect(flashedBy(asked)({ type })).toBe(flashed.length > 0);
  });

  it("no sub-targets: every component, whole", () => {
    expect(flashedBy([])({ type: "CDU" })).toBe(true);
  });
});

describe("sub-targets: a plan keeps only the components that have a requested part", () => {
  const racks: InventoryRack[] = [
    {
      id: "00000000-0000-4000-8000-000000000001",
      name: "r1",
      components: [
        { id: "c1", type: "COMPUTE" },
        { id: "p1", type: "POWERSHELF" },
      ],
    },
    {
      id: "00000000-0000-4000-8000-000000000002",
      name: "r2",
      components: [{ id: "p2", type: "POWERSHELF" }],
    },
  ];
  const config = (subTargets: string[]): RunConfig =>
    runConfig({
      operation: {
        kind: "upgradeFirmware",
        firmware: { description: "", subTargets, overrideReadinessCheck: false, overrideVersionCheck: false },
      },
    });

  it("[bios]: only COMPUTE; a rack with none drops out", () => {
    const plan = planRun({ config: config(["bios"]), inventory: racks, excludedTargets: [] });
    expect(plan.candidateCount).toBe(1);
    expect(plan.targets.map((t) => t.componentsByType)).toEqual([
      [{ type: "COMPUTE", componentIds: ["c1"] }],
    ]);
  });

  it("[bmc, psu]: both types; none: everything", () => {
    for (const subTargets of [["bmc", "psu"], []]) {
      const plan = planRun({ config: config(subTargets), inventory: racks, excludedTargets: [] });
      expect(plan.candidateCount).toBe(2);
    }
  });

  it("[nos] on racks without switches: nothing to plan", () => {
    expect(() => planRun({ config: config(["nos"]), inventory: racks, excludedTargets: [] })).toThrow(
      "operation run has no planned targets",
    );
  });
});

describe("sub-targets: the verdict on a BMC's result", () => {
  const record = (result: BmcRequestRecord["result"], ackedAt?: number): BmcRequestRecord => ({
    componentId: "c-1",
    requestId: "upd-1",
    taskId: "t-1",
    kind: "update",
    sentAt: 0,
    deadline: 10,
    ...(result ? { result } : {}),
    ...(ackedAt === undefined ? {} : { ackedAt }),
  });
  const judge = (r: BmcRequestRecord, now = 5) =>
    verdict("c-1", "COMPUTE", r, "2.0", { updateTimeoutSeconds: 4 }, 10, now, ["bmc", "bios"]);

  it("exactly the parts asked for (in any order) is a success", () => {
    expect(judge(record({ ok: true, version: "2.0", subTargets: ["bios", "bmc"] }))).toEqual({
      componentId: "c-1",
      ok: true,
      version: "2.0",
    });
  });

  it.each([
    ["other parts", ["bmc"], "component c-1 (COMPUTE): BMC flashed bmc, asked for sub-targets bmc, bios"],
    [
      "more parts",
      ["bmc", "bios", "gpu"],
      "component c-1 (COMPUTE): BMC flashed bmc, bios, gpu, asked for sub-targets bmc, bios",
    ],
    [
      "no word on the parts (a v1 answer)",
      undefined,
      "component c-1 (COMPUTE): BMC did not say which parts it flashed, asked for sub-targets bmc, bios",
    ],
  ])("%s fails the component", (_, flashed, message) => {
    expect(
      judge(record({ ok: true, version: "2.0", ...(flashed === undefined ? {} : { subTargets: flashed }) })),
    ).toEqual({ componentId: "c-1", ok: false, error: { Error: "BmcUpdateFailed", Cause: message } });
  });

  it("silence past the deadline says a v1-only BMC ignores a v2 command", () => {
    expect(judge(record(undefined), 11)).toEqual({
      componentId: "c-1",
      ok: false,
      error: {
        Error: "BmcUnreachable",
        Cause:
          "component c-1 (COMPUTE): BMC never acknowledged the update command within 4 s (unreachable; sub-targets need BMC protocol v2, which a v1-only BMC ignores)",
      },
    });
  });
});
