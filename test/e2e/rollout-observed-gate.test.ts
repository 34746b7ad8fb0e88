/**
 * The observed-failure-rate gate on a real rollout (local stack in-process: dispatcher, stream
 * wake-ups, the child-task ASL, MQTT and the simulated BMC fleet), beside the failed/planned gate
 * it improves on.
 *
 * 100 one-component racks, one phase, 5 at a time, gates in this order:
 *   [0] failure_rate 10% (failed / planned: needs 10 of the 100 to fail)
 *   [1] observed_failure_rate 50%, min finished 5 (failed / finished, judged from 5 finished on)
 * The first five racks of the seeded order fail; every other rack hangs (its update never ends),
 * so the first five targets to finish are exactly the five failures, whatever the timing. The
 * fifth failure trips gate [1] at 5/5 while gate [0] holds at 5/100.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type OperationRun,
  OperationRunEventKind,
  OperationRunSafetyGateScope,
  OperationRunStatus,
  OperationRunStatusReason,
  OperationRunTargetStatus,
} from "../../src/gen/flow/v1/flow.js";
import { FAST_FAILURE, fleetOf, HANG, rackGroup } from "../support/fixtures-inventory.js";
import {
  createRun,
  listTargets,
  observedRateGate,
  type RunSpec,
  rateGate,
  runRequest,
  startTestStack,
  stateOf,
  type TestStack,
  targetReport,
  waitForStatus,
} from "../support/stack.js";

const RACKS = rackGroup(52, { name: "observed", count: 100, types: ["COMPUTE"] });
const T = OperationRunTargetStatus;

const SPEC: RunSpec = {
  rackIds: RACKS.ids,
  seed: "observed-gate-selection",
  orderingSeed: "observed-gate-order",
  maxConcurrent: 5,
  gates: [rateGate(10), observedRateGate(50, 5)],
};

let s: TestStack;
let runId = "";
let failing: string[] = [];
let paused: OperationRun;

beforeAll(async () => {
  s = await startTestStack({ label: "observed-gate", groups: [RACKS], defaults: HANG, tickMs: 150 });
  const plan = await s.flow.planOperationRun(runRequest(SPEC));
  failing = [...plan.targets]
    .sort((a, b) => a.sequenceIndex - b.sequenceIndex)
    .slice(0, 5)
    .map((t) => t.rackId?.id ?? "");
  s.local.fleet!.setConfig(fleetOf([{ ...RACKS, ids: failing, behaviour: FAST_FAILURE }], HANG));
  runId = await createRun(s.flow, runRequest(SPEC));
  paused = await waitForStatus(s.flow, runId, [OperationRunStatus.OPERATION_RUN_STATUS_PAUSED], 100_000);
}, 150_000);

afterAll(async () => {
  await s?.stop();
});

describe("an observed_failure_rate gate of 50% after 5 finished, on 100 racks", () => {
  it("pauses with SAFETY_GATE on the observed gate at 5/5 finished failed, while failed/planned is 5/100", async () => {
    expect(stateOf(paused), await targetReport(s.flow, runId)).toEqual({
      status: OperationRunStatus.OPERATION_RUN_STATUS_PAUSED,
      reason: OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_SAFETY_GATE,
      message:
        "observed_failure_rate safety gate tripped for current_phase: 5/5 finished targets failed (100%, threshold 50%, min finished 5)",
    });
    expect(paused.stats?.currentPhaseStats).toMatchObject({
      selectedTargets: 100,
      outcomeCounts: { failed: 5, completed: 0 },
    });
  });

  it("the failed racks are exactly the first five of the seeded order", async () => {
    const targets = await listTargets(s.flow, runId);
    const failed = targets
      .filter((t) => t.status === T.OPERATION_RUN_TARGET_STATUS_FAILED)
      .map((t) => t.rackId?.id);
    expect(new Set(failed)).toEqual(new Set(failing));
  });

  it("the history records the verdict: gate 1, 5 failed, 5 finished, 100 selected", async () => {
    const listed = await s.flow.listOperationRunEvents({
      operationRunId: { id: runId },
      pagination: undefined,
    });
    const tripped = listed.events.filter(
      (e) => e.kind === OperationRunEventKind.OPERATION_RUN_EVENT_KIND_GATE_TRIPPED,
    );
    expect(tripped.map((e) => e.detail)).toEqual([
      {
        $case: "gate",
        value: {
          gateIndex: 1,
          gate: observedRateGate(
            50,
            5,
            OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE,
          ),
          failed: 5,
          selected: 100,
          finished: 5,
        },
      },
    ]);
  });
});
