/**
 * A run's effective configuration → OperationRunConfiguration.
 *
 * Encoding never writes firmware credentials back: `authentication_data` is always unset on read.
 */

import {
  assertNever,
  type ComponentFilter,
  type ComponentRef,
  type FirmwareTemplate,
  type PhasePlan,
  type RackRef,
  type RunConfig,
  type SafetyGate,
  type TargetSpec,
} from "../../../domain/model.js";
import type * as pb from "../../../gen/flow/v1/flow.js";
import {
  componentTypeToProto,
  conflictStrategyToProto,
  failureDomainToProto,
  gateScopeToProto,
} from "./enums.js";
import { msToDate, msToDuration, uuidToProto } from "./well-known.js";

/** The effective configuration, durations as Durations; firmware credentials are never included. */
export function runConfigToProto(config: RunConfig): pb.OperationRunConfiguration {
  const { conflictRetry, targetScope, phasePlan } = config;
  return {
    selector: {
      selector: {
        $case: "percentage",
        value: { percentage: config.selector.percentage, seed: config.selector.seed },
      },
    },
    options: {
      maxConcurrentTargets: config.maxConcurrentTargets,
      safetyPolicy: { gates: config.safetyGates.map(gateToProto) },
      conflictPolicy: {
        strategy: {
          $case: "retry",
          value: {
            retryTimeout: msToDuration(conflictRetry.retryTimeoutMs),
            initialRetryDelay: msToDuration(conflictRetry.initialRetryDelayMs),
            maxRetryDelay: msToDuration(conflictRetry.maxRetryDelayMs),
          },
        },
      },
      orderingPolicy: { ordering: { $case: "random", value: { seed: config.ordering.seed } } },
      phasePolicy: {
        plan: phasePlanToProto(phasePlan),
        advancePolicy: { autoAdvance: config.autoAdvance },
        ...(config.minSoakMs === undefined ? {} : { minSoak: msToDuration(config.minSoakMs) }),
        ...(config.phaseMinSoakMs === undefined
          ? {}
          : { phaseMinSoaks: { minSoaks: config.phaseMinSoakMs.map(msToDuration) } }),
      },
      maintenanceWindows: (config.maintenanceWindows ?? []).map((w) => ({
        cron: w.cron,
        duration: msToDuration(w.durationMs),
      })),
      failureDomainSpread: config.failureDomainSpread && {
        domain: failureDomainToProto(config.failureDomainSpread.kind),
        attribute: config.failureDomainSpread.attribute ?? "",
        maxInFlight: config.failureDomainSpread.maxInFlight,
      },
    },
    operation: {
      operation: { $case: "upgradeFirmware", value: firmwareTemplateToProto(config.operation.firmware) },
      targetScope: {
        excludeOperationRunIds: targetScope.excludeOperationRunIds.map(uuidToProto),
        defaultScopeComponentFilter:
          targetScope.defaultScopeComponentFilter &&
          componentFilterToProto(targetScope.defaultScopeComponentFilter),
      },
    },
  };
}

export function gateToProto(gate: SafetyGate): pb.OperationRunSafetyGate {
  switch (gate.kind) {
    case "failureRate":
      return {
        gate: {
          $case: "failureRate",
          value: { scope: gateScopeToProto(gate.scope), failureThresholdPercent: gate.thresholdPercent },
        },
      };
    case "failureCount":
      return {
        gate: {
          $case: "failureCount",
          value: { scope: gateScopeToProto(gate.scope), failureThresholdCount: gate.thresholdCount },
        },
      };
    case "observedFailureRate":
      return {
        gate: {
          $case: "observedFailureRate",
          value: {
            scope: gateScopeToProto(gate.scope),
            failureThresholdPercent: gate.thresholdPercent,
            minFinished: gate.minFinished,
          },
        },
      };
    default:
      return assertNever(gate);
  }
}

function phasePlanToProto(plan: PhasePlan): pb.OperationRunPhasePolicy["plan"] {
  switch (plan.kind) {
    case "equal":
      return { $case: "equal", value: { phaseCount: plan.phaseCount } };
    case "percentage":
      return {
        $case: "percentage",
        value: { phases: plan.percentages.map((percentage) => ({ percentage })) },
      };
    case "count":
      return { $case: "count", value: { phases: plan.counts.map((count) => ({ count })) } };
    default:
      return assertNever(plan);
  }
}

function componentFilterToProto(filter: ComponentFilter): pb.ComponentFilter {
  switch (filter.kind) {
    case "types":
      return { filter: { $case: "types", value: { types: filter.types.map(componentTypeToProto) } } };
    case "components":
      return {
        filter: {
          $case: "components",
          value: {
            targets: filter.componentIds.map((id) => ({
              identifier: { $case: "id", value: uuidToProto(id) },
            })),
          },
        },
      };
    default:
      return assertNever(filter);
  }
}

/** `authentication_data` is always unset: credentials go in, never out. */
export function firmwareTemplateToProto(fw: FirmwareTemplate): pb.UpgradeFirmwareRequest {
  return {
    targetSpec: fw.targetSpec && targetSpecToProto(fw.targetSpec),
    targetVersion: fw.targetVersion,
    startTime: msToDate(fw.startTime),
    endTime: msToDate(fw.endTime),
    description: fw.description,
    queueOptions: fw.queueOptions && {
      conflictStrategy: conflictStrategyToProto(fw.queueOptions.conflictStrategy),
      queueTimeoutSeconds: fw.queueOptions.queueTimeoutSeconds,
    },
    ruleId: fw.ruleId === undefined ? undefined : uuidToProto(fw.ruleId),
    subTargets: [...fw.subTargets],
    overrideReadinessCheck: fw.overrideReadinessCheck,
    authenticationData: undefined,
    overrideVersionCheck: fw.overrideVersionCheck,
  };
}

function targetSpecToProto(spec: TargetSpec): pb.OperationTargetSpec {
  switch (spec.kind) {
    case "racks":
      return {
        targets: {
          $case: "racks",
          value: {
            targets: spec.racks.map((r) => ({
              identifier: rackRefToProto(r.ref),
              componentTypes: r.componentTypes.map(componentTypeToProto),
            })),
          },
        },
      };
    case "components":
      return {
        targets: {
          $case: "components",
          value: { targets: spec.components.map((c) => ({ identifier: componentRefToProto(c) })) },
        },
      };
    case "nvlDomains":
      return {
        targets: {
          $case: "nvlDomains",
          value: {
            targets: spec.domains.map((d) => ({
              identifier:
                d.ref.by === "id"
                  ? { $case: "id", value: uuidToProto(d.ref.id) }
                  : { $case: "name", value: d.ref.name },
              componentTypes: d.componentTypes.map(componentTypeToProto),
            })),
          },
        },
      };
    default:
      return assertNever(spec);
  }
}

function rackRefToProto(ref: RackRef): pb.RackTarget["identifier"] {
  switch (ref.by) {
    case "id":
      return { $case: "id", value: uuidToProto(ref.id) };
    case "name":
      return { $case: "name", value: ref.name };
    case "externalId":
      return { $case: "externalId", value: ref.externalId };
    default:
      return assertNever(ref);
  }
}

function componentRefToProto(ref: ComponentRef): pb.ComponentTarget["identifier"] {
  switch (ref.by) {
    case "id":
      return { $case: "id", value: uuidToProto(ref.id) };
    case "external":
      return { $case: "external", value: { type: componentTypeToProto(ref.type), id: ref.externalId } };
    default:
      return assertNever(ref);
  }
}
