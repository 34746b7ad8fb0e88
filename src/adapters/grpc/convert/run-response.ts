/** Runs, their stats, targets and plans, and the build info → responses. */

import type { BuildInfo, TargetView } from "../../../app/api.js";
import { runOperationKind } from "../../../domain/list-queries.js";
import type {
  ComponentSkip,
  ComponentsForType,
  OperationType,
  Plan,
  PriorVersion,
  Run,
  RunConfig,
  VersionGroup,
} from "../../../domain/model.js";
import type { PhaseStats, RunStats } from "../../../domain/stats.js";
import * as pb from "../../../gen/flow/v1/flow.js";
import { actorToProto } from "./actor.js";
import { runConfigToProto } from "./config-response.js";
import {
  componentTypeToProto,
  operationTypeToProto,
  runReasonToProto,
  runStatusToProto,
  targetStatusToProto,
} from "./enums.js";
import { msToDate, uuidToProto } from "./well-known.js";

export function runSummaryToProto(run: Run): pb.OperationRunSummary {
  return {
    id: uuidToProto(run.id),
    name: run.name,
    description: run.description,
    operationKind: operationKindToProto(runOperationKind(run.config)),
    state: { status: runStatusToProto(run.status), reason: runReasonToProto(run.reason) },
    statusMessage: run.statusMessage,
    totalPhases: run.phaseSizes.length,
    createdAt: msToDate(run.createdAt),
    updatedAt: msToDate(run.updatedAt),
    startedAt: msToDate(run.startedAt),
    finishedAt: msToDate(run.finishedAt),
    currentPhaseIndex: run.currentPhaseIndex,
    phaseSizes: [...run.phaseSizes],
    retryOf:
      run.origin?.kind === "retry"
        ? {
            operationRunId: uuidToProto(run.origin.runId),
            includeTerminated: run.origin.includeTerminated,
            includeSkipped: run.origin.includeSkipped,
          }
        : undefined,
    rollbackOf:
      run.origin?.kind === "rollback" ? { operationRunId: uuidToProto(run.origin.runId) } : undefined,
    retriedBy: followUpIds(run, "retry"),
    rolledBackBy: followUpIds(run, "rollback"),
    soakEndsAt: msToDate(run.soakEndsAt),
  };
}

function followUpIds(run: Run, kind: "retry" | "rollback"): pb.UUID[] {
  return (run.followUps ?? []).filter((f) => f.kind === kind).map((f) => uuidToProto(f.runId));
}

function operationKindToProto(kind: { type: OperationType; code: string }): pb.OperationKind {
  return { type: operationTypeToProto(kind.type), code: kind.code };
}

export function runToProto(run: Run, stats?: RunStats): pb.OperationRun {
  return {
    summary: runSummaryToProto(run),
    configuration: runConfigToProto(run.config),
    stats: stats && runStatsToProto(stats),
  };
}

function phaseStatsToProto(s: PhaseStats): pb.OperationRunPhaseStats {
  return { phaseIndex: s.phaseIndex, selectedTargets: s.selectedTargets, outcomeCounts: { ...s.outcomes } };
}

export function runStatsToProto(stats: RunStats): pb.OperationRunStats {
  return {
    currentPhaseStats: phaseStatsToProto(stats.current),
    cumulativePhaseStats: phaseStatsToProto(stats.cumulative),
  };
}

function componentsByTypeToProto(groups: ComponentsForType[]): pb.ComponentsByType {
  return {
    groups: groups.map((g) => ({
      type: componentTypeToProto(g.type),
      componentIds: g.componentIds.map(uuidToProto),
    })),
  };
}

function versionsToProto(groups: readonly VersionGroup[] | undefined): pb.ComponentVersions[] {
  return (groups ?? []).map((g) => ({ version: g.version, componentIds: g.componentIds.map(uuidToProto) }));
}

function priorVersionsToProto(priors: readonly PriorVersion[] | undefined): pb.ComponentPriorVersion[] {
  return (priors ?? []).map((p) => ({
    componentId: uuidToProto(p.componentId),
    type: componentTypeToProto(p.type),
    priorVersion: p.version,
    targetVersion: p.targetVersion,
    subTargets: [...(p.subTargets ?? [])],
  }));
}

export function targetToProto(t: TargetView): pb.OperationRunTarget {
  return {
    id: uuidToProto(t.id),
    operationRunId: uuidToProto(t.runId),
    rackId: uuidToProto(t.rackId),
    sequenceIndex: t.sequenceIndex,
    phaseIndex: t.phaseIndex,
    taskId: t.taskId === undefined ? undefined : uuidToProto(t.taskId),
    status: targetStatusToProto(t.status),
    message: t.message,
    componentsByType: componentsByTypeToProto(t.componentsByType),
    createdAt: msToDate(t.createdAt),
    updatedAt: msToDate(t.updatedAt),
    rackExternalId: t.rackExternalId,
    targetVersions: versionsToProto(t.versions),
    priorVersions: priorVersionsToProto(t.priorVersions),
    skippedComponents: skipsToProto(t.skippedComponents),
    failureDomain: t.failureDomain ?? "",
    ...(t.failureReportedBy === undefined ? {} : { failureReportedBy: actorToProto(t.failureReportedBy) }),
    ...(t.failureReportedAt === undefined ? {} : { failureReportedAt: msToDate(t.failureReportedAt) }),
  };
}

function skipsToProto(skips: readonly ComponentSkip[] | undefined): pb.ComponentSkip[] {
  return (skips ?? []).map((s) => ({
    componentId: uuidToProto(s.componentId),
    type: componentTypeToProto(s.type),
    reason: s.reason,
  }));
}

/** PlanOperationRun: planned targets carry no ids, task or timestamps; they are all PENDING. */
export function planToProto(result: {
  config: RunConfig;
  plan: Plan;
  rackExternalIds: ReadonlyMap<string, string>;
  nextWindowOpenings: readonly number[];
  versions?: ReadonlyMap<string, VersionGroup[]>;
  skipped?: ReadonlyMap<string, ComponentSkip[]>;
}): pb.PlanOperationRunResponse {
  return {
    configuration: runConfigToProto(result.config),
    candidateCount: result.plan.candidateCount,
    totalPhases: result.plan.phaseSizes.length,
    targets: result.plan.targets.map((t) => ({
      id: undefined,
      operationRunId: undefined,
      rackId: uuidToProto(t.rackId),
      sequenceIndex: t.sequenceIndex,
      phaseIndex: t.phaseIndex,
      taskId: undefined,
      status: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_PENDING,
      message: "",
      componentsByType: componentsByTypeToProto(t.componentsByType),
      createdAt: undefined,
      updatedAt: undefined,
      rackExternalId: result.rackExternalIds.get(t.rackId) ?? "",
      targetVersions: versionsToProto(result.versions?.get(t.rackId)),
      priorVersions: [],
      skippedComponents: skipsToProto(result.skipped?.get(t.rackId)),
      failureDomain: t.failureDomain ?? "",
    })),
    nextWindowOpenings: result.nextWindowOpenings.map((t) => msToDate(t)),
  };
}

export function buildInfoToProto(info: BuildInfo): pb.BuildInfo {
  return { version: info.version, buildTime: info.buildTime, gitCommit: info.gitCommit };
}
