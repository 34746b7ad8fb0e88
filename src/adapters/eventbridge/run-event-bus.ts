/**
 * The run history on EventBridge: one event per history event, on the configured bus (the
 * account's `default` unless told otherwise), so platform teams route rollout events with their
 * own rules (a gate trip to a pager, every state change to a chat channel).
 *
 *   Source      flow.operation-runs
 *   DetailType  Operation Run Gate Tripped   (GATE_TRIPPED)
 *               Operation Run State Change   (every other kind)
 *   Time        when the change was written
 *   Detail      the versioned document below (`runEventDetail`), version "1"
 *
 * Detail, version 1 (docs/deploy.md shows it whole):
 *   { "version": "1", "eventId": "<run id>/<version>.<position>", "kind": "GATE_TRIPPED",
 *     "time": "2026-11-20T10:00:03.120Z", "runId": "…", "runName": "canary", "status": "PAUSED",
 *     "reason": "SAFETY_GATE", "message": "failure_count safety gate tripped for …",
 *     "phaseIndex": 1, "totalPhases": 3,
 *     "counts": { "currentPhase": { "phaseIndex": 1, "selected": 33, "completed": 9, "failed": 3,
 *                                   "terminated": 0, "skipped": 0 },
 *                 "cumulative":   { "phaseIndex": 1, "selected": 67, … } },
 *     "actor": null | { "name", "source", "authenticated", "subjectAltNames", "declaredName"?, "issuer"? },
 *     and, for their kinds only: "plan", "gate", "advance", "cancel", "conflict", "window" }
 * Fields are added within a version, never renamed or retyped; a change that would break a
 * consumer's rule is version "2". `eventId` is stable across retries: consumers dedupe on it
 * (publication is at-least-once, see src/app/run-event-relay.ts).
 */
import {
  type EventBridgeClient,
  PutEventsCommand,
  type PutEventsRequestEntry,
} from "@aws-sdk/client-eventbridge";
import type { RunEventBus } from "../../app/ports.js";
import type { Actor } from "../../domain/actor.js";
import { gateKindName } from "../../domain/gates.js";
import { type RunEventDetail, type RunHistoryEvent, runEventId } from "../../domain/history-event.js";
import { assertNever } from "../../domain/model.js";
import type { PhaseStats } from "../../domain/stats.js";

export const RUN_EVENT_SOURCE = "flow.operation-runs";
export const DETAIL_TYPE_STATE_CHANGE = "Operation Run State Change";
export const DETAIL_TYPE_GATE_TRIPPED = "Operation Run Gate Tripped";
export const RUN_EVENT_DETAIL_VERSION = "1";

/** PutEvents takes at most 10 entries a call. */
const MAX_ENTRIES = 10;

export class EventBridgeRunEventBus implements RunEventBus {
  constructor(
    private readonly client: EventBridgeClient,
    /** A bus name or ARN; `default` is the account's default bus. */
    private readonly busName: string,
  ) {}

  async publish(events: readonly RunHistoryEvent[]): Promise<{ rejected: number[] }> {
    const rejected: number[] = [];
    for (let start = 0; start < events.length; start += MAX_ENTRIES) {
      const chunk = events.slice(start, start + MAX_ENTRIES);
      const out = await this.client.send(
        new PutEventsCommand({ Entries: chunk.map((e) => runEventEntry(e, this.busName)) }),
      );
      // Entries answer in request order; a failed one has an ErrorCode and no EventId.
      (out.Entries ?? []).forEach((entry, i) => {
        if (entry.ErrorCode !== undefined || entry.EventId === undefined) rejected.push(start + i);
      });
    }
    return { rejected };
  }
}

export function runEventEntry(event: RunHistoryEvent, busName: string): PutEventsRequestEntry {
  return {
    EventBusName: busName,
    Source: RUN_EVENT_SOURCE,
    DetailType: event.kind === "GATE_TRIPPED" ? DETAIL_TYPE_GATE_TRIPPED : DETAIL_TYPE_STATE_CHANGE,
    Time: new Date(event.at),
    Detail: JSON.stringify(runEventDetail(event)),
  };
}

/** The detail document, version 1 (the module comment). */
export function runEventDetail(event: RunHistoryEvent): Record<string, unknown> {
  const detail: Record<string, unknown> = {
    version: RUN_EVENT_DETAIL_VERSION,
    eventId: runEventId(event),
    kind: event.kind,
    time: iso(event.at),
    runId: event.runId,
    runName: event.runName,
    status: event.status,
    reason: event.reason,
    message: event.message,
    phaseIndex: event.phaseIndex,
    totalPhases: event.totalPhases,
    counts: { currentPhase: countsOf(event.stats.current), cumulative: countsOf(event.stats.cumulative) },
    actor: event.actor === undefined ? null : actorDetail(event.actor),
  };
  if (event.detail !== undefined) Object.assign(detail, kindDetail(event.detail));
  return detail;
}

function actorDetail(actor: Actor): Record<string, unknown> {
  return {
    name: actor.name,
    source: actor.source,
    authenticated: actor.authenticated,
    subjectAltNames: actor.subjectAltNames,
    ...(actor.declaredName === undefined ? {} : { declaredName: actor.declaredName }),
    ...(actor.issuer === undefined ? {} : { issuer: actor.issuer }),
  };
}

function countsOf(stats: PhaseStats): Record<string, number> {
  return { phaseIndex: stats.phaseIndex, selected: stats.selectedTargets, ...stats.outcomes };
}

function kindDetail(detail: RunEventDetail): Record<string, unknown> {
  switch (detail.type) {
    case "plan":
      return {
        plan: {
          targets: detail.targets,
          phaseSizes: detail.phaseSizes,
          selectionSeed: detail.selectionSeed,
          orderingSeed: detail.orderingSeed,
        },
      };
    case "gate": {
      const { gate } = detail;
      return {
        gate: {
          index: detail.gateIndex,
          kind: gateKindName(gate).toUpperCase(),
          scope: gate.scope,
          // A percentage for FAILURE_RATE and OBSERVED_FAILURE_RATE, a number of targets for FAILURE_COUNT.
          threshold: gate.kind === "failureCount" ? gate.thresholdCount : gate.thresholdPercent,
          failed: detail.failed,
          selected: detail.selected,
          ...(gate.kind === "observedFailureRate"
            ? { finished: detail.finished ?? null, minFinished: gate.minFinished }
            : {}),
        },
      };
    }
    case "advance":
      return {
        advance: {
          fromPhaseIndex: detail.fromPhaseIndex,
          toPhaseIndex: detail.toPhaseIndex,
          expectedPhaseIndex: detail.expectedPhaseIndex ?? null,
        },
      };
    case "cancel":
      return { cancel: { reason: detail.reason } };
    case "conflict":
      return { conflict: { targetId: detail.targetId, blockedForMs: detail.blockedForMs } };
    case "window":
      return {
        window: {
          closesAt: optionalIso(detail.closesAt),
          opensAt: optionalIso(detail.opensAt),
          closedAt: optionalIso(detail.closedAt),
        },
      };
    case "followUp":
      return { followUp: { runId: detail.runId, targets: detail.targets } };
    case "soak":
      return {
        soak: { phaseIndex: detail.phaseIndex, minSoakMs: detail.minSoakMs, endsAt: iso(detail.endsAt) },
      };
    case "lateFailure":
      return {
        lateFailure: {
          targetId: detail.targetId,
          rackId: detail.rackId,
          targetPhaseIndex: detail.targetPhaseIndex,
          reason: detail.reason,
        },
      };
    case "approval":
      return {
        approval: {
          minRacks: detail.minRacks,
          racks: detail.racks,
          requestedBy: detail.requestedBy === undefined ? null : actorDetail(detail.requestedBy),
        },
      };
    case "denial":
      return { denial: { rpc: detail.rpc, code: detail.code, reason: detail.reason } };
    case "externalCheck":
      return {
        externalCheck: {
          check: detail.check,
          targetId: detail.targetId,
          rackId: detail.rackId,
          reason: detail.reason,
        },
      };
    default:
      return assertNever(detail);
  }
}

const iso = (ms: number): string => new Date(ms).toISOString();
const optionalIso = (ms: number | undefined): string | null => (ms === undefined ? null : iso(ms));
