/**
 * Retry and rollback runs through the run service (src/app/runs.ts, src/app/follow-up-runs.ts) on
 * the in-memory stores: which racks and components a retry and a rollback plan, with which
 * versions and template; the link recorded both ways in one commit (origin on the new run,
 * followUps and a RETRIED / ROLLED_BACK event on the old one); a dry run writes nothing; and
 * every refusal with its status code and message.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { createRunService, type RunsDeps } from "../../src/app/runs.js";
import type { CreateRunInput, TargetSpecInput } from "../../src/domain/create-run-input.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { OutcomeStatus, Run, Target } from "../../src/domain/model.js";
import { DEFAULT_RULE, type OperationRule } from "../../src/domain/operation-rules.js";
import type { Task } from "../../src/domain/task.js";
import { type ComponentProgress, initialReport, serializeReport } from "../../src/domain/task-report.js";
import { clockOf } from "../support/clock.js";
import { runningTask } from "../support/domain-fixtures.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import { everyImage, imageRecord } from "../support/memory-images.js";
import { MemoryInventoryStore, MemoryRunStore } from "../support/memory-stores.js";

const NOW = 1_700_000_200_000;
const ALL = { offset: 0, limit: 1000 };

/** Rack n: one NVSWITCH and one COMPUTE, both at 1.0.0 unless `versions` says otherwise. */
function rack(n: number, versions: Record<string, string> = {}): InventoryRack {
  const id = uuid(n, "aaaa0000");
  return {
    id,
    name: `rack-${n}`,
    externalId: `EXT-${n}`,
    components: (["NVSWITCH", "COMPUTE"] as const).map((type, i) => {
      const cid = componentId(n, i);
      return { id: cid, type, firmwareVersion: versions[cid] ?? "1.0.0" };
    }),
  };
}
const componentId = (n: number, i: number) => uuid(n * 10 + i, "cccc0000");
const rackId = (n: number) => uuid(n, "aaaa0000");

function request(
  changes: {
    firmware?: boolean;
    targetVersion?: string;
    phases?: number;
    targetSpec?: TargetSpecInput;
    ruleId?: string;
  } = {},
): CreateRunInput {
  return {
    name: "wave",
    description: "",
    configuration: {
      selector: { kind: "percentage", percentage: 100, seed: "cohort" },
      options: {
        maxConcurrentTargets: 2,
        safetyPolicy: { gates: [{ kind: "failureCount", scope: "CUMULATIVE_RUN", thresholdCount: 100 }] },
        orderingPolicy: { kind: "random", seed: "order" },
        phasePolicy: { plan: { kind: "equal", phaseCount: changes.phases ?? 1 } },
      },
      operation:
        changes.firmware === false
          ? {}
          : {
              upgradeFirmware: {
                description: "fw",
                targetVersion: changes.targetVersion ?? "2.0.0",
                subTargets: [],
                overrideReadinessCheck: false,
                overrideVersionCheck: false,
                ...(changes.targetSpec === undefined ? {} : { targetSpec: changes.targetSpec }),
                ...(changes.ruleId === undefined ? {} : { ruleId: changes.ruleId }),
              },
            },
    },
  };
}

let runs: MemoryRunStore;
let inventory: MemoryInventoryStore;
let tasks: Map<string, Task>;
let service: ReturnType<typeof createRunService>;
let ids = 0;

function setUp(images = everyImage, policy?: RunsDeps["policy"]) {
  runs = new MemoryRunStore();
  inventory = new MemoryInventoryStore([1, 2, 3, 4, 5].map((n) => rack(n)));
  tasks = new Map();
  ids = 0;
  service = createRunService({
    images,
    runs,
    inventory,
    tasks: {
      getTasks: async (taskIds) => taskIds.flatMap((id) => (tasks.has(id) ? [tasks.get(id) as Task] : [])),
    },
    clock: clockOf(() => NOW),
    newId: () => uuid(++ids, "1d000000"),
    ...(policy === undefined ? {} : { policy }),
  });
}
beforeEach(() => setUp());

async function targetsOf(runId: string): Promise<Target[]> {
  return (await runs.listTargets(runId, { phaseFrom: 0, phaseTo: 9, page: ALL }))?.targets ?? [];
}

/** The first run over racks 1-5: each rack's target ends as `outcomes` says, the run finishes. */
async function finishedRun(
  outcomes: Record<number, OutcomeStatus | "PENDING">,
  status: Run["status"] = "COMPLETED_WITH_FAILURES",
  ruleId?: string,
): Promise<Run> {
  const { id } = await service.createRun(request(ruleId === undefined ? {} : { ruleId }));
  for (const t of await targetsOf(id)) {
    const n = Number.parseInt(t.rackId.slice(-4), 10);
    const outcome = outcomes[n] ?? "COMPLETED";
    if (outcome === "PENDING") continue;
    if (outcome !== "SKIPPED") {
      expect(await runs.claimTarget(t, 30_000, NOW)).toBe("claimed");
      expect(await runs.recordSubmitted(id, t.id, `task-${n}`, NOW)).toBe("recorded");
    }
    expect(await runs.recordOutcome(id, t.id, outcome, outcome.toLowerCase(), NOW)).toBe("recorded");
  }
  const run = (await runs.getRun(id)) as Run;
  expect(await runs.saveRun({ ...run, status, updatedAt: run.updatedAt + 1 }, run.updatedAt)).toBe("saved");
  return (await runs.getRun(id)) as Run;
}

const retry = (
  runId: string,
  flags: { terminated?: boolean; skipped?: boolean } = {},
  base = request({ firmware: false }),
) => ({
  ...base,
  retry: { runId, includeTerminated: flags.terminated === true, includeSkipped: flags.skipped === true },
});
const rollback = (runId: string) => ({ ...request({ firmware: false }), rollback: { runId } });
const racksOf = (targets: Target[]) => targets.map((t) => t.rackId).sort();

describe("retry: the retried run's FAILED targets (optionally TERMINATED, SKIPPED), frozen components", () => {
  const rows: [string, { terminated?: boolean; skipped?: boolean }, number[]][] = [
    ["FAILED only", {}, [2, 4]],
    ["with --include-terminated", { terminated: true }, [2, 3, 4]],
    ["with --include-skipped", { skipped: true }, [2, 4, 5]],
    ["with both", { terminated: true, skipped: true }, [2, 3, 4, 5]],
  ];
  it.each(rows)("%s → racks %j", async (_, flags, expected) => {
    const first = await finishedRun({ 2: "FAILED", 3: "TERMINATED", 4: "FAILED", 5: "SKIPPED" });
    const { id } = await service.createRun(retry(first.id, flags));
    const targets = await targetsOf(id);
    expect(racksOf(targets)).toEqual(expected.map(rackId).sort());
    const frozen = new Map((await targetsOf(first.id)).map((t) => [t.rackId, t.componentsByType]));
    for (const t of targets) expect(t.componentsByType).toEqual(frozen.get(t.rackId));
  });

  it("the retried run's template (target_version 2.0.0) unless the request names one (3.0.0)", async () => {
    const first = await finishedRun({ 2: "FAILED" });
    const inherited = await service.createRun(retry(first.id));
    expect((await runs.getRun(inherited.id))?.config.operation.firmware.targetVersion).toBe("2.0.0");
    const own = await service.createRun(retry(first.id, {}, request({ targetVersion: "3.0.0" })));
    expect((await runs.getRun(own.id))?.config.operation.firmware.targetVersion).toBe("3.0.0");
  });

  it("an inherited template runs the rule version the retried run froze; a later version is not read", async () => {
    const RULE = uuid(7, "7a1e0000");
    const v1: OperationRule = { ...DEFAULT_RULE, id: RULE, version: 1 };
    // Version 2 has no stage for COMPUTE: read, it would refuse the retry.
    const v2: OperationRule = {
      ...v1,
      version: 2,
      stages: DEFAULT_RULE.stages.filter((s) => !s.componentTypes.includes("COMPUTE")),
    };
    let latest = v1;
    setUp(everyImage, {
      listBaselines: async () => [],
      getRule: async (id) => (id === RULE ? latest : undefined),
    });
    const first = await finishedRun({ 2: "FAILED" }, "COMPLETED_WITH_FAILURES", RULE);
    latest = v2;
    const { id } = await service.createRun(retry(first.id));
    expect((await runs.getRun(id))?.rule).toEqual(v1);
    // A template of the request's own reads the rule as any create does.
    await expect(service.createRun(retry(first.id, {}, request({ ruleId: RULE })))).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: `configuration.operation.upgrade_firmware.rule_id: rule ${RULE} (version 2) has no stage for COMPUTE`,
    });
  });

  it("the link both ways in one commit: origin on the retry, followUps and RETRIED on the retried run", async () => {
    const first = await finishedRun({ 2: "FAILED", 4: "FAILED" });
    const { id } = await service.createRun(retry(first.id, { terminated: true }));
    const made = (await runs.getRun(id)) as Run;
    expect(made.origin).toEqual({
      kind: "retry",
      runId: first.id,
      includeTerminated: true,
      includeSkipped: false,
    });
    const after = (await runs.getRun(first.id)) as Run;
    expect(after.followUps).toEqual([{ kind: "retry", runId: id }]);
    expect(after.status).toBe("COMPLETED_WITH_FAILURES");
    const history = (await runs.listRunEvents(first.id, ALL))?.events ?? [];
    expect(history.at(-1)).toMatchObject({
      kind: "RETRIED",
      message: `retried by run ${id}: 2 targets`,
      detail: { type: "followUp", runId: id, targets: 2 },
    });
    const own = (await runs.listRunEvents(id, ALL))?.events ?? [];
    expect(own[0]?.message).toBe(`operation run created: retry of run ${first.id}: 2 targets in 1 phase`);
    // A second retry appends.
    const again = await service.createRun(retry(first.id));
    expect((await runs.getRun(first.id))?.followUps).toEqual([
      { kind: "retry", runId: id },
      { kind: "retry", runId: again.id },
    ]);
  });

  it("the retried run changing between the read and the commit: read again, both links kept", async () => {
    const first = await finishedRun({ 2: "FAILED" });
    // A rival retry commits between this create's read of the run and its commit.
    runs.interleave("createRun", () => service.createRun(retry(first.id)));
    const { id } = await service.createRun(retry(first.id));
    const links = (await runs.getRun(first.id))?.followUps ?? [];
    expect(links).toHaveLength(2);
    expect(links.at(-1)).toEqual({ kind: "retry", runId: id });
  });

  it("a dry run answers the plan and writes nothing: no run, no link", async () => {
    const first = await finishedRun({ 2: "FAILED", 4: "FAILED" });
    const before = runs.writes();
    const plan = await service.planRun(retry(first.id));
    expect(plan.plan.targets.map((t) => t.rackId).sort()).toEqual([rackId(2), rackId(4)]);
    expect(runs.writes()).toBe(before);
    expect((await runs.getRun(first.id))?.followUps).toBeUndefined();
  });

  it("a component gone from inventory is left out", async () => {
    const first = await finishedRun({ 2: "FAILED", 4: "FAILED" });
    const two = rack(2);
    two.components = two.components.filter((c) => c.type === "COMPUTE");
    await inventory.upsertRacks([two]);
    const plan = await service.planRun(retry(first.id));
    const planned = plan.plan.targets.find((t) => t.rackId === rackId(2));
    expect(planned?.componentsByType).toEqual([{ type: "COMPUTE", componentIds: [componentId(2, 1)] }]);
  });
});

describe("rollback: flashed components back to their recorded prior versions", () => {
  /** Rack n's task: its components' flash progress, and the versions its preflight recorded. */
  async function flashed(
    run: Run,
    n: number,
    progress: [ComponentProgress, ComponentProgress],
    priors = ["0.9.0", "0.8.0"],
  ) {
    const target = (await targetsOf(run.id)).find((t) => t.rackId === rackId(n)) as Target;
    const report = initialReport(
      [0, 1].map((i) => ({
        id: componentId(n, i),
        type: i === 0 ? ("NVSWITCH" as const) : ("COMPUTE" as const),
      })),
      "2.0.0",
      false,
    );
    for (const c of report.components) c.status = progress[c.type === "NVSWITCH" ? 0 : 1];
    tasks.set(
      target.taskId as string,
      runningTask({ id: target.taskId as string, report: serializeReport(report) }),
    );
    await runs.recordPriorVersions(
      run.id,
      target.id,
      [0, 1].map((i) => ({
        componentId: componentId(n, i),
        type: i === 0 ? "NVSWITCH" : "COMPUTE",
        version: priors[i] as string,
        targetVersion: "2.0.0",
      })),
    );
  }

  it("flashed components (COMPLETED, FAILED, TERMINATED) back to their prior versions; others left alone, with why", async () => {
    const first = await finishedRun({
      1: "COMPLETED",
      2: "FAILED",
      3: "COMPLETED",
      4: "SKIPPED",
      5: "COMPLETED",
    });
    await flashed(first, 1, ["COMPLETED", "COMPLETED"]);
    await flashed(first, 2, ["FAILED", "NOT_ATTEMPTED"]);
    // Rack 3's compute is already back at its prior version (0.8.0) in inventory.
    await inventory.upsertRacks([rack(3, { [componentId(3, 0)]: "2.0.0", [componentId(3, 1)]: "0.8.0" })]);
    await flashed(first, 3, ["COMPLETED", "COMPLETED"]);
    // Rack 5 (no report: a task from before reports) and rack 4 (never submitted) flashed nothing.
    const plan = await service.planRun(rollback(first.id));
    const byRack = new Map(plan.plan.targets.map((t) => [t.rackId, t]));
    expect([...byRack.keys()].sort()).toEqual([rackId(1), rackId(2), rackId(3)]);
    expect(plan.versions?.get(rackId(1))).toEqual([
      { version: "0.9.0", componentIds: [componentId(1, 0)] },
      { version: "0.8.0", componentIds: [componentId(1, 1)] },
    ]);
    expect(plan.versions?.get(rackId(2))).toEqual([{ version: "0.9.0", componentIds: [componentId(2, 0)] }]);
    expect(plan.versions?.get(rackId(3))).toEqual([{ version: "0.9.0", componentIds: [componentId(3, 0)] }]);
    expect(byRack.get(rackId(2))?.componentsByType).toEqual([
      { type: "NVSWITCH", componentIds: [componentId(2, 0)] },
    ]);
    expect(plan.skipped?.get(rackId(2))).toEqual([
      { componentId: componentId(2, 1), type: "COMPUTE", reason: "never flashed" },
    ]);
    expect(plan.skipped?.get(rackId(3))).toEqual([
      { componentId: componentId(3, 1), type: "COMPUTE", reason: "already at its prior version 0.8.0" },
    ]);
    // The rolled-back run's template, with no target_version: each component has its own.
    expect(plan.config.operation.firmware.targetVersion).toBeUndefined();
    expect(plan.config.operation.firmware.overrideVersionCheck).toBe(false);
  });

  it("the created rollback: targets frozen with the prior versions, the link both ways", async () => {
    const first = await finishedRun({});
    await flashed(first, 1, ["COMPLETED", "COMPLETED"]);
    const { id } = await service.createRun(rollback(first.id));
    const [target] = await targetsOf(id);
    expect(target?.versions).toEqual([
      { version: "0.9.0", componentIds: [componentId(1, 0)] },
      { version: "0.8.0", componentIds: [componentId(1, 1)] },
    ]);
    expect((await runs.getRun(id))?.origin).toEqual({ kind: "rollback", runId: first.id });
    expect((await runs.getRun(first.id))?.followUps).toEqual([{ kind: "rollback", runId: id }]);
    const history = (await runs.listRunEvents(first.id, ALL))?.events ?? [];
    expect(history.at(-1)).toMatchObject({
      kind: "ROLLED_BACK",
      message: `rolled back by run ${id}: 1 target`,
    });
  });

  it("a prior version with no image in the catalog → InvalidArgument listing each type and version", async () => {
    setUp({
      getImages: async (keys) =>
        keys.filter((k) => k.version !== "0.9.0" && k.version !== "0.8.0").map((k) => imageRecord(k)),
    });
    const first = await finishedRun({});
    await flashed(first, 1, ["COMPLETED", "COMPLETED"]);
    await expect(service.createRun(rollback(first.id))).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message:
        "rollback: no firmware image is registered for COMPUTE 0.8.0, NVSWITCH 0.9.0; upload one with flowctl firmware upload",
    });
  });
});

describe("refusals", () => {
  const unknown = uuid(999, "eeee0000");
  it("retry or rollback of an unknown run → NotFound", async () => {
    await expect(service.createRun(retry(unknown))).rejects.toMatchObject({
      code: "NOT_FOUND",
      message: `operation run to retry not found: ${unknown}`,
    });
    await expect(service.planRun(rollback(unknown))).rejects.toMatchObject({
      code: "NOT_FOUND",
      message: `operation run to roll back not found: ${unknown}`,
    });
  });

  it("of a run not finished → FailedPrecondition naming its status", async () => {
    const { id } = await service.createRun(request());
    const message = (verb: string) =>
      `operation run ${id} is PENDING; only a finished run (COMPLETED, COMPLETED_WITH_FAILURES, FAILED or CANCELLED) can be ${verb}`;
    await expect(service.createRun(retry(id))).rejects.toMatchObject({
      code: "FAILED_PRECONDITION",
      message: message("retried"),
    });
    await expect(service.createRun(rollback(id))).rejects.toMatchObject({
      code: "FAILED_PRECONDITION",
      message: message("rolled back"),
    });
  });

  it("nothing to retry → InvalidArgument naming the statuses asked for", async () => {
    const first = await finishedRun({ 3: "TERMINATED" }, "COMPLETED_WITH_FAILURES");
    await expect(service.createRun(retry(first.id))).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: "retry.operation_run_id: no failed targets",
    });
    await expect(service.createRun(retry(first.id, { skipped: true }))).rejects.toMatchObject({
      message: "retry.operation_run_id: no failed or skipped targets",
    });
    expect((await service.planRun(retry(first.id, { terminated: true }))).plan.targets).toHaveLength(1);
  });

  it("nothing to roll back → InvalidArgument saying why", async () => {
    const first = await finishedRun(
      { 1: "SKIPPED", 2: "SKIPPED", 3: "SKIPPED", 4: "SKIPPED", 5: "SKIPPED" },
      "CANCELLED",
    );
    await expect(service.createRun(rollback(first.id))).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: "rollback.operation_run_id: nothing to roll back: 5 targets never submitted",
    });
  });

  const bad: [string, CreateRunInput, string][] = [
    [
      "a malformed id",
      {
        ...request({ firmware: false }),
        retry: { runId: "nope", includeTerminated: false, includeSkipped: false },
      },
      "retry.operation_run_id: must be the id of an operation run",
    ],
    [
      "retry and rollback at once",
      { ...retry(unknown), rollback: { runId: unknown } },
      "rollback: a run retries or rolls back another, not both: set retry or rollback",
    ],
    [
      "a target_spec in a retry",
      retry(
        unknown,
        {},
        request({
          targetSpec: { kind: "racks", racks: [{ ref: { by: "id", id: rackId(1) }, componentTypes: [] }] },
        }),
      ),
      "configuration.operation.upgrade_firmware.target_spec: must be unset in a retry run: its racks are the retried run's",
    ],
    [
      "an upgrade_firmware in a rollback",
      { ...request(), rollback: { runId: unknown } },
      "configuration.operation.upgrade_firmware: must be unset in a rollback run: each component goes back to its recorded prior version with the rolled-back run's template",
    ],
  ];
  it.each(bad)("%s → InvalidArgument, nothing read", async (_, input, message) => {
    await expect(service.createRun(input)).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message });
    expect(runs.calls.of("getRun")).toBe(0);
  });
});
