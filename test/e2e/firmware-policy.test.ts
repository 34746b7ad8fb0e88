/**
 * Firmware policy end to end: a real gRPC client against the local stack
 * (moto, the dispatcher, the child-task ASL on aws-local-stepfunctions, the MQTT broker and the
 * simulated BMC fleet).
 *
 * Baselines: a run with no target_version upgrades every component to its most specific baseline,
 * skips those already there, and keeps the versions it froze when a baseline changes afterwards;
 * the same run with a type no baseline covers is InvalidArgument and writes nothing.
 *
 * Sub-targets: reach the simulated BMC (protocol v2) and nothing else is flashed, counted by the
 * simulator; the task report lists them per component; an unknown name lists the allowed ones.
 *
 * Readiness: a component whose BMC answers the preflight as not ready (fleet outcome `not-ready`),
 * or that inventory holds in MAINTENANCE, fails its target with `component <id> (<TYPE>) not
 * ready: <reason>` once the readiness timeout (4 s in this suite) passes, and passes with
 * override_readiness_check (a warning naming it in the report); a component made ready while the
 * task waits is flashed.
 *
 * Operation rules: a rule with two stages in the reverse of the default order runs in that order
 * (the simulator's command timestamps) and appears as applied_rule_id (the default rule's id when
 * none is pinned); the run keeps the version it was created with; an unknown rule_id is
 * InvalidArgument `rule <id> not found` and writes nothing; a rule's violations come all at once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NOT_READY_REASON } from "../../local/bmc-fleet.js";
import { DEFAULT_RULE_ID } from "../../src/domain/operation-rules.js";
import { ComponentType, OperationRunStatus, OperationRunTargetStatus } from "../../src/gen/flow/v1/flow.js";
import {
  type FirmwareBaseline as PbBaseline,
  ReadinessState,
  RuleAction,
} from "../../src/gen/flowadmin/v1/admin.js";
import { FAST_SUCCESS, rackGroup } from "../support/fixtures-inventory.js";
import {
  createRun,
  eventually,
  failure,
  listTargets,
  racksSpec,
  runRequest,
  startTestStack,
  stateOf,
  type TestStack,
  targetReport,
  waitForTerminal,
} from "../support/stack.js";

/** POWERSHELF already at 1.0.0 (its baseline), NVSWITCH and COMPUTE to upgrade; rack 0's COMPUTE is a GB200. */
const BASE = rackGroup(70, { name: "base", count: 3, types: ["POWERSHELF", "NVSWITCH", "COMPUTE"] });
BASE.racks[0]!.components[2]!.model = "GB200";
/** A CDU no baseline covers. */
const CDU = rackGroup(71, { name: "cdu", count: 1, types: ["CDU", "COMPUTE"] });
const SUB = rackGroup(72, { name: "sub", count: 2, types: ["COMPUTE", "NVSWITCH", "POWERSHELF"] });
/** BMCs that answer the preflight as not ready (and still flash when commanded). */
const NOT_READY = rackGroup(73, {
  name: "not-ready",
  count: 3,
  types: ["COMPUTE"],
  behaviour: { outcome: "not-ready", updateMs: 50 },
});
/** Racks whose components inventory holds in maintenance. */
const MAINT = rackGroup(74, { name: "maint", count: 2, types: ["COMPUTE"] });
const READINESS_TIMEOUT_MS = 4_000;
/** NVSWITCH then COMPUTE by default; a rule here runs COMPUTE first. */
const RULED = rackGroup(75, { name: "ruled", count: 3, types: ["NVSWITCH", "COMPUTE"] });

const T = OperationRunTargetStatus;
const baseline = (componentType: ComponentType, version: string, model = ""): PbBaseline => ({
  componentType,
  model,
  vendor: "",
  version,
});
const noVersion = { targetVersion: undefined };

let s: TestStack;

beforeAll(async () => {
  s = await startTestStack({
    label: "policy",
    groups: [BASE, CDU, SUB, NOT_READY, MAINT, RULED],
    defaults: FAST_SUCCESS,
    tickMs: 150,
    readinessTimeoutMs: READINESS_TIMEOUT_MS,
  });
  await s.admin.setFirmwareBaselines({
    baselines: [
      baseline(ComponentType.COMPONENT_TYPE_POWERSHELF, "1.0.0"),
      baseline(ComponentType.COMPONENT_TYPE_NVSWITCH, "2.0.0"),
      baseline(ComponentType.COMPONENT_TYPE_COMPUTE, "3.0.0"),
      baseline(ComponentType.COMPONENT_TYPE_COMPUTE, "3.1.0", "GB200"),
    ],
  });
});
afterAll(() => s?.stop());

async function listedTotal(): Promise<number> {
  return (await s.flow.listOperationRuns({ filter: undefined, pagination: { offset: 0, limit: 1 } })).total;
}

describe("firmware baselines", () => {
  it("the admin service lists what was set, most specific last within a type", async () => {
    const { baselines } = await s.admin.listFirmwareBaselines({});
    expect(baselines.map((b) => [ComponentType[b.componentType], b.model, b.version])).toEqual([
      ["COMPONENT_TYPE_COMPUTE", "", "3.0.0"],
      ["COMPONENT_TYPE_COMPUTE", "GB200", "3.1.0"],
      ["COMPONENT_TYPE_NVSWITCH", "", "2.0.0"],
      ["COMPONENT_TYPE_POWERSHELF", "", "1.0.0"],
    ]);
  });

  it("a run without target_version upgrades each component to its baseline, skips those at it, and keeps what it froze", async () => {
    const request = runRequest({ rackIds: BASE.ids, firmware: noVersion });
    const plan = await s.flow.planOperationRun(request);
    const rack0 = plan.targets.find((t) => t.rackId?.id === BASE.ids[0]);
    const [ps, nvs, gb200] = BASE.racks[0]!.components.map((c) => c.id);
    expect(rack0?.targetVersions).toEqual([
      { version: "1.0.0", componentIds: [{ id: ps }] },
      { version: "2.0.0", componentIds: [{ id: nvs }] },
      { version: "3.1.0", componentIds: [{ id: gb200 }] },
    ]);

    const id = await createRun(s.flow, request);
    // Frozen: a baseline edit after create does not re-plan the run.
    await s.admin.setFirmwareBaselines({
      baselines: [baseline(ComponentType.COMPONENT_TYPE_NVSWITCH, "9.9.9")],
    });
    const run = await waitForTerminal(s.flow, id);
    expect(stateOf(run).status, await targetReport(s.flow, id)).toBe(
      OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED,
    );
    const targets = await listTargets(s.flow, id);
    expect(targets.map((t) => t.status)).toEqual([
      T.OPERATION_RUN_TARGET_STATUS_COMPLETED,
      T.OPERATION_RUN_TARGET_STATUS_COMPLETED,
      T.OPERATION_RUN_TARGET_STATUS_COMPLETED,
    ]);
    expect(targets.find((t) => t.rackId?.id === BASE.ids[0])?.targetVersions).toEqual(rack0?.targetVersions);

    const { racks } = await s.admin.listRacks({ pagination: { offset: 0, limit: 100 } });
    const versions = racks
      .filter((r) => BASE.ids.includes(r.id?.id ?? ""))
      .flatMap((r) => r.components.map((c) => `${r.name}/${ComponentType[c.type]}=${c.firmwareVersion}`))
      .sort();
    expect(versions).toEqual([
      "base-0/COMPONENT_TYPE_COMPUTE=3.1.0",
      "base-0/COMPONENT_TYPE_NVSWITCH=2.0.0",
      "base-0/COMPONENT_TYPE_POWERSHELF=1.0.0",
      "base-1/COMPONENT_TYPE_COMPUTE=3.0.0",
      "base-1/COMPONENT_TYPE_NVSWITCH=2.0.0",
      "base-1/COMPONENT_TYPE_POWERSHELF=1.0.0",
      "base-2/COMPONENT_TYPE_COMPUTE=3.0.0",
      "base-2/COMPONENT_TYPE_NVSWITCH=2.0.0",
      "base-2/COMPONENT_TYPE_POWERSHELF=1.0.0",
    ]);
    expect(s.local.fleet!.versionOf(nvs ?? "")).toBe("2.0.0");
    // Each task's report: POWERSHELF skipped (already at its baseline), the others upgraded to theirs.
    const { tasks } = await s.flow.getTasksByIDs({ taskIds: targets.map((t) => t.taskId!) });
    const report = JSON.parse(tasks.find((t) => t.rackId?.id === BASE.ids[0])!.report);
    expect(report.v).toBe(2);
    expect(report.targetVersion).toBeUndefined();
    expect(
      report.components.map((c: { type: string; status: string; targetVersion?: string }) => [
        c.type,
        c.status,
        c.targetVersion,
      ]),
    ).toEqual([
      ["POWERSHELF", "SKIPPED", "1.0.0"],
      ["NVSWITCH", "COMPLETED", "2.0.0"],
      ["COMPUTE", "COMPLETED", "3.1.0"],
    ]);
    expect(tasks.map((t) => t.message).sort()).toEqual([
      "upgraded 2 components to 2.0.0, 3.0.0 (1 already at their version)",
      "upgraded 2 components to 2.0.0, 3.0.0 (1 already at their version)",
      "upgraded 2 components to 2.0.0, 3.1.0 (1 already at their version)",
    ]);
  });

  it("a type no baseline covers is InvalidArgument naming it, and nothing is written", async () => {
    const before = { total: await listedTotal(), items: await s.countItems() };
    const err = await failure(
      s.flow.createOperationRun(runRequest({ rackIds: CDU.ids, firmware: noVersion })),
    );
    expect(err).toEqual({
      code: "INVALID_ARGUMENT",
      details:
        "configuration.operation.upgrade_firmware.target_version: target_version is not set and no firmware baseline covers CDU",
    });
    expect(
      await failure(s.flow.planOperationRun(runRequest({ rackIds: CDU.ids, firmware: noVersion }))),
    ).toEqual(err);
    expect({ total: await listedTotal(), items: await s.countItems() }).toEqual(before);
    // The same racks with a target_version need no baseline.
    expect(
      (await s.flow.planOperationRun(runRequest({ rackIds: CDU.ids }))).targets[0]?.targetVersions,
    ).toEqual([]);
  });

  it("UpgradeFirmware without target_version resolves the baselines too, and names what they miss", async () => {
    const err = await failure(
      s.flow.upgradeFirmware({
        ...runRequestFirmware(),
        targetSpec: racksSpec(CDU.ids),
      }),
    );
    expect(err).toEqual({
      code: "INVALID_ARGUMENT",
      details: "target_version: target_version is not set and no firmware baseline covers CDU",
    });
  });

  it("DeleteFirmwareBaseline removes exactly one key; an unknown key is NotFound", async () => {
    const { baseline: removed } = await s.admin.deleteFirmwareBaseline({
      componentType: ComponentType.COMPONENT_TYPE_COMPUTE,
      model: "GB200",
      vendor: "",
    });
    expect(removed).toEqual(baseline(ComponentType.COMPONENT_TYPE_COMPUTE, "3.1.0", "GB200"));
    expect(
      await failure(
        s.admin.deleteFirmwareBaseline({
          componentType: ComponentType.COMPONENT_TYPE_COMPUTE,
          model: "GB200",
          vendor: "",
        }),
      ),
    ).toEqual({ code: "NOT_FOUND", details: 'no firmware baseline for COMPUTE model "GB200"' });
    expect(
      await failure(
        s.admin.setFirmwareBaselines({ baselines: [baseline(ComponentType.COMPONENT_TYPE_UNKNOWN, "")] }),
      ),
    ).toEqual({
      code: "INVALID_ARGUMENT",
      details:
        "baselines[0].component_type: must be a known component type (got UNKNOWN); baselines[0].version: must not be empty",
    });
  });
});

function runRequestFirmware() {
  const op = runRequest({ firmware: noVersion }).configuration?.operation?.operation;
  if (op?.$case !== "upgradeFirmware") throw new Error("runRequest builds an upgrade_firmware operation");
  return op.value;
}

describe("sub-targets", () => {
  it("reach the simulated BMC and nothing else is flashed; the report lists them per component", async () => {
    s.local.fleet!.resetStats();
    const id = await createRun(
      s.flow,
      runRequest({ rackIds: SUB.ids, firmware: { targetVersion: "5.0", subTargets: ["BIOS", "psu"] } }),
    );
    const run = await waitForTerminal(s.flow, id);
    expect(stateOf(run).status, await targetReport(s.flow, id)).toBe(
      OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED,
    );
    const targets = await listTargets(s.flow, id);
    // NVSWITCH has neither bios nor psu: not planned, so never commanded.
    expect(targets.map((t) => t.componentsByType?.groups.map((g) => ComponentType[g.type]))).toEqual([
      ["COMPONENT_TYPE_COMPUTE", "COMPONENT_TYPE_POWERSHELF"],
      ["COMPONENT_TYPE_COMPUTE", "COMPONENT_TYPE_POWERSHELF"],
    ]);
    const stats = s.local.fleet!.stats();
    expect({
      whole: stats.wholeFlashes,
      bySubTarget: stats.flashesBySubTarget,
      flashes: stats.flashes,
    }).toEqual({
      whole: 0,
      bySubTarget: { bios: 2, psu: 2 },
      flashes: 4,
    });
    const switches = SUB.racks.map((r) => r.components[1]!.id);
    expect(switches.map((c) => stats.updatesByComponent[c] ?? 0)).toEqual([0, 0]);
    const { tasks } = await s.flow.getTasksByIDs({ taskIds: targets.map((t) => t.taskId!) });
    const report = JSON.parse(tasks[0]!.report);
    expect(
      report.components.map((c: { type: string; subTargets?: string[] }) => [c.type, c.subTargets]),
    ).toEqual([
      ["POWERSHELF", ["psu"]],
      ["COMPUTE", ["bios"]],
    ]);
  });

  it("an unknown sub-target is InvalidArgument listing the allowed ones", async () => {
    expect(
      await failure(
        s.flow.createOperationRun(
          runRequest({ rackIds: SUB.ids, firmware: { subTargets: ["bmc", "gpuu"] } }),
        ),
      ),
    ).toEqual({
      code: "INVALID_ARGUMENT",
      details:
        'configuration.operation.upgrade_firmware.sub_targets[1]: unknown sub-target "gpuu"; allowed: COMPUTE: bmc, bios, cpld, gpu, nic; NVSWITCH: bmc, nvos, cpld; POWERSHELF: pmc, psu; TORSWITCH: nos, cpld; UMS: nos; CDU: controller',
    });
  });
});

describe("readiness", () => {
  const taskOf = async (runId: string) => {
    const [target] = await listTargets(s.flow, runId);
    const { tasks } = await s.flow.getTasksByIDs({ taskIds: [target!.taskId!] });
    return { target: target!, task: tasks[0]! };
  };
  const MAINTENANCE = { state: ReadinessState.READINESS_STATE_MAINTENANCE, reason: "swapping a PSU" };

  it("a BMC that answers not ready fails its target with the component, its type and the reason", async () => {
    const [component] = NOT_READY.racks[0]!.components;
    const id = await createRun(s.flow, runRequest({ rackIds: [NOT_READY.ids[0]!] }));
    const run = await waitForTerminal(s.flow, id);
    expect(stateOf(run).status).toBe(OperationRunStatus.OPERATION_RUN_STATUS_FAILED);
    const { target, task } = await taskOf(id);
    const message = `component ${component!.id} (COMPUTE) not ready: BMC reports not ready: ${NOT_READY_REASON}`;
    expect([target.status, target.message]).toEqual([T.OPERATION_RUN_TARGET_STATUS_FAILED, message]);
    expect(task.message).toBe(message);
    expect(JSON.parse(task.report).components[0].status).toBe("NOT_ATTEMPTED");
    expect(s.local.fleet!.stats().flashesByComponent[component!.id]).toBeUndefined();
  });

  it("override_readiness_check flashes it, with a warning naming it in the report and the log", async () => {
    const [component] = NOT_READY.racks[1]!.components;
    const id = await createRun(
      s.flow,
      runRequest({ rackIds: [NOT_READY.ids[1]!], firmware: { overrideReadinessCheck: true } }),
    );
    const run = await waitForTerminal(s.flow, id);
    expect(stateOf(run).status, await targetReport(s.flow, id)).toBe(
      OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED,
    );
    const { task } = await taskOf(id);
    const warning = `override_readiness_check: flashing components that are not ready: component ${component!.id} (COMPUTE): BMC reports not ready: ${NOT_READY_REASON}`;
    const report = JSON.parse(task.report);
    expect(report.warnings).toEqual([warning]);
    expect(report.overrideReadinessCheck).toBe(true);
    expect(
      s.logs.some(
        (l) =>
          l.startsWith(`warn readiness check overridden taskId=${task.id!.id}`) &&
          l.endsWith(` warning=${warning}`),
      ),
    ).toBe(true);
    expect(s.local.fleet!.versionOf(component!.id)).toBe("2.0.0");
  });

  it("inventory MAINTENANCE (set through the admin service) blocks too; the component made ready while the task waits is flashed", async () => {
    const [blocked] = MAINT.racks[0]!.components;
    const set = await s.admin.setComponentReadiness({
      componentId: { id: blocked!.id },
      readiness: MAINTENANCE,
    });
    expect(set.readiness).toEqual(MAINTENANCE);
    const failed = await createRun(s.flow, runRequest({ rackIds: [MAINT.ids[0]!] }));
    await waitForTerminal(s.flow, failed);
    expect((await taskOf(failed)).target.message).toBe(
      `component ${blocked!.id} (COMPUTE) not ready: in maintenance: swapping a PSU`,
    );

    const [waiting] = MAINT.racks[1]!.components;
    await s.admin.setComponentReadiness({ componentId: { id: waiting!.id }, readiness: MAINTENANCE });
    const passes = await createRun(s.flow, runRequest({ rackIds: [MAINT.ids[1]!] }));
    const taskId = await eventually(
      async () => (await listTargets(s.flow, passes))[0]?.taskId?.id,
      (id) => id !== undefined,
      "the run's task",
    );
    // The preflight says when it starts waiting; only then is the component made ready.
    await eventually(
      async () =>
        s.logs.some(
          (l) =>
            l.startsWith(`info task waiting for components to be ready taskId=${taskId}`) &&
            l.includes(" timeoutSeconds=4 "),
        ),
      (seen) => seen,
      "the preflight to wait for the component",
    );
    const ready = await s.admin.setComponentReadiness({
      componentId: { id: waiting!.id },
      readiness: { state: ReadinessState.READINESS_STATE_READY, reason: "" },
    });
    expect(ready.readiness).toBeUndefined();
    const run = await waitForTerminal(s.flow, passes);
    expect(stateOf(run).status, await targetReport(s.flow, passes)).toBe(
      OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED,
    );
  });

  it("readiness needs a reason, and a known component", async () => {
    expect(
      await failure(
        s.admin.setComponentReadiness({
          componentId: { id: MAINT.racks[0]!.components[0]!.id },
          readiness: { state: ReadinessState.READINESS_STATE_NOT_READY, reason: " " },
        }),
      ),
    ).toEqual({
      code: "INVALID_ARGUMENT",
      details: "readiness.reason: a NOT_READY component needs a reason",
    });
    const unknown = "00000074-ffff-4000-9000-000000000000";
    expect(
      await failure(s.admin.setComponentReadiness({ componentId: { id: unknown }, readiness: MAINTENANCE })),
    ).toEqual({ code: "NOT_FOUND", details: `component ${unknown} not found` });
  });
});

describe("operation rules", () => {
  const A = ComponentType;
  const update = {
    action: RuleAction.RULE_ACTION_UPDATE_FIRMWARE,
    timeoutSeconds: 0,
    retry: undefined,
    sleepSeconds: 0,
  };
  const stage = (name: string, ...componentTypes: ComponentType[]) => ({
    name,
    componentTypes,
    maxParallel: 0,
    steps: [update],
  });
  const computeFirst = {
    id: undefined,
    expectedVersion: undefined,
    name: "compute-first",
    description: "the reverse of the default order",
    stages: [stage("compute", A.COMPONENT_TYPE_COMPUTE), stage("switches", A.COMPONENT_TYPE_NVSWITCH)],
    readinessTimeoutSeconds: 0,
  };
  /** The rack's components by type, and when each one's first update reached its simulated BMC. */
  const commandTimes = (rack: number) => {
    const times = s.local.fleet!.stats().firstUpdateAtByComponent;
    const [nvswitch, compute] = RULED.racks[rack]!.components.map((c) => times[c.id] ?? Number.NaN);
    return { nvswitch: nvswitch!, compute: compute! };
  };
  let ruleId = "";

  it("a stored rule runs its stages in its order and is the task's applied_rule_id; no rule_id runs the default", async () => {
    const created = await s.admin.createOperationRule(computeFirst);
    ruleId = created.id?.id ?? "";
    expect([created.version, created.name, created.builtIn]).toEqual([1, "compute-first", false]);

    const id = await createRun(
      s.flow,
      runRequest({ rackIds: [RULED.ids[0]!], firmware: { ruleId: { id: ruleId } } }),
    );
    const plain = await createRun(s.flow, runRequest({ rackIds: [RULED.ids[1]!] }));
    for (const run of [id, plain]) {
      expect(stateOf(await waitForTerminal(s.flow, run)).status, await targetReport(s.flow, run)).toBe(
        OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED,
      );
    }
    const ruled = commandTimes(0);
    const byDefault = commandTimes(1);
    expect(ruled.compute, JSON.stringify(ruled)).toBeLessThan(ruled.nvswitch);
    expect(byDefault.nvswitch, JSON.stringify(byDefault)).toBeLessThan(byDefault.compute);

    const [ruledTarget] = await listTargets(s.flow, id);
    const [plainTarget] = await listTargets(s.flow, plain);
    const { tasks } = await s.flow.getTasksByIDs({ taskIds: [ruledTarget!.taskId!, plainTarget!.taskId!] });
    expect(tasks.map((t) => t.appliedRuleId?.id)).toEqual([ruleId, DEFAULT_RULE_ID]);
    const report = JSON.parse(tasks[0]!.report);
    expect([report.rule, report.groupOrder]).toEqual([
      { id: ruleId, version: 1, name: "compute-first" },
      ["COMPUTE", "NVSWITCH"],
    ]);
  });

  it("a run keeps the rule version it was created with; a new version replaces it for later runs", async () => {
    const id = await createRun(
      s.flow,
      runRequest({ rackIds: [RULED.ids[2]!], firmware: { ruleId: { id: ruleId } } }),
    );
    const v2 = await s.admin.createOperationRule({
      ...computeFirst,
      id: { id: ruleId },
      expectedVersion: 1,
      stages: [stage("switches", A.COMPONENT_TYPE_NVSWITCH), stage("compute", A.COMPONENT_TYPE_COMPUTE)],
    });
    expect(v2.version).toBe(2);
    await waitForTerminal(s.flow, id);
    const times = commandTimes(2);
    expect(times.compute, JSON.stringify(times)).toBeLessThan(times.nvswitch);
    const [target] = await listTargets(s.flow, id);
    const { tasks } = await s.flow.getTasksByIDs({ taskIds: [target!.taskId!] });
    expect(JSON.parse(tasks[0]!.report).rule.version).toBe(1);

    // Version 1 is still there, unchanged; the latest is 2; a stale expected version is refused.
    expect(
      (await s.admin.getOperationRule({ id: { id: ruleId }, version: 1 })).stages.map((x) => x.name),
    ).toEqual(["compute", "switches"]);
    expect((await s.admin.getOperationRule({ id: { id: ruleId }, version: undefined })).version).toBe(2);
    expect(
      await failure(s.admin.createOperationRule({ ...computeFirst, id: { id: ruleId }, expectedVersion: 1 })),
    ).toEqual({
      code: "FAILED_PRECONDITION",
      details: `rule ${ruleId} is at version 2, not the expected 1`,
    });
    const { rules, total } = await s.admin.listOperationRules({ pagination: undefined });
    expect(rules.map((r) => [r.id?.id, r.version, r.builtIn])).toEqual([
      [DEFAULT_RULE_ID, 1, true],
      [ruleId, 2, false],
    ]);
    expect(total).toBe(2);
  });

  it("an unknown rule_id, or a rule without a stage for a planned type, is InvalidArgument and writes nothing", async () => {
    const before = { total: await listedTotal(), items: await s.countItems() };
    const unknown = "0badc0de-0000-4000-8000-000000000013";
    expect(
      await failure(
        s.flow.createOperationRun(runRequest({ rackIds: RULED.ids, firmware: { ruleId: { id: unknown } } })),
      ),
    ).toEqual({
      code: "INVALID_ARGUMENT",
      details: `configuration.operation.upgrade_firmware.rule_id: rule ${unknown} not found`,
    });
    const switchesOnly = await s.admin.createOperationRule({
      ...computeFirst,
      name: "switches only",
      stages: [stage("switches", A.COMPONENT_TYPE_NVSWITCH)],
    });
    expect(
      await failure(
        s.flow.createOperationRun(
          runRequest({ rackIds: CDU.ids, firmware: { ruleId: switchesOnly.id, targetVersion: undefined } }),
        ),
      ),
    ).toEqual({
      code: "INVALID_ARGUMENT",
      details: `configuration.operation.upgrade_firmware.target_version: target_version is not set and no firmware baseline covers CDU; configuration.operation.upgrade_firmware.rule_id: rule ${switchesOnly.id?.id} (version 1) has no stage for COMPUTE, CDU`,
    });
    expect({ total: await listedTotal(), items: await s.countItems() }).toEqual(before);
    expect(await failure(s.admin.getOperationRule({ id: { id: unknown }, version: undefined }))).toEqual({
      code: "NOT_FOUND",
      details: `rule ${unknown} not found`,
    });
  });

  it("a rule's violations come all at once, each with its path", async () => {
    expect(
      await failure(
        s.admin.createOperationRule({
          ...computeFirst,
          name: "",
          stages: [
            { ...stage("a", A.COMPONENT_TYPE_COMPUTE), maxParallel: -1 },
            {
              ...stage("b", A.COMPONENT_TYPE_COMPUTE),
              steps: [{ ...update, retry: { maxRetries: 1, intervalSeconds: 1, backoffRate: 0.5 } }],
            },
          ],
        }),
      ),
    ).toEqual({
      code: "INVALID_ARGUMENT",
      details:
        "name: a rule needs a name; stages[0].max_parallel: must be 0 (the deployment's default) or more (got -1); stages[1].component_types[0]: COMPUTE is already in stages[0]; stages[1].steps[0].retry.backoff_rate: must be 1 or more (got 0.5)",
    });
    expect(await failure(s.admin.createOperationRule({ ...computeFirst, stages: [] }))).toEqual({
      code: "INVALID_ARGUMENT",
      details: "stages: a rule needs at least one stage",
    });
    expect(
      await failure(s.admin.createOperationRule({ ...computeFirst, id: { id: DEFAULT_RULE_ID } })),
    ).toEqual({
      code: "FAILED_PRECONDITION",
      details: `rule ${DEFAULT_RULE_ID} is the built-in default rule and cannot change`,
    });
  });

  it("a rule's readiness timeout replaces the deployment's", async () => {
    const quick = await s.admin.createOperationRule({
      ...computeFirst,
      name: "impatient",
      stages: [stage("compute", A.COMPONENT_TYPE_COMPUTE)],
      readinessTimeoutSeconds: 1,
    });
    const id = await createRun(
      s.flow,
      runRequest({ rackIds: [NOT_READY.ids[2]!], firmware: { ruleId: quick.id } }),
    );
    expect(stateOf(await waitForTerminal(s.flow, id)).status).toBe(
      OperationRunStatus.OPERATION_RUN_STATUS_FAILED,
    );
    const [target] = await listTargets(s.flow, id);
    expect(
      s.logs.some(
        (l) =>
          l.startsWith(`info task waiting for components to be ready taskId=${target!.taskId!.id}`) &&
          l.includes(" timeoutSeconds=1 "),
      ),
    ).toBe(true);
  });
});
