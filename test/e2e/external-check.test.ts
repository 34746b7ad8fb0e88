/**
 * External health checks end to end on the local stack (gRPC, the dispatcher, the child-task ASL
 * with its AwaitExternalCheck task token, the simulated fleet, and a command per check): a rule's
 * CHECK_HEALTH step names a check the stack was started with; the check is handed the rack and
 * its upgraded components on its stdin and answers on its stdout. Pass completes the rack; fail
 * fails it with the check's reason; inconclusive completes it and pauses the run with its own
 * reason until a person resumes it; a check that never answers is inconclusive at its timeout; a
 * rule naming a check the deployment does not have is InvalidArgument naming the field.
 * Each test has a rack, a rule and a run of its own, so they run at once on the one stack.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ExternalCheckConfig } from "../../src/domain/external-check.js";
import {
  ComponentType,
  OperationRunStatus,
  OperationRunStatusReason,
  OperationRunTargetStatus,
} from "../../src/gen/flow/v1/flow.js";
import { RuleAction } from "../../src/gen/flowadmin/v1/admin.js";
import { rackGroup } from "../support/fixtures-inventory.js";
import { eventually } from "../support/poll.js";
import {
  createRun,
  failure,
  getRun,
  listTargets,
  runRequest,
  startTestStack,
  stateOf,
  type TestStack,
  targetReport,
  waitForStatus,
  waitForTerminal,
} from "../support/stack.js";

const RACKS = rackGroup(78, {
  name: "checked",
  count: 4,
  types: ["COMPUTE"],
  behaviour: { outcome: "succeed", updateMs: 50 },
});

/** A check command: keeps its request in `dir`, then prints the verdict it was given. */
const SCRIPT = `let s = "";
process.stdin.on("data", (d) => (s += d)).on("end", () => {
  const r = JSON.parse(s);
  require("node:fs").writeFileSync(require("node:path").join(process.argv[2], r.check + "-" + r.rackId + ".json"), s);
  console.log("checking rack " + r.rackId);
  if (process.argv[1] !== "silent") console.log(process.argv[1]);
  else setTimeout(() => {}, 60000);
});`;

const dir = mkdtempSync(join(tmpdir(), "flow-external-check-"));
const check = (name: string, verdict: unknown, timeoutSeconds = 30): ExternalCheckConfig => ({
  name,
  target: {
    kind: "command",
    argv: [
      process.execPath,
      "-e",
      SCRIPT,
      typeof verdict === "string" ? verdict : JSON.stringify(verdict),
      dir,
    ],
  },
  timeoutSeconds,
});
const FAIL_REASON = "dcgmi diag -r 3: GPU 5 failed the memory test";
const VAGUE_REASON = "2 of 4 hosts did not answer";

let s: TestStack;

beforeAll(async () => {
  s = await startTestStack({
    label: "external-check",
    groups: [RACKS],
    tickMs: 150,
    externalChecks: [
      check("says-pass", { verdict: "pass" }),
      check("says-fail", { verdict: "fail", reason: FAIL_REASON }),
      check("says-inconclusive", { verdict: "inconclusive", reason: VAGUE_REASON }),
      check("never-answers", "silent", 2),
    ],
  });
});
afterAll(async () => {
  await s?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const step = (action: RuleAction, externalCheck?: string) => ({
  action,
  timeoutSeconds: 0,
  retry: undefined,
  sleepSeconds: 0,
  ...(externalCheck === undefined ? {} : { externalCheck }),
});

async function ruleChecking(name: string): Promise<string> {
  const rule = await s.admin.createOperationRule({
    id: undefined,
    expectedVersion: undefined,
    name: `flash-then-${name}`,
    description: "",
    stages: [
      {
        name: "trays",
        componentTypes: [ComponentType.COMPONENT_TYPE_COMPUTE],
        maxParallel: 0,
        steps: [
          step(RuleAction.RULE_ACTION_UPDATE_FIRMWARE),
          step(RuleAction.RULE_ACTION_CHECK_HEALTH, name),
        ],
      },
    ],
    readinessTimeoutSeconds: 0,
  });
  return rule.id!.id;
}

const runOn = async (rack: number, checkName: string) =>
  createRun(
    s.flow,
    runRequest({ rackIds: [RACKS.ids[rack]!], firmware: { ruleId: { id: await ruleChecking(checkName) } } }),
  );

describe.concurrent("external health checks on the local stack", () => {
  it("pass: the check is handed the rack and its upgraded components, and the rack completes", async () => {
    const id = await runOn(0, "says-pass");
    const run = await waitForTerminal(s.flow, id);
    expect(stateOf(run).status, await targetReport(s.flow, id)).toBe(
      OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED,
    );
    const rack = RACKS.racks[0]!;
    const [target] = await listTargets(s.flow, id);
    const request = JSON.parse(readFileSync(join(dir, `says-pass-${rack.id}.json`), "utf8")) as Record<
      string,
      unknown
    >;
    expect(request).toEqual({
      taskToken: expect.stringMatching(/^local-token:/),
      check: "says-pass",
      checkId: `${target!.taskId!.id}.s0`,
      taskId: target!.taskId!.id,
      runId: id,
      rackId: rack.id,
      stage: "trays",
      components: rack.components.map((c) => ({ id: c.id, type: "COMPUTE", version: "2.0.0" })),
      timeoutSeconds: 30,
      requestedAt: expect.any(String),
    });
  });

  it("fail: the rack fails with the check's reason", async () => {
    const id = await runOn(1, "says-fail");
    const run = await waitForTerminal(s.flow, id);
    expect(stateOf(run).status).toBe(OperationRunStatus.OPERATION_RUN_STATUS_FAILED);
    const [target] = await listTargets(s.flow, id);
    expect([target?.status, target?.message]).toEqual([
      OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_FAILED,
      `external check says-fail failed: ${FAIL_REASON}`,
    ]);
  });

  it("inconclusive: the rack completes, the run pauses with its reason until a person resumes it", async () => {
    const id = await runOn(2, "says-inconclusive");
    const paused = await waitForStatus(s.flow, id, [OperationRunStatus.OPERATION_RUN_STATUS_PAUSED]);
    expect(stateOf(paused)).toEqual({
      status: OperationRunStatus.OPERATION_RUN_STATUS_PAUSED,
      reason: OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_EXTERNAL_CHECK_INCONCLUSIVE,
      message: `external check says-inconclusive inconclusive on rack ${RACKS.ids[2]}: ${VAGUE_REASON}; look at the rack, then resume the run or report the rack failed`,
    });
    // The pause and the rack's completion are two writes: the pause may be seen first.
    const [target] = await eventually(
      () => listTargets(s.flow, id),
      ([t]) => t?.status === OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_COMPLETED,
      "the rack's target to complete",
    );
    const { tasks } = await s.flow.getTasksByIDs({ taskIds: [target!.taskId!] });
    expect((JSON.parse(tasks[0]!.report) as { warnings?: string[] }).warnings).toEqual([
      `external check says-inconclusive inconclusive: ${VAGUE_REASON}`,
    ]);
    // Still paused: nothing but a person lifts it.
    expect(stateOf(await getRun(s.flow, id)).status).toBe(OperationRunStatus.OPERATION_RUN_STATUS_PAUSED);
    await s.flow.resumeOperationRun({ id: { id } });
    expect(stateOf(await waitForTerminal(s.flow, id)).status).toBe(
      OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED,
    );
  });

  it("no verdict within the check's timeout is inconclusive: the run pauses", async () => {
    const id = await runOn(3, "never-answers");
    const paused = await waitForStatus(s.flow, id, [OperationRunStatus.OPERATION_RUN_STATUS_PAUSED]);
    expect(stateOf(paused)).toEqual({
      status: OperationRunStatus.OPERATION_RUN_STATUS_PAUSED,
      reason: OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_EXTERNAL_CHECK_INCONCLUSIVE,
      message: `external check never-answers inconclusive on rack ${RACKS.ids[3]}: no verdict within 2 s; look at the rack, then resume the run or report the rack failed`,
    });
  });

  it("a rule naming a check the deployment does not have is InvalidArgument naming the field", async () => {
    expect(await failure(ruleChecking("dcgm"))).toEqual({
      code: "INVALID_ARGUMENT",
      details:
        'stages[0].steps[1].external_check: unknown external check "dcgm" (configured: never-answers, says-fail, says-inconclusive, says-pass)',
    });
  });
});
