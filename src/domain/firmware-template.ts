/**
 * Validation of the operation template, `UpgradeFirmwareRequest`: inside a run (its template, from
 * run-config.ts, with the path prefix `configuration.operation.upgrade_firmware.`) and as a plain
 * UpgradeFirmware task (`validateFirmwareTask`, paths relative to the request). Messages follow
 * run-config.ts's rules: the reference's innermost text, every violation at once, "(ours)" where the
 * reference has no such rule.
 */

import type { TargetSpecInput } from "./create-run-input.js";
import type { FieldViolation } from "./errors.js";
import { firmwareVersionRule } from "./firmware-version.js";
import { checkSchedule } from "./maintenance-window.js";
import type { ComponentRef, FirmwareTemplate, NvlDomainRef, RackRef, TargetSpec } from "./model.js";
import { checkSubTargets } from "./sub-targets.js";
import { uuidError } from "./uuid.js";
import { protoComponentType, Violations } from "./violations.js";

/** An UpgradeFirmware request as decoded, before validation (its target spec may be absent or unset). */
export type FirmwareTemplateInput = Omit<FirmwareTemplate, "targetSpec"> & { targetSpec?: TargetSpecInput };
export type FirmwareTaskValidation =
  | { ok: true; template: FirmwareTemplate }
  | { ok: false; violations: FieldViolation[] };

/**
 * Validates a plain UpgradeFirmware task request. Unlike inside a run, where an absent spec means
 * "the default scope", here `target_spec` says exactly which racks to flash, so it is required.
 * Field paths are relative to the request: `target_spec`, `target_spec.racks.targets[0].id`. Its
 * start_time and end_time follow the run's rules (end after start, not already past at `now`).
 */
export function validateFirmwareTask(request: FirmwareTemplateInput, now: number): FirmwareTaskValidation {
  const v = new Violations();
  if (request.targetSpec === undefined) v.add("target_spec", "target_spec is required");
  const template = checkFirmwareTemplate(request, "", v);
  const { startTime, endTime } = request;
  v.list.push(
    ...checkSchedule({ startTime, endTime, windows: [] }, now, { endTime: "end_time", windows: "" }),
  );
  if (v.list.length > 0) return { ok: false, violations: v.list };
  return { ok: true, template };
}

/**
 * The template with ids lowercased; every other field is carried unchanged (credentials included:
 * the store encrypts them). `prefix` is the template's own path, "" for a plain task request.
 */
export function checkFirmwareTemplate(
  input: FirmwareTemplateInput,
  prefix: string,
  v: Violations,
): FirmwareTemplate {
  const { targetSpec: specInput, ...rest } = input;
  const template: FirmwareTemplate = rest;
  // (ours) Absent means "from the firmware baselines" (frozen at create); "" means nothing at all.
  if (input.targetVersion?.trim() === "") {
    v.add(
      `${prefix}target_version`,
      "must not be empty: omit it to take each component's version from the firmware baselines",
    );
  } else if (input.targetVersion !== undefined) {
    const rule = firmwareVersionRule(input.targetVersion);
    if (rule !== undefined) v.add(`${prefix}target_version`, rule);
  }
  if (input.ruleId !== undefined) {
    // The reference: "invalid upgrade_firmware.rule_id: must be a valid non-zero UUID".
    template.ruleId =
      v.nonNilUuid(`${prefix}rule_id`, input.ruleId, "must be a valid non-zero UUID") ?? input.ruleId;
  }
  // (ours) Names each component type has (src/domain/sub-targets.ts), lowercased.
  template.subTargets = checkSubTargets(input.subTargets, `${prefix}sub_targets`, (x) => v.list.push(x));
  const spec = specInput && checkTargetSpec(specInput, `${prefix}target_spec`, v);
  if (spec !== undefined) template.targetSpec = spec;
  return template;
}

/**
 * An explicit target spec with ids lowercased. An explicit spec must name at least one target:
 * `{ racks: { targets: [] } }` is a mistake, not "the default scope". Undefined when no kind is set.
 * Ids only need to parse: a nil id is left for the inventory lookup to not find, as in the reference.
 */
function checkTargetSpec(spec: TargetSpecInput, path: string, v: Violations): TargetSpec | undefined {
  switch (spec.kind) {
    case "unset":
      v.add(path, "target_spec must have one of racks, nvl_domains, or components set");
      return undefined;
    case "racks": {
      const at = `${path}.racks.targets`;
      if (spec.racks.length === 0) v.add(at, "racks.targets must have at least one entry");
      const racks = spec.racks.map((target, i) => ({
        ref: checkRackRef(target.ref, `${at}[${i}]`, v),
        componentTypes: v.componentTypes(
          `${at}[${i}].component_types`,
          target.componentTypes,
          (_, t) => `unknown component type ${protoComponentType(t)} in rack target filter`,
        ),
      }));
      return { kind: "racks", racks };
    }
    case "components": {
      const at = `${path}.components.targets`;
      if (spec.components.length === 0) v.add(at, "components.targets must have at least one entry");
      return {
        kind: "components",
        components: spec.components.map((c, i) => checkComponentRef(c, `${at}[${i}]`, v)),
      };
    }
    case "nvlDomains": {
      const at = `${path}.nvl_domains.targets`;
      if (spec.domains.length === 0) v.add(at, "nvl_domains.targets must have at least one entry");
      const domains = spec.domains.map((d, i) => ({
        ref: checkNvlDomainRef(d.ref, `${at}[${i}]`, v),
        componentTypes: v.componentTypes(
          `${at}[${i}].component_types`,
          d.componentTypes,
          (_, t) => `unknown component type ${protoComponentType(t)} in NVLink domain target filter`,
        ),
      }));
      return { kind: "nvlDomains", domains };
    }
  }
}

/** Parses like the reference: `invalid rack uuid "r1": invalid UUID length: 2`. */
function parsedId(id: string, at: string, what: string, v: Violations): string {
  const error = uuidError(id);
  if (error === undefined) return id.toLowerCase();
  v.add(at, `invalid ${what} ${JSON.stringify(id)}: ${error}`);
  return id;
}

function checkRackRef(ref: RackRef | { by: "unset" }, at: string, v: Violations): RackRef {
  switch (ref.by) {
    case "unset":
      v.add(at, "rack target must have either id, external_id, or name set");
      return { by: "id", id: "" };
    case "id":
      if (ref.id === "") {
        v.add(`${at}.id`, "rack target id must not be empty");
        return ref;
      }
      return { by: "id", id: parsedId(ref.id, `${at}.id`, "rack uuid", v) };
    case "name":
      if (ref.name === "") v.add(`${at}.name`, "rack target name must not be empty");
      return ref;
    case "externalId":
      if (ref.externalId === "") v.add(`${at}.external_id`, "rack target external_id must not be empty");
      return ref;
  }
}

function checkComponentRef(ref: ComponentRef, at: string, v: Violations): ComponentRef {
  if (ref.by === "id") return { by: "id", id: parsedId(ref.id, `${at}.id`, "component uuid", v) };
  if (ref.externalId === "") v.add(`${at}.external.id`, "external component id must not be empty");
  return ref;
}

function checkNvlDomainRef(ref: NvlDomainRef, at: string, v: Violations): NvlDomainRef {
  if (ref.by === "id") return { by: "id", id: parsedId(ref.id, `${at}.id`, "NVLink domain id", v) };
  if (ref.name === "") v.add(`${at}.name`, "NVLink domain target name must not be empty");
  return ref;
}
