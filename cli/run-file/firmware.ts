/** The run file's `operation.upgradeFirmware`: version, window, queueing, credentials and targets. */

import * as pb from "../../src/gen/flow/v1/flow.js";
import { queueStrategyNames } from "../names.js";
import { describe, join, type Reader } from "./reader.js";

export function readTypes(
  r: Reader,
  value: unknown,
  path: string,
  nonEmpty = false,
): pb.ComponentType[] | undefined {
  const list = r.list(value, path, { nonEmpty });
  if (list === undefined) return undefined;
  const types = list.map((v, i) => r.componentType(v, `${path}[${i}]`));
  return types.some((t) => t === undefined) ? undefined : (types as pb.ComponentType[]);
}

const FIRMWARE_KEYS = [
  "targetVersion",
  "description",
  "targets",
  "startTime",
  "endTime",
  "queue",
  "ruleId",
  "subTargets",
  "overrideReadinessCheck",
  "overrideVersionCheck",
  "authentication",
] as const;

export function readFirmware(r: Reader, value: unknown, path: string): pb.UpgradeFirmwareRequest | undefined {
  const obj = r.object(value, path, FIRMWARE_KEYS);
  if (obj === undefined) return undefined;
  const at = (k: string) => join(path, k);
  const optional = <T>(k: string, read: (v: unknown, p: string) => T | undefined): T | undefined =>
    obj[k] === undefined ? undefined : read(obj[k], at(k));
  const startTime = optional("startTime", (v, p) => r.timestamp(v, p));
  const endTime = optional("endTime", (v, p) => r.timestamp(v, p));
  if (startTime !== undefined && endTime !== undefined && endTime <= startTime) {
    r.add(at("endTime"), "must be later than startTime");
  }
  const ruleId = optional("ruleId", (v, p) => r.uuid(v, p));
  return {
    targetSpec: optional("targets", (v, p) => readTargets(r, v, p)),
    targetVersion: optional("targetVersion", (v, p) => r.string(v, p, { nonEmpty: true })),
    startTime,
    endTime,
    description: optional("description", (v, p) => r.string(v, p)) ?? "",
    queueOptions: optional("queue", (v, p) => readQueue(r, v, p)),
    ruleId: ruleId === undefined ? undefined : { id: ruleId },
    subTargets:
      optional("subTargets", (v, p) =>
        r
          .list(v, p)
          ?.map((s, i) => r.string(s, `${p}[${i}]`))
          .filter((s) => s !== undefined),
      ) ?? [],
    overrideReadinessCheck: optional("overrideReadinessCheck", (v, p) => r.boolean(v, p)) ?? false,
    overrideVersionCheck: optional("overrideVersionCheck", (v, p) => r.boolean(v, p)) ?? false,
    authenticationData: optional("authentication", (v, p) => readAuthentication(r, v, p)),
  };
}

function readQueue(r: Reader, value: unknown, path: string): pb.QueueOptions | undefined {
  const obj = r.object(value, path, ["strategy", "timeout"]);
  if (obj === undefined) return undefined;
  let conflictStrategy = pb.ConflictStrategy.CONFLICT_STRATEGY_UNSPECIFIED;
  if (obj.strategy !== undefined) {
    const found = queueStrategyNames.parse(obj.strategy);
    if (found === undefined) {
      const names = queueStrategyNames.names.join(" or ");
      r.add(join(path, "strategy"), `must be ${names} (got ${describe(obj.strategy)})`);
    } else conflictStrategy = found;
  }
  let queueTimeoutSeconds = 0;
  if (obj.timeout !== undefined) {
    const ns = r.duration(obj.timeout, join(path, "timeout"));
    if (ns !== undefined) {
      if (ns % 1_000_000_000n !== 0n)
        r.add(join(path, "timeout"), `must be whole seconds (got ${describe(obj.timeout)})`);
      else queueTimeoutSeconds = Number(ns / 1_000_000_000n);
    }
  }
  return { conflictStrategy, queueTimeoutSeconds };
}

function readAuthentication(
  r: Reader,
  value: unknown,
  path: string,
): pb.FirmwareAuthenticationData | undefined {
  const obj = r.object(value, path, ["shared", "perComponent"]);
  if (obj === undefined) return undefined;
  const kind = r.exactlyOne(obj, path, ["shared", "perComponent"]);
  if (kind === "shared") {
    const shared = r.string(obj.shared, join(path, "shared"), { nonEmpty: true });
    return shared === undefined ? undefined : { value: { $case: "shared", value: shared } };
  }
  if (kind === "perComponent") {
    const p = join(path, "perComponent");
    const per = r.object(obj.perComponent, p, ["compute", "nvswitch", "powershelf"]);
    if (per === undefined) return undefined;
    const field = (k: string) =>
      per[k] === undefined ? undefined : r.string(per[k], join(p, k), { nonEmpty: true });
    return {
      value: {
        $case: "perComponent",
        value: { compute: field("compute"), nvswitch: field("nvswitch"), powershelf: field("powershelf") },
      },
    };
  }
  return undefined;
}

function readTargets(r: Reader, value: unknown, path: string): pb.OperationTargetSpec | undefined {
  const obj = r.object(value, path, ["racks", "components", "nvlDomains"]);
  if (obj === undefined) return undefined;
  const kind = r.exactlyOne(obj, path, ["racks", "components", "nvlDomains"]);
  if (kind === undefined) return undefined;
  const p = join(path, kind);
  const list = r.list(obj[kind], p, { nonEmpty: true });
  if (list === undefined) return undefined;
  if (kind === "racks") {
    const targets = list.map((v, i) => readRackTarget(r, v, `${p}[${i}]`));
    return { targets: { $case: "racks", value: { targets: targets.filter((t) => t !== undefined) } } };
  }
  if (kind === "nvlDomains") {
    const targets = list.map((v, i) => readDomainTarget(r, v, `${p}[${i}]`));
    return { targets: { $case: "nvlDomains", value: { targets: targets.filter((t) => t !== undefined) } } };
  }
  const targets = list.map((v, i) => readComponentTarget(r, v, `${p}[${i}]`));
  return { targets: { $case: "components", value: { targets: targets.filter((t) => t !== undefined) } } };
}

/** A rack by name (`rack-a01` alone is a name), `{ id }`, `{ name }` or `{ externalId }`. */
function readRackTarget(r: Reader, value: unknown, path: string): pb.RackTarget | undefined {
  if (typeof value === "string") {
    const name = r.string(value, path, { nonEmpty: true });
    return name === undefined
      ? undefined
      : { identifier: { $case: "name", value: name }, componentTypes: [] };
  }
  const obj = r.object(value, path, ["id", "name", "externalId", "componentTypes"]);
  if (obj === undefined) return undefined;
  const componentTypeList =
    obj.componentTypes === undefined ? [] : readTypes(r, obj.componentTypes, join(path, "componentTypes"));
  const kind = r.exactlyOne(obj, path, ["id", "name", "externalId"]);
  let identifier: pb.RackTarget["identifier"];
  if (kind === "id") {
    const id = r.uuid(obj.id, join(path, "id"));
    if (id !== undefined) identifier = { $case: "id", value: { id } };
  } else if (kind === "name" || kind === "externalId") {
    const text = r.string(obj[kind], join(path, kind), { nonEmpty: true });
    if (text !== undefined) identifier = { $case: kind, value: text };
  }
  return identifier === undefined || componentTypeList === undefined
    ? undefined
    : { identifier, componentTypes: componentTypeList };
}

function readDomainTarget(r: Reader, value: unknown, path: string): pb.NVLDomainTarget | undefined {
  if (typeof value === "string") {
    const name = r.string(value, path, { nonEmpty: true });
    return name === undefined
      ? undefined
      : { identifier: { $case: "name", value: name }, componentTypes: [] };
  }
  const obj = r.object(value, path, ["id", "name", "componentTypes"]);
  if (obj === undefined) return undefined;
  const componentTypeList =
    obj.componentTypes === undefined ? [] : readTypes(r, obj.componentTypes, join(path, "componentTypes"));
  const kind = r.exactlyOne(obj, path, ["id", "name"]);
  let identifier: pb.NVLDomainTarget["identifier"];
  if (kind === "id") {
    const id = r.uuid(obj.id, join(path, "id"));
    if (id !== undefined) identifier = { $case: "id", value: { id } };
  } else if (kind === "name") {
    const name = r.string(obj.name, join(path, "name"), { nonEmpty: true });
    if (name !== undefined) identifier = { $case: "name", value: name };
  }
  return identifier === undefined || componentTypeList === undefined
    ? undefined
    : { identifier, componentTypes: componentTypeList };
}

/** A component by `{ id }` or by `{ type, externalId }` (its serial number, say). */
function readComponentTarget(r: Reader, value: unknown, path: string): pb.ComponentTarget | undefined {
  const obj = r.object(value, path, ["id", "type", "externalId"]);
  if (obj === undefined) return undefined;
  if (obj.id !== undefined) {
    if (obj.type !== undefined || obj.externalId !== undefined) {
      r.add(path, "must set either id, or type and externalId, not both");
      return undefined;
    }
    const id = r.uuid(obj.id, join(path, "id"));
    return id === undefined ? undefined : { identifier: { $case: "id", value: { id } } };
  }
  if (obj.type === undefined || obj.externalId === undefined) {
    r.add(path, "must set id, or both type and externalId");
    return undefined;
  }
  const type = r.componentType(obj.type, join(path, "type"));
  const externalId = r.string(obj.externalId, join(path, "externalId"), { nonEmpty: true });
  return type === undefined || externalId === undefined
    ? undefined
    : { identifier: { $case: "external", value: { type, id: externalId } } };
}
