/** The task API's ids and tasks, and the inventory admin service's racks, both ways. */

import { InvalidArgumentError } from "../../../domain/errors.js";
import type { InventoryComponent, InventoryRack } from "../../../domain/inventory.js";
import type { Task } from "../../../domain/task.js";
import { isNilUuid, normalizeUuid } from "../../../domain/uuid.js";
import type * as pb from "../../../gen/flow/v1/flow.js";
import type * as admin from "../../../gen/flowadmin/v1/admin.js";
import {
  componentTypeFromProto,
  componentTypeToProto,
  executorTypeToProto,
  taskStatusToProto,
} from "./enums.js";
import { LIMITS } from "./limits.js";
import { readinessFromProto, readinessToProto } from "./policy.js";
import { compact, decoding } from "./violations.js";
import { msToDate, uuidToProto } from "./well-known.js";

/** A missing, malformed or nil task id (the run-id twin is the domain's RUN_ID_REQUIRED). */
export const TASK_ID_REQUIRED = "task ID is required";

export function taskIdFromProto(id: pb.UUID | undefined): string {
  const normalized = id && normalizeUuid(id.id);
  if (normalized === undefined || isNilUuid(normalized)) throw new InvalidArgumentError(TASK_ID_REQUIRED);
  return normalized;
}

export function taskIdsFromProto(req: pb.GetTasksByIDsRequest): string[] {
  return decoding((v) => {
    v.maxEntries("task_ids", req.taskIds, LIMITS.taskIds);
    const ids: string[] = [];
    req.taskIds.forEach((t, i) => {
      const id = v.uuid(`task_ids[${i}]`, t.id);
      if (id !== undefined) ids.push(id);
    });
    return ids;
  });
}

export function inventoryRacksFromProto(req: admin.ImportInventoryRequest): InventoryRack[] {
  return decoding((v) => {
    v.maxEntries("racks", req.racks, LIMITS.inventoryRacks);
    return req.racks.map((r, i) => {
      const field = `racks[${i}]`;
      v.maxEntries(`${field}.components`, r.components, LIMITS.componentsPerRack);
      if (r.name === "") v.add(`${field}.name`, "must not be empty");
      const labels: [string, string][] = [
        ["name", r.name],
        ["external_id", r.externalId],
        ["nvl_domain_name", r.nvlDomainName],
        ["location.datacenter", r.location?.datacenter ?? ""],
        ["location.row", r.location?.row ?? ""],
        ...r.components.flatMap((c, j): [string, string][] => [
          [`components[${j}].external_id`, c.externalId],
          [`components[${j}].firmware_version`, c.firmwareVersion],
          [`components[${j}].model`, c.model],
          [`components[${j}].vendor`, c.vendor],
        ]),
      ];
      for (const [name, value] of labels) v.maxLength(`${field}.${name}`, value, LIMITS.label);
      const rack: InventoryRack = {
        id: v.uuid(`${field}.id`, r.id?.id ?? "") ?? "",
        name: r.name,
        components: r.components.map((c, j) => {
          const cf = `${field}.components[${j}]`;
          const type = componentTypeFromProto(c.type, `${cf}.type`, v);
          if (type === "UNKNOWN")
            v.add(`${cf}.type`, "must be a known component type (got COMPONENT_TYPE_UNKNOWN)");
          return compact({
            id: v.uuid(`${cf}.id`, c.id?.id ?? "") ?? "",
            type: type === undefined || type === "UNKNOWN" ? "COMPUTE" : type,
            externalId: c.externalId === "" ? undefined : c.externalId,
            firmwareVersion: c.firmwareVersion === "" ? undefined : c.firmwareVersion,
            model: c.model === "" ? undefined : c.model,
            vendor: c.vendor === "" ? undefined : c.vendor,
            readiness: readinessFromProto(c.readiness, `${cf}.readiness`, v),
          });
        }),
      };
      if (r.externalId !== "") rack.externalId = r.externalId;
      if (r.nvlDomainId !== undefined) {
        rack.nvlDomain = {
          id: v.uuid(`${field}.nvl_domain_id`, r.nvlDomainId.id) ?? "",
          name: r.nvlDomainName,
        };
      }
      if (r.location !== undefined) {
        const { datacenter, row, position } = r.location;
        rack.location = { datacenter, row, position };
      }
      return rack;
    });
  });
}

export function taskToProto(task: Task): pb.Task {
  return {
    id: uuidToProto(task.id),
    operation: task.operation,
    rackId: uuidToProto(task.rackId),
    rackExternalId: task.rackExternalId ?? "",
    componentUuids: task.componentIds.map(uuidToProto),
    description: task.description,
    executorType: executorTypeToProto(task.executorType),
    executionId: task.executionId,
    status: taskStatusToProto(task.status),
    message: task.message,
    queueExpiresAt: msToDate(task.queueExpiresAt),
    createdAt: msToDate(task.createdAt),
    finishedAt: msToDate(task.finishedAt),
    appliedRuleId: task.appliedRuleId === undefined ? undefined : uuidToProto(task.appliedRuleId),
    updatedAt: msToDate(task.updatedAt),
    startedAt: msToDate(task.startedAt),
    report: task.report,
  };
}

export function inventoryComponentToProto(c: InventoryComponent): admin.InventoryComponent {
  return {
    id: uuidToProto(c.id),
    type: componentTypeToProto(c.type),
    externalId: c.externalId ?? "",
    firmwareVersion: c.firmwareVersion ?? "",
    model: c.model ?? "",
    vendor: c.vendor ?? "",
    readiness: readinessToProto(c.readiness),
  };
}

export function inventoryRackToProto(rack: InventoryRack): admin.InventoryRack {
  return {
    id: uuidToProto(rack.id),
    name: rack.name,
    externalId: rack.externalId ?? "",
    nvlDomainId: rack.nvlDomain && uuidToProto(rack.nvlDomain.id),
    nvlDomainName: rack.nvlDomain?.name ?? "",
    location: rack.location && { ...rack.location },
    components: rack.components.map(inventoryComponentToProto),
  };
}
