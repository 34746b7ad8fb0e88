/**
 * `flowctl run report-failure RUN RACK --reason TEXT`: a rack that completed is reported failed
 * afterwards (ReportTargetFailure). RACK is the rack's UUID, or its external id as `run targets`
 * shows it; an external id is looked up among the run's listed targets (the current and completed
 * phases: only a completed target can be reported).
 */
import * as pb from "../src/gen/flow/v1/flow.js";
import type { Connection } from "./client.js";
import { UsageError } from "./errors.js";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PAGE = 1000;

/** The request for `rack` of run `runId`: by rack id for a UUID, else by the target listed with that external id. */
export async function reportFailureRequest(
  conn: Pick<Connection, "flow">,
  runId: string,
  rack: string,
  reason: string | undefined,
): Promise<pb.ReportTargetFailureRequest> {
  if (reason === undefined || reason.trim() === "") {
    throw new UsageError("--reason is required: why the rack failed (it becomes the target's message)");
  }
  const base = { id: { id: runId }, reason, targetId: undefined, rackId: undefined };
  const name = rack.trim();
  if (UUID_RE.test(name)) return { ...base, rackId: { id: name.toLowerCase() } };
  const listed = await conn.flow.listOperationRunTargets(
    pb.ListOperationRunTargetsRequest.fromPartial({
      operationRunId: { id: runId },
      phaseScope:
        pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_AND_COMPLETED_PHASES,
      pagination: { offset: 0, limit: PAGE },
    }),
  );
  const target = listed.targets.find((t) => t.rackExternalId === name);
  if (target?.id === undefined) {
    throw new UsageError(
      `rack ${JSON.stringify(name)}: no target of run ${runId} on a rack with that external id in its current or completed phases (\`flowctl run targets ${runId}\` lists them)`,
    );
  }
  return { ...base, targetId: { id: target.id.id } };
}
