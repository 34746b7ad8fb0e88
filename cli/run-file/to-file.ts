/** Back to the readable form: a run's configuration as a run file. */

import type * as pb from "../../src/gen/flow/v1/flow.js";
import { durationToNs, formatDuration } from "../durations.js";
import {
  componentTypes,
  failureDomainNames,
  gateScopeNames,
  orderingStrategies,
  queueStrategyNames,
} from "../names.js";
import { soaksToFile } from "./soaks.js";
import { maintenanceWindowsToFile } from "./windows.js";

/**
 * A configuration in run-file form: what `run get` and `run create --dry-run` print, and what
 * `parseRunFile` reads back to the same request (generated seeds and defaulted durations included,
 * so a dry run's output can be saved and replayed to freeze exactly the same plan).
 * Authentication data never comes back from the service, so it never appears here.
 */
export function runFileFromConfig(
  name: string,
  description: string,
  config: pb.OperationRunConfiguration | undefined,
): Record<string, unknown> {
  const doc: Record<string, unknown> = { name };
  if (description !== "") doc.description = description;
  const sel = config?.selector?.selector;
  if (sel?.$case === "percentage") {
    doc.selector = compact({ percentage: `${sel.value.percentage}%`, seed: sel.value.seed || undefined });
  }
  const o = config?.options;
  if (o !== undefined) {
    const options: Record<string, unknown> = { maxConcurrentTargets: o.maxConcurrentTargets };
    options.gates = (o.safetyPolicy?.gates ?? []).map(gateToFile);
    const plan = o.phasePolicy?.plan;
    if (plan?.$case === "equal") options.phases = { equal: plan.value.phaseCount };
    if (plan?.$case === "percentage")
      options.phases = { percentage: plan.value.phases.map((p) => p.percentage) };
    if (plan?.$case === "count") options.phases = { count: plan.value.phases.map((p) => p.count) };
    const soaks = soaksToFile(o.phasePolicy);
    if (Object.keys(soaks).length > 0)
      options.phases = { ...(options.phases as object | undefined), ...soaks };
    if (o.phasePolicy?.advancePolicy !== undefined)
      options.autoAdvance = o.phasePolicy.advancePolicy.autoAdvance;
    const ordering = o.orderingPolicy?.ordering;
    if (ordering?.$case === "random")
      options.ordering = { random: compact({ seed: ordering.value.seed || undefined }) };
    if (ordering?.$case === "physicalLocation") {
      options.ordering = { physicalLocation: orderingStrategies.name(ordering.value.strategy) };
    }
    const retry = o.conflictPolicy?.strategy;
    if (retry?.$case === "retry") {
      options.conflictRetry = compact({
        retryTimeout: durationText(retry.value.retryTimeout),
        initialRetryDelay: durationText(retry.value.initialRetryDelay),
        maxRetryDelay: durationText(retry.value.maxRetryDelay),
      });
    }
    if (o.maintenanceWindows.length > 0)
      options.maintenanceWindows = maintenanceWindowsToFile(o.maintenanceWindows);
    if (o.failureDomainSpread !== undefined) {
      const s = o.failureDomainSpread;
      options.failureDomainSpread = {
        domain: failureDomainNames.name(s.domain) ?? "row",
        ...(s.attribute === "" ? {} : { attribute: s.attribute }),
        maxInFlight: s.maxInFlight,
      };
    }
    doc.options = options;
  }
  const op = config?.operation;
  if (op !== undefined) {
    const operation: Record<string, unknown> = {};
    if (op.operation?.$case === "upgradeFirmware")
      operation.upgradeFirmware = firmwareToFile(op.operation.value);
    const scope = op.targetScope;
    if (scope !== undefined && scope.excludeOperationRunIds.length > 0) {
      operation.excludeRuns = scope.excludeOperationRunIds.map((u) => u.id);
    }
    const filter = scope?.defaultScopeComponentFilter?.filter;
    if (filter?.$case === "types") {
      operation.defaultScope = { componentTypes: filter.value.types.map((t) => componentTypes.name(t)) };
    }
    if (filter?.$case === "components") {
      operation.defaultScope = {
        componentIds: filter.value.targets.map((t) =>
          t.identifier?.$case === "id" ? t.identifier.value.id : `${t.identifier?.value.id}`,
        ),
      };
    }
    doc.operation = operation;
  }
  return doc;
}

function durationText(d: pb.OperationRunConflictRetryPolicy["retryTimeout"]): string | undefined {
  return d === undefined || durationToNs(d) === 0n ? undefined : formatDuration(d);
}

function gateToFile(g: pb.OperationRunSafetyGate): Record<string, unknown> {
  // UNKNOWN is what the service resolves to CURRENT_PHASE; an effective configuration never has it.
  const scopeName = (s: pb.OperationRunSafetyGateScope) => gateScopeNames.name(s) ?? "currentPhase";
  if (g.gate?.$case === "failureCount") {
    return { failureCount: g.gate.value.failureThresholdCount, scope: scopeName(g.gate.value.scope) };
  }
  if (g.gate?.$case === "failureRate") {
    return { failureRate: `${g.gate.value.failureThresholdPercent}%`, scope: scopeName(g.gate.value.scope) };
  }
  if (g.gate?.$case === "observedFailureRate") {
    const v = g.gate.value;
    return {
      observedFailureRate: {
        percent: v.failureThresholdPercent,
        ...(v.minFinished === undefined ? {} : { minFinished: v.minFinished }),
        scope: scopeName(v.scope),
      },
    };
  }
  return {};
}

function firmwareToFile(fw: pb.UpgradeFirmwareRequest): Record<string, unknown> {
  const out: Record<string, unknown> = compact({
    targetVersion: fw.targetVersion,
    description: fw.description || undefined,
    startTime: fw.startTime?.toISOString(),
    endTime: fw.endTime?.toISOString(),
    ruleId: fw.ruleId?.id,
    subTargets: fw.subTargets.length > 0 ? fw.subTargets : undefined,
    overrideReadinessCheck: fw.overrideReadinessCheck || undefined,
    overrideVersionCheck: fw.overrideVersionCheck || undefined,
  });
  if (fw.queueOptions !== undefined) {
    const q = fw.queueOptions;
    out.queue = compact({
      strategy: queueStrategyNames.name(q.conflictStrategy),
      timeout: q.queueTimeoutSeconds > 0 ? `${q.queueTimeoutSeconds}s` : undefined,
    });
  }
  const spec = fw.targetSpec?.targets;
  const types = (list: pb.ComponentType[]) =>
    list.length === 0 ? undefined : list.map((t) => componentTypes.name(t));
  if (spec?.$case === "racks") {
    out.targets = {
      racks: spec.value.targets.map((t) => {
        const id = t.identifier;
        const ref =
          id?.$case === "id"
            ? { id: id.value.id }
            : id?.$case === "externalId"
              ? { externalId: id.value }
              : { name: id?.value };
        return compact({ ...ref, componentTypes: types(t.componentTypes) });
      }),
    };
  }
  if (spec?.$case === "nvlDomains") {
    out.targets = {
      nvlDomains: spec.value.targets.map((t) =>
        compact({
          ...(t.identifier?.$case === "id" ? { id: t.identifier.value.id } : { name: t.identifier?.value }),
          componentTypes: types(t.componentTypes),
        }),
      ),
    };
  }
  if (spec?.$case === "components") {
    out.targets = {
      components: spec.value.targets.map((t) =>
        t.identifier?.$case === "external"
          ? { type: componentTypes.name(t.identifier.value.type), externalId: t.identifier.value.id }
          : { id: t.identifier?.value.id },
      ),
    };
  }
  return out;
}

function compact<T extends Record<string, unknown>>(obj: T): T {
  for (const key of Object.keys(obj)) if (obj[key] === undefined) delete obj[key];
  return obj;
}
