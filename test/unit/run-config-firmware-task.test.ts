/**
 * validateFirmwareTask (a plain UpgradeFirmware request), and maintenance windows and times in
 * both validators.
 */
import { describe, expect, it } from "vitest";
import type { TargetSpecInput } from "../../src/domain/create-run-input.js";
import { validateFirmwareTask } from "../../src/domain/firmware-template.js";
import {
  base,
  COMPONENT,
  F,
  firmware,
  fw,
  NOW,
  OPTS,
  opts,
  RUN_B,
  rack,
  validated,
  violationsOf,
} from "../support/run-config-inputs.js";

describe("validateFirmwareTask: a plain UpgradeFirmware request", () => {
  const spec: TargetSpecInput = {
    kind: "components",
    components: [{ by: "id", id: COMPONENT.toUpperCase() }],
  };

  it("a plain task's target_version is held to a version's characters too, named relative to the request", () => {
    expect(
      validateFirmwareTask({ ...firmware(), targetVersion: "../COMPUTE/2.0", targetSpec: spec }, NOW),
    ).toEqual({
      ok: false,
      violations: [
        {
          field: "target_version",
          rule: `must be letters, digits, '.', '_', '+' and '-', starting with a letter or digit (got "../COMPUTE/2.0")`,
        },
      ],
    });
    const ok = validateFirmwareTask(
      { ...firmware(), targetVersion: "v2_24.1-rc1+build.7", targetSpec: spec },
      NOW,
    );
    expect(ok.ok).toBe(true);
  });

  it("requires target_spec, which inside a run would mean the default scope", () => {
    expect(validateFirmwareTask(firmware(), NOW)).toEqual({
      ok: false,
      violations: [{ field: "target_spec", rule: "target_spec is required" }],
    });
  });

  it("returns the template with a lowercased spec and every other field unchanged", () => {
    const request = {
      ...firmware(),
      ruleId: RUN_B,
      authentication: { kind: "shared" as const, secret: "s3" },
      targetSpec: spec,
    };
    expect(validateFirmwareTask(request, NOW)).toEqual({
      ok: true,
      template: { ...request, targetSpec: { kind: "components", components: [{ by: "id", id: COMPONENT }] } },
    });
  });

  it("reports spec and rule_id problems with paths relative to the request", () => {
    expect(
      validateFirmwareTask(
        {
          ...firmware(),
          ruleId: "r",
          targetSpec: rack({ by: "unset" }, ["UNKNOWN"]),
        },
        NOW,
      ),
    ).toEqual({
      ok: false,
      violations: [
        { field: "rule_id", rule: "must be a valid non-zero UUID" },
        {
          field: "target_spec.racks.targets[0]",
          rule: "rack target must have either id, external_id, or name set",
        },
        {
          field: "target_spec.racks.targets[0].component_types[0]",
          rule: "unknown component type COMPONENT_TYPE_UNKNOWN in rack target filter",
        },
      ],
    });
  });

  it("rejects an explicit spec with no kind set", () => {
    expect(validateFirmwareTask({ ...firmware(), targetSpec: { kind: "unset" } }, NOW)).toEqual({
      ok: false,
      violations: [
        { field: "target_spec", rule: "target_spec must have one of racks, nvl_domains, or components set" },
      ],
    });
  });
});

describe("validateCreateRun and validateFirmwareTask: maintenance windows and times", () => {
  const HOUR = 3_600_000;
  const WINDOWS = `${OPTS}.maintenance_windows`;

  it("stores the windows (cron trimmed) in the effective config; none → the field is left out", () => {
    const input = base();
    opts(input).maintenanceWindows = [
      { cron: " 0 2 * * MON-FRI ", durationMs: 2 * HOUR },
      { cron: "*/30 * * * *", durationMs: 60_000 },
    ];
    expect(validated(input).config.maintenanceWindows).toEqual([
      { cron: "0 2 * * MON-FRI", durationMs: 2 * HOUR },
      { cron: "*/30 * * * *", durationMs: 60_000 },
    ]);
    const none = base();
    opts(none).maintenanceWindows = [];
    expect("maintenanceWindows" in validated(none).config).toBe(false);
  });

  it("an end_time already past is refused: …end_time: maintenance window already closed", () => {
    const input = base();
    fw(input).endTime = NOW;
    expect(violationsOf(input)).toEqual([
      { field: `${F}.end_time`, rule: "maintenance window already closed" },
    ]);
  });

  it("end_time must be after start_time; window problems name the window and its part", () => {
    const input = base();
    fw(input).startTime = NOW + 2 * HOUR;
    fw(input).endTime = NOW + HOUR;
    opts(input).maintenanceWindows = [{ cron: "0 2 * *", durationMs: 0 }, { cron: "0 3 * * *" }];
    expect(violationsOf(input)).toEqual([
      { field: `${F}.end_time`, rule: "end_time must be after start_time" },
      {
        field: `${WINDOWS}[0].cron`,
        rule: "must have 5 fields (minute hour day-of-month month day-of-week), got 4",
      },
      { field: `${WINDOWS}[0].duration`, rule: "duration must be greater than 0" },
      { field: `${WINDOWS}[1].duration`, rule: "duration is required" },
    ]);
  });

  it("a plain UpgradeFirmware task: the same time rules, paths relative to the request", () => {
    const request = { ...firmware(), targetSpec: rack({ by: "name", name: "r1" }) };
    expect(validateFirmwareTask({ ...request, endTime: NOW - 1 }, NOW)).toEqual({
      ok: false,
      violations: [{ field: "end_time", rule: "maintenance window already closed" }],
    });
    expect(validateFirmwareTask({ ...request, startTime: NOW + HOUR, endTime: NOW + HOUR }, NOW)).toEqual({
      ok: false,
      violations: [{ field: "end_time", rule: "end_time must be after start_time" }],
    });
    expect(validateFirmwareTask({ ...request, startTime: NOW + HOUR, endTime: NOW + 2 * HOUR }, NOW).ok).toBe(
      true,
    );
  });
});
