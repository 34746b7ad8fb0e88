/** The admin service's firmware policy (baselines, readiness) both ways; the rules are the domain's. */

import {
  type BaselineInput,
  type BaselineKey,
  type FirmwareBaseline,
  validateBaselines,
} from "../../../domain/firmware-baselines.js";
import type { ComponentReadiness } from "../../../domain/inventory.js";
import { checkReadiness } from "../../../domain/readiness.js";
import type * as admin from "../../../gen/flowadmin/v1/admin.js";
import {
  componentTypeFromProto,
  componentTypeToProto,
  readinessStateFromProto,
  readinessStateToProto,
} from "./enums.js";
import { decoding, type Violations, validated } from "./violations.js";

function baselineInputsFromProto(
  baselines: readonly admin.FirmwareBaseline[],
  field: string,
  v: Violations,
): BaselineInput[] {
  return baselines.map((b, i) => ({
    componentType: componentTypeFromProto(b.componentType, `${field}[${i}].component_type`, v) ?? "UNKNOWN",
    model: b.model,
    vendor: b.vendor,
    version: b.version,
  }));
}

/** Decoded and validated (src/domain/firmware-baselines.ts: every problem with its path). */
export function baselinesFromProto(
  baselines: readonly admin.FirmwareBaseline[],
  field: string,
): FirmwareBaseline[] {
  const inputs = decoding((v) => baselineInputsFromProto(baselines, field, v));
  return validated(validateBaselines(inputs, field));
}

export function baselineToProto(b: FirmwareBaseline): admin.FirmwareBaseline {
  return {
    componentType: componentTypeToProto(b.componentType),
    model: b.model ?? "",
    vendor: b.vendor ?? "",
    version: b.version,
  };
}

/** A delete names a key: the type must be known; "" model or vendor = the unnarrowed baseline. */
export function baselineKeyFromProto(req: admin.DeleteFirmwareBaselineRequest): BaselineKey {
  return decoding((v) => {
    const type = componentTypeFromProto(req.componentType, "component_type", v);
    if (type === "UNKNOWN")
      v.add("component_type", "must be a known component type (got COMPONENT_TYPE_UNKNOWN)");
    const key: BaselineKey = { componentType: type === undefined || type === "UNKNOWN" ? "COMPUTE" : type };
    if (req.model !== "") key.model = req.model;
    if (req.vendor !== "") key.vendor = req.vendor;
    return key;
  });
}

/** Absent or READY → undefined (ready); NOT_READY and MAINTENANCE need a reason (the domain's rule). */
export function readinessFromProto(
  r: admin.ComponentReadiness | undefined,
  field: string,
  v: Violations,
): ComponentReadiness | undefined {
  if (r === undefined) return undefined;
  const state = readinessStateFromProto(r.state, `${field}.state`, v);
  if (state === undefined) return undefined;
  const checked = checkReadiness(state, r.reason, field);
  if (checked.ok) return checked.readiness;
  for (const violation of checked.violations) v.add(violation.field, violation.rule);
  return undefined;
}

export function readinessToProto(r: ComponentReadiness | undefined): admin.ComponentReadiness | undefined {
  return r === undefined ? undefined : { state: readinessStateToProto(r.state), reason: r.reason };
}

export function setReadinessFromProto(req: admin.SetComponentReadinessRequest): {
  componentId: string;
  readiness: ComponentReadiness | undefined;
} {
  return decoding((v) => ({
    componentId: v.uuid("component_id", req.componentId?.id ?? "") ?? "",
    readiness: readinessFromProto(req.readiness, "readiness", v),
  }));
}
