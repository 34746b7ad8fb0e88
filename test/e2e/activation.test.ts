/**
 * Activation end to end on the local stack (gRPC, the dispatcher, the child-task ASL, the broker
 * and the simulated fleet): racks whose BMCs stage every flash until the reset their type needs
 * (POWERSHELF a BMC reset, NVSWITCH and COMPUTE an AC cycle). A run with the built-in rule
 * completes with every component active, read back after its reset; a run whose rule leaves the
 * activation out fails its rack with every component NotActivated, the new version still pending;
 * a rack whose BMCs turn unhealthy after their flash fails at the rule's CHECK_HEALTH with the
 * health reason.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UNHEALTHY_REASON } from "../../local/bmc-fleet.js";
import { ComponentType, OperationRunStatus, OperationRunTargetStatus } from "../../src/gen/flow/v1/flow.js";
import { RuleAction } from "../../src/gen/flowadmin/v1/admin.js";
import { rackGroup } from "../support/fixtures-inventory.js";
import {
  createRun,
  listTargets,
  runRequest,
  startTestStack,
  stateOf,
  type TestStack,
  targetReport,
  waitForTerminal,
} from "../support/stack.js";

const STAGED = rackGroup(76, {
  name: "staged",
  count: 2,
  types: ["POWERSHELF", "NVSWITCH", "COMPUTE"],
  behaviour: { outcome: "succeed", updateMs: 50, activation: "type", resetMs: 50 },
});

const SICK = rackGroup(77, {
  name: "sick",
  count: 1,
  types: ["COMPUTE"],
  behaviour: { outcome: "succeed", updateMs: 50, unhealthyAfterFlash: true },
});

let s: TestStack;

beforeAll(async () => {
  s = await startTestStack({ label: "activation", groups: [STAGED, SICK], tickMs: 150 });
});
afterAll(() => s?.stop());

describe("activation on the local stack", () => {
  it("the default rule: every component active after the reset its type needs, read back", async () => {
    const id = await createRun(s.flow, runRequest({ rackIds: [STAGED.ids[0]!] }));
    const run = await waitForTerminal(s.flow, id);
    expect(stateOf(run).status, await targetReport(s.flow, id)).toBe(
      OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED,
    );
    const fleet = s.local.fleet!;
    for (const c of STAGED.racks[0]!.components) expect(fleet.versionOf(c.id)).toBe("2.0.0");
    const [target] = await listTargets(s.flow, id);
    const { tasks } = await s.flow.getTasksByIDs({ taskIds: [target!.taskId!] });
    const report = JSON.parse(tasks[0]!.report) as {
      components: { type: string; status: string; versionAfter: string }[];
    };
    expect(report.components.map((c) => [c.type, c.status, c.versionAfter])).toEqual([
      ["POWERSHELF", "COMPLETED", "2.0.0"],
      ["NVSWITCH", "COMPLETED", "2.0.0"],
      ["COMPUTE", "COMPLETED", "2.0.0"],
    ]);
    expect(fleet.stats()).toMatchObject({ resetsByKind: { bmc: 1, ac: 2 }, activations: 3 });
  });

  it("a rule without activation: the rack fails, every component NotActivated with its pending version", async () => {
    const rule = await s.admin.createOperationRule({
      id: undefined,
      expectedVersion: undefined,
      name: "stage-only",
      description: "flash now, activate in a later maintenance",
      stages: [
        {
          name: "all",
          componentTypes: [
            ComponentType.COMPONENT_TYPE_POWERSHELF,
            ComponentType.COMPONENT_TYPE_NVSWITCH,
            ComponentType.COMPONENT_TYPE_COMPUTE,
          ],
          maxParallel: 3,
          steps: [
            {
              action: RuleAction.RULE_ACTION_UPDATE_FIRMWARE,
              timeoutSeconds: 0,
              retry: undefined,
              sleepSeconds: 0,
            },
          ],
        },
      ],
      readinessTimeoutSeconds: 0,
    });
    const rack = STAGED.racks[1]!;
    const id = await createRun(
      s.flow,
      runRequest({ rackIds: [rack.id], firmware: { ruleId: { id: rule.id!.id } } }),
    );
    await waitForTerminal(s.flow, id);
    const [target] = await listTargets(s.flow, id);
    const first = rack.components[0]!.id;
    expect([target?.status, target?.message]).toEqual([
      OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_FAILED,
      `component ${first} (POWERSHELF): BMC runs 1.0.0 with 2.0.0 pending: flashed but not active (no activation step follows); 2 more component(s) failed`,
    ]);
    const { tasks } = await s.flow.getTasksByIDs({ taskIds: [target!.taskId!] });
    const report = JSON.parse(tasks[0]!.report) as {
      components: { status: string; error?: { name: string } }[];
    };
    expect(report.components.map((c) => [c.status, c.error?.name])).toEqual(
      Array(3).fill(["FAILED", "NotActivated"]),
    );
    for (const c of rack.components) expect(s.local.fleet!.versionOf(c.id)).toBe("1.0.0");
  });

  it("a rack that turns unhealthy after its flash fails at CHECK_HEALTH with the health reason", async () => {
    const step = (action: RuleAction) => ({ action, timeoutSeconds: 0, retry: undefined, sleepSeconds: 0 });
    const rule = await s.admin.createOperationRule({
      id: undefined,
      expectedVersion: undefined,
      name: "flash-then-health",
      description: "",
      stages: [
        {
          name: "trays",
          componentTypes: [ComponentType.COMPONENT_TYPE_COMPUTE],
          maxParallel: 0,
          steps: [
            step(RuleAction.RULE_ACTION_UPDATE_FIRMWARE),
            step(RuleAction.RULE_ACTION_WAIT_BRING_UP),
            step(RuleAction.RULE_ACTION_CHECK_HEALTH),
          ],
        },
      ],
      readinessTimeoutSeconds: 0,
    });
    const rack = SICK.racks[0]!;
    const id = await createRun(
      s.flow,
      runRequest({ rackIds: [rack.id], firmware: { ruleId: { id: rule.id!.id } } }),
    );
    await waitForTerminal(s.flow, id);
    const [target] = await listTargets(s.flow, id);
    expect([target?.status, target?.message]).toEqual([
      OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_FAILED,
      `component ${rack.components[0]!.id} (COMPUTE): check-health: BMC reports health Critical: ${UNHEALTHY_REASON}`,
    ]);
  });
});
