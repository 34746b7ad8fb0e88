/**
 * UpgradeFirmwareRequest → the domain's firmware template, both as a plain UpgradeFirmware RPC and
 * as the operation of a run (`configuration.operation.upgrade_firmware`).
 */

import type { Scoped, TargetSpecInput } from "../../../domain/create-run-input.js";
import type { FirmwareTemplateInput } from "../../../domain/firmware-template.js";
import {
  assertNever,
  type ComponentRef,
  type ComponentType,
  type FirmwareAuthentication,
  type NvlDomainRef,
  type RackRef,
} from "../../../domain/model.js";
import type * as pb from "../../../gen/flow/v1/flow.js";
import { componentTypeFromProto, conflictStrategyFromProto } from "./enums.js";
import { LIMITS } from "./limits.js";
import { at, compact, decoding, type Violations } from "./violations.js";
import { dateToMs } from "./well-known.js";

/** Known numbers only (UNKNOWN included, for the validator to judge); undefined numbers are reported. */
export function componentTypesFromProto(
  types: pb.ComponentType[],
  field: string,
  v: Violations,
): Scoped<ComponentType>[] {
  v.maxEntries(field, types, LIMITS.componentTypesPerEntry);
  const out: Scoped<ComponentType>[] = [];
  types.forEach((t, i) => {
    const type = componentTypeFromProto(t, `${field}[${i}]`, v);
    if (type !== undefined) out.push(type);
  });
  return out;
}

export function componentRefsFromProto(
  targets: pb.ComponentTarget[],
  field: string,
  v: Violations,
): ComponentRef[] {
  v.maxEntries(field, targets, LIMITS.targetSpecEntries);
  const refs: ComponentRef[] = [];
  targets.forEach((t, i) => {
    const id = t.identifier;
    switch (id?.$case) {
      case undefined:
        v.add(`${field}[${i}]`, "must set id or external");
        return;
      case "id":
        refs.push({ by: "id", id: id.value.id });
        return;
      case "external": {
        const type = componentTypeFromProto(id.value.type, `${field}[${i}].external.type`, v);
        if (type === "UNKNOWN") {
          v.add(
            `${field}[${i}].external.type`,
            "must be a known component type (got COMPONENT_TYPE_UNKNOWN)",
          );
        }
        if (type !== undefined && type !== "UNKNOWN")
          refs.push({ by: "external", type, externalId: id.value.id });
        return;
      }
      default:
        assertNever(id);
    }
  });
  return refs;
}

/** `prefix` is the path of the UpgradeFirmwareRequest: "" for the RPC, `configuration.operation.upgrade_firmware` in a run. */
export function firmwareFromProto(
  fw: pb.UpgradeFirmwareRequest,
  prefix: string,
  v: Violations,
): FirmwareTemplateInput {
  v.maxLength(at(prefix, "description"), fw.description, LIMITS.description);
  v.maxEntries(at(prefix, "sub_targets"), fw.subTargets, LIMITS.subTargets);
  fw.subTargets.forEach((s, i) => {
    v.maxLength(`${at(prefix, "sub_targets")}[${i}]`, s, LIMITS.subTarget);
  });
  const q = fw.queueOptions;
  const strategy =
    q && conflictStrategyFromProto(q.conflictStrategy, at(prefix, "queue_options.conflict_strategy"), v);
  return compact({
    targetSpec: fw.targetSpec && targetSpecFromProto(fw.targetSpec, at(prefix, "target_spec"), v),
    targetVersion: fw.targetVersion,
    startTime: fw.startTime && dateToMs(fw.startTime, at(prefix, "start_time"), v),
    endTime: fw.endTime && dateToMs(fw.endTime, at(prefix, "end_time"), v),
    description: fw.description,
    queueOptions: q && {
      conflictStrategy: strategy ?? "UNSPECIFIED",
      queueTimeoutSeconds: q.queueTimeoutSeconds,
    },
    // Passed as sent: the validator reports a malformed or nil rule id with the reference's text.
    ruleId: fw.ruleId?.id,
    subTargets: fw.subTargets,
    overrideReadinessCheck: fw.overrideReadinessCheck,
    authentication: fw.authenticationData && authenticationFromProto(fw.authenticationData),
    overrideVersionCheck: fw.overrideVersionCheck,
  });
}

function authenticationFromProto(a: pb.FirmwareAuthenticationData): FirmwareAuthentication | undefined {
  switch (a.value?.$case) {
    case undefined:
      return undefined;
    case "shared":
      return { kind: "shared", secret: a.value.value };
    case "perComponent": {
      const { compute, nvswitch, powershelf } = a.value.value;
      return compact({ kind: "perComponent" as const, compute, nvswitch, powershelf });
    }
    default:
      return assertNever(a.value);
  }
}

function targetSpecFromProto(spec: pb.OperationTargetSpec, field: string, v: Violations): TargetSpecInput {
  switch (spec.targets?.$case) {
    case undefined:
      return { kind: "unset" };
    case "racks": {
      const f = `${field}.racks.targets`;
      const targets = spec.targets.value.targets;
      v.maxEntries(f, targets, LIMITS.targetSpecEntries);
      return {
        kind: "racks",
        racks: targets.map((t, i) => ({
          ref: rackRefFromProto(t.identifier),
          componentTypes: componentTypesFromProto(t.componentTypes, `${f}[${i}].component_types`, v),
        })),
      };
    }
    case "components":
      return {
        kind: "components",
        components: componentRefsFromProto(spec.targets.value.targets, `${field}.components.targets`, v),
      };
    case "nvlDomains": {
      const f = `${field}.nvl_domains.targets`;
      const targets = spec.targets.value.targets;
      v.maxEntries(f, targets, LIMITS.targetSpecEntries);
      const domains: { ref: NvlDomainRef; componentTypes: ComponentType[] }[] = [];
      targets.forEach((t, i) => {
        // The model types these as known ComponentTypes, but the validator checks them at run time
        // and words the UNKNOWN case as the reference does, so UNKNOWN is handed through.
        const componentTypes = componentTypesFromProto(
          t.componentTypes,
          `${f}[${i}].component_types`,
          v,
        ) as ComponentType[];
        const id = t.identifier;
        switch (id?.$case) {
          case undefined:
            v.add(`${f}[${i}]`, "must set id or name");
            return;
          case "id":
            domains.push({ ref: { by: "id", id: id.value.id }, componentTypes });
            return;
          case "name":
            domains.push({ ref: { by: "name", name: id.value }, componentTypes });
            return;
          default:
            assertNever(id);
        }
      });
      return { kind: "nvlDomains", domains };
    }
    default:
      return assertNever(spec.targets);
  }
}

function rackRefFromProto(id: pb.RackTarget["identifier"]): RackRef | { by: "unset" } {
  switch (id?.$case) {
    case undefined:
      return { by: "unset" };
    case "id":
      return { by: "id", id: id.value.id };
    case "name":
      return { by: "name", name: id.value };
    case "externalId":
      return { by: "externalId", externalId: id.value };
    default:
      return assertNever(id);
  }
}

/**
 * A plain UpgradeFirmware request, decoded. The task service validates it (`validateFirmwareTask`:
 * the target spec is required here, and its end_time is judged against the service's clock).
 */
export function firmwareTemplateFromProto(req: pb.UpgradeFirmwareRequest): FirmwareTemplateInput {
  return decoding((v) => firmwareFromProto(req, "", v));
}
