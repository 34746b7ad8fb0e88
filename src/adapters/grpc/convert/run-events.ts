/** The run history (src/domain/run-history.ts) → OperationRunEvent, for ListOperationRunEvents. */

import { type RunEventDetail, type RunHistoryEvent, runEventId } from "../../../domain/history-event.js";
import { assertNever } from "../../../domain/model.js";
import type * as pb from "../../../gen/flow/v1/flow.js";
import { actorToProto } from "./actor.js";
import { gateToProto } from "./config-response.js";
import { runEventKindToProto, runReasonToProto, runStatusToProto } from "./enums.js";
import { runStatsToProto } from "./run-response.js";
import { msToDate, msToDuration, uuidToProto } from "./well-known.js";

export { actorToProto } from "./actor.js";

export function runEventToProto(event: RunHistoryEvent): pb.OperationRunEvent {
  return {
    id: runEventId(event),
    operationRunId: uuidToProto(event.runId),
    kind: runEventKindToProto(event.kind),
    time: msToDate(event.at),
    state: { status: runStatusToProto(event.status), reason: runReasonToProto(event.reason) },
    message: event.message,
    phaseIndex: event.phaseIndex,
    totalPhases: event.totalPhases,
    stats: runStatsToProto(event.stats),
    actor: event.actor === undefined ? undefined : actorToProto(event.actor),
    detail: event.detail === undefined ? undefined : detailToProto(event.detail),
  };
}

function detailToProto(detail: RunEventDetail): NonNullable<pb.OperationRunEvent["detail"]> {
  switch (detail.type) {
    case "plan":
      return {
        $case: "plan",
        value: {
          targets: detail.targets,
          phaseSizes: [...detail.phaseSizes],
          selectionSeed: detail.selectionSeed,
          orderingSeed: detail.orderingSeed,
        },
      };
    case "gate":
      return {
        $case: "gate",
        value: {
          gateIndex: detail.gateIndex,
          gate: gateToProto(detail.gate),
          failed: detail.failed,
          selected: detail.selected,
          finished: detail.finished ?? 0,
        },
      };
    case "advance":
      return {
        $case: "advance",
        value: {
          fromPhaseIndex: detail.fromPhaseIndex,
          toPhaseIndex: detail.toPhaseIndex,
          expectedPhaseIndex: detail.expectedPhaseIndex ?? 0,
        },
      };
    case "cancel":
      return { $case: "cancel", value: { reason: detail.reason } };
    case "conflict":
      return {
        $case: "conflict",
        value: { targetId: uuidToProto(detail.targetId), blockedFor: msToDuration(detail.blockedForMs) },
      };
    case "window":
      return {
        $case: "window",
        value: {
          closesAt: msToDate(detail.closesAt),
          opensAt: msToDate(detail.opensAt),
          closedAt: msToDate(detail.closedAt),
        },
      };
    case "followUp":
      return {
        $case: "followUp",
        value: { operationRunId: uuidToProto(detail.runId), targets: detail.targets },
      };
    case "soak":
      return {
        $case: "soak",
        value: {
          phaseIndex: detail.phaseIndex,
          minSoak: msToDuration(detail.minSoakMs),
          endsAt: msToDate(detail.endsAt),
        },
      };
    case "lateFailure":
      return {
        $case: "lateFailure",
        value: {
          targetId: uuidToProto(detail.targetId),
          rackId: uuidToProto(detail.rackId),
          targetPhaseIndex: detail.targetPhaseIndex,
          reason: detail.reason,
        },
      };
    case "approval":
      return {
        $case: "approval",
        value: {
          minRacks: detail.minRacks,
          racks: detail.racks,
          requestedBy: detail.requestedBy === undefined ? undefined : actorToProto(detail.requestedBy),
        },
      };
    case "denial":
      return { $case: "denial", value: { rpc: detail.rpc, code: detail.code, reason: detail.reason } };
    case "externalCheck":
      return {
        $case: "externalCheck",
        value: {
          check: detail.check,
          targetId: uuidToProto(detail.targetId),
          rackId: detail.rackId,
          reason: detail.reason,
        },
      };
    default:
      return assertNever(detail);
  }
}
