import { describe, expect, it } from "vitest";
import { UsageError } from "../../cli/errors.js";
import { reportFailureRequest } from "../../cli/report-failure.js";
import * as pb from "../../src/gen/flow/v1/flow.js";

const RUN = "9a6f1a9e-0000-4000-8000-0000000000aa";
const RACK = "000000a1-0000-4000-8000-000000000001";
const TARGET = "7a6f1a9e-0000-4000-8000-0000000000bb";

/** A connection whose ListOperationRunTargets answers one target on rack EXT-A01, and records its requests. */
function conn() {
  const asked: pb.ListOperationRunTargetsRequest[] = [];
  const flow = {
    async listOperationRunTargets(request: pb.ListOperationRunTargetsRequest) {
      asked.push(request);
      return pb.ListOperationRunTargetsResponse.fromPartial({
        targets: [{ id: { id: TARGET }, rackId: { id: RACK }, rackExternalId: "EXT-A01" }],
        total: 1,
      });
    },
  };
  return { conn: { flow } as unknown as Parameters<typeof reportFailureRequest>[0], asked };
}

describe("flowctl run report-failure: which target", () => {
  it("a rack UUID is sent as rack_id, without a lookup", async () => {
    const { conn: c, asked } = conn();
    expect(await reportFailureRequest(c, RUN, RACK.toUpperCase(), "XID 79")).toEqual({
      id: { id: RUN },
      reason: "XID 79",
      targetId: undefined,
      rackId: { id: RACK },
    });
    expect(asked).toEqual([]);
  });

  it("an external id is looked up among the current and completed phases' targets and sent as target_id", async () => {
    const { conn: c, asked } = conn();
    expect(await reportFailureRequest(c, RUN, "EXT-A01", "link flaps")).toMatchObject({
      targetId: { id: TARGET },
      rackId: undefined,
    });
    expect(asked[0]?.phaseScope).toBe(
      pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_AND_COMPLETED_PHASES,
    );
  });

  it("an unknown external id and a missing or blank reason are usage errors that say what to do", async () => {
    const { conn: c } = conn();
    await expect(reportFailureRequest(c, RUN, "EXT-Z99", "x")).rejects.toEqual(
      new UsageError(
        `rack "EXT-Z99": no target of run ${RUN} on a rack with that external id in its current or completed phases (\`flowctl run targets ${RUN}\` lists them)`,
      ),
    );
    await expect(reportFailureRequest(c, RUN, RACK, "  ")).rejects.toEqual(
      new UsageError("--reason is required: why the rack failed (it becomes the target's message)"),
    );
    await expect(reportFailureRequest(c, RUN, RACK, undefined)).rejects.toBeInstanceOf(UsageError);
  });
});
