/**
 * The child task's external-check steps on in-memory stores: AwaitExternalCheck's hand-over
 * (the request, the rack lock kept for the whole wait, a check that cannot be reached), and
 * JudgeExternalCheck's verdicts (pass: the next cursor; fail: HealthCheckFailed; inconclusive: a
 * report warning and the run paused, once).
 */
import { describe, expect, it } from "vitest";
import {
  type ChildTaskSettings,
  DEFAULT_CHILD_TASK_SETTINGS,
  type UpgradeGroup,
} from "../../src/app/child-task/settings.js";
import { createTaskSteps } from "../../src/app/child-task/steps.js";
import type { ExternalCheckRunner, RunStore } from "../../src/app/ports.js";
import type { ExternalCheckConfig, ExternalCheckRequest } from "../../src/domain/external-check.js";
import type { Run } from "../../src/domain/model.js";
import { runConfig, runningTask } from "../support/domain-fixtures.js";
import { memoryLockStore, memoryTaskStore } from "../support/memory-child-task.js";

const NOW = 1_000_000;
const settings: ChildTaskSettings = { ...DEFAULT_CHILD_TASK_SETTINGS };
const CHECK: ExternalCheckConfig = {
  name: "dcgm",
  target: { kind: "https", url: "https://c.example" },
  timeoutSeconds: 7200,
};
const groups: UpgradeGroup[] = [
  {
    stage: 0,
    name: "trays",
    componentIds: ["c-1", "c-2"],
    maxParallel: 2,
    steps: [
      { action: "UPDATE_FIRMWARE", timeoutSeconds: 0, sleepSeconds: 0 },
      {
        action: "CHECK_HEALTH",
        timeoutSeconds: 0,
        sleepSeconds: 0,
        externalCheck: { name: "dcgm", timeoutSeconds: 0 },
      },
    ],
    facts: {
      types: { "c-1": "COMPUTE", "c-2": "COMPUTE" },
      versions: { "c-1": "2.0.0", "c-2": "2.0.0" },
      runId: "run-1",
      leaseEnd: NOW + 60_000,
    },
  },
];
const cursor = {
  group: 0,
  wave: 0,
  step: 1,
  attempt: 0,
  more: true,
  retry: false,
  waitSeconds: 0,
  external: { name: "dcgm", timeoutSeconds: 7200 },
};

function harness(runner: ExternalCheckRunner) {
  const tasks = memoryTaskStore();
  const locks = memoryLockStore();
  let run: Run = {
    id: "run-1",
    name: "r",
    description: "",
    config: runConfig(),
    status: "RUNNING",
    reason: "NONE",
    statusMessage: "",
    phaseSizes: [1],
    currentPhaseIndex: 0,
    counters: [],
    inFlight: 1,
    createdAt: 0,
    updatedAt: 10,
  };
  const saves: Run[] = [];
  const runs: Pick<RunStore, "getRun" | "saveRun"> = {
    getRun: async () => structuredClone(run),
    saveRun: async (next, expected) => {
      if (expected !== run.updatedAt) return "stale";
      run = structuredClone(next);
      saves.push(next);
      return "saved";
    },
  };
  const steps = createTaskSteps({
    tasks,
    locks,
    clock: () => NOW,
    externalChecks: { checks: [CHECK], runner, runs },
  } as never);
  return { steps, tasks, locks, saves };
}

/** AwaitExternalCheck's step: rack r-1 of task t-1 to the cursor's check, with token "tok". */
const HAND_OVER = {
  step: "startExternalCheck",
  taskId: "t-1",
  rackId: "r-1",
  token: "tok",
  groups,
  cursor,
  settings,
} as const;

describe("AwaitExternalCheck: the hand-over", () => {
  it("hands the check the rack and its components with the token, and keeps the rack lock for the whole wait", async () => {
    const sent: ExternalCheckRequest[] = [];
    const h = harness({ start: async (_, request) => void sent.push(request) });
    await h.tasks.createTask(runningTask({ runId: "run-1" }));
    await h.locks.acquire("r-1", "t-1", 60_000, NOW);
    await h.steps.handle(HAND_OVER);
    expect(sent).toEqual([
      {
        taskToken: "tok",
        check: "dcgm",
        checkId: "t-1.s0",
        taskId: "t-1",
        runId: "run-1",
        rackId: "r-1",
        stage: "trays",
        components: [
          { id: "c-1", type: "COMPUTE", version: "2.0.0" },
          { id: "c-2", type: "COMPUTE", version: "2.0.0" },
        ],
        timeoutSeconds: 7200,
        requestedAt: new Date(NOW).toISOString(),
      },
    ]);
    expect((await h.locks.get("r-1"))?.expiresAt).toBeGreaterThanOrEqual(NOW + 7200 * 1000);
  });

  it("a rack another task holds is RackLockHeld, and nothing is handed over", async () => {
    const sent: ExternalCheckRequest[] = [];
    const h = harness({ start: async (_, request) => void sent.push(request) });
    await h.locks.acquire("r-1", "t-other", 600_000, NOW);
    await expect(h.steps.handle(HAND_OVER)).rejects.toMatchObject({ name: "RackLockHeld" });
    expect(sent).toEqual([]);
  });

  it("a check that cannot be reached is ExternalCheckUnavailable, naming the rack, the check and why", async () => {
    const h = harness({
      start: async () => {
        throw new Error("c.example answered 503");
      },
    });
    await h.tasks.createTask(runningTask({ runId: "run-1" }));
    await expect(h.steps.handle(HAND_OVER)).rejects.toMatchObject({
      name: "ExternalCheckUnavailable",
      message: "could not hand rack r-1 to external check dcgm: c.example answered 503",
    });
  });
});

describe("JudgeExternalCheck: the verdict", () => {
  const judge = (h: ReturnType<typeof harness>, checked: unknown) =>
    h.steps.handle({
      step: "judgeExternalCheck",
      taskId: "t-1",
      rackId: "r-1",
      settings,
      groups,
      cursor,
      checked,
    });
  const next = { group: 1, wave: 0, step: 0, attempt: 0, more: false, retry: false, waitSeconds: 0 };

  it("pass: the next cursor, without the check", async () => {
    const h = harness({ start: async () => {} });
    expect(await judge(h, { verdict: "pass" })).toEqual(next);
    expect(h.saves).toEqual([]);
  });

  it("fail: HealthCheckFailed with the check's reason", async () => {
    const h = harness({ start: async () => {} });
    await expect(judge(h, { verdict: "fail", reason: "GPU 5" })).rejects.toMatchObject({
      name: "HealthCheckFailed",
      message: "external check dcgm failed: GPU 5",
    });
  });

  it("inconclusive: a warning in the report and the run paused, once; the next cursor", async () => {
    const h = harness({ start: async () => {} });
    await h.tasks.createTask(
      runningTask({ runId: "run-1", targetId: "tg-1", report: JSON.stringify({ v: 2, components: [] }) }),
    );
    expect(await judge(h, { Error: "States.Timeout", Cause: "" })).toEqual(next);
    const [task] = await h.tasks.getTasks(["t-1"]);
    expect((JSON.parse(task!.report) as { warnings?: string[] }).warnings).toEqual([
      "external check dcgm inconclusive: no verdict within 7200 s",
    ]);
    expect(h.saves.map((r) => [r.status, r.reason])).toEqual([["PAUSED", "EXTERNAL_CHECK_INCONCLUSIVE"]]);
    // A retried judge (the Lambda retried) adds nothing: the warning is there, the run paused.
    await judge(h, { Error: "States.Timeout", Cause: "" });
    expect(h.saves).toHaveLength(1);
  });
});
