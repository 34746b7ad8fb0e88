/**
 * The wave steps' harness (src/app/child-task/waves.ts, wave-check.ts) on in-memory stores typed
 * from the ports: a running task of two COMPUTE trays and a power shelf in a run, every store call
 * a test reads counted (the task reads, the command sets' reads by kind), every command published
 * kept, and the clock at 5,000.
 */
import type { StepDeps } from "../../src/app/child-task/deps.js";
import {
  DEFAULT_CHILD_TASK_SETTINGS,
  type StepEventOf,
  type UpgradeGroup,
  type WaveState,
} from "../../src/app/child-task/settings.js";
import { silentLogger } from "../../src/app/observability.js";
import type { BmcCommand } from "../../src/domain/bmc-protocol.js";
import type { BmcAddress } from "../../src/domain/bmc-topics.js";
import type { CommandFamily, CommandSet } from "../../src/domain/command-sets.js";
import { mergeParts } from "../../src/domain/command-sets.js";
import type { Task } from "../../src/domain/task.js";
import { initialReport, serializeReport } from "../../src/domain/task-report.js";
import { runningTask } from "./domain-fixtures.js";
import { memoryCommandSetStore, memoryLockStore, memoryTaskStore } from "./memory-child-task.js";
import { everyImage } from "./memory-images.js";

export const settings = { ...DEFAULT_CHILD_TASK_SETTINGS, maxParallel: 2 };
export const report = initialReport(
  [
    { id: "c1", type: "COMPUTE", targetVersion: "2.1.0" },
    { id: "c2", type: "COMPUTE", subTargets: ["bios"] },
    { id: "p1", type: "POWERSHELF" },
  ],
  "2.0.0",
  false,
);
export const task: Task = runningTask({
  componentIds: ["c1", "c2", "p1"],
  updatedAt: 1_000,
  startedAt: 1_000,
  report: serializeReport(report),
  runId: "run-1",
});

export function harness(stored: Task = task) {
  const inner = memoryTaskStore();
  let reads = 0;
  const tasks = {
    ...inner,
    getTasks: async (ids: string[]) => {
      reads += 1;
      return inner.getTasks(ids);
    },
  };
  const published: { componentId: string; command: BmcCommand }[] = [];
  const recorded: { rackId: string; versions: unknown; at?: Record<string, number> }[] = [];
  const memory = memoryCommandSetStore();
  // The store's one-request read of a task with its sets, counted (each `get` too).
  const calls: string[] = [];
  const commands = {
    ...memory,
    get: async (taskId: string, family: CommandFamily, part?: number) => {
      calls.push(part === undefined ? `get ${family}` : `get ${family}.${part}`);
      return memory.get(taskId, family, part);
    },
    getWithTask: async (
      taskId: string,
      families: readonly CommandFamily[],
      parts: readonly number[] = [],
    ) => {
      calls.push(`getWithTask ${[...families, ...parts.map((p) => `u.${p}`)].join(",")}`.trim());
      const [found] = await inner.getTasks([taskId]);
      const sets: Partial<Record<CommandFamily, CommandSet>> = {};
      for (const f of families) {
        const set = await memory.get(taskId, f);
        if (set !== undefined) sets[f] = set;
      }
      if (parts.length > 0) {
        const merged = mergeParts(
          sets.u,
          await Promise.all(parts.map((part) => memory.get(taskId, "u", part))),
        );
        if (merged !== undefined) sets.u = merged;
      }
      return { task: found, sets };
    },
  };
  const deps = {
    tasks,
    commands,
    locks: memoryLockStore(),
    firmware: {
      record: async (rackId: string, versions: unknown, at?: Record<string, number>) =>
        void recorded.push({ rackId, versions, at }),
    },
    runs: {
      getRunSecrets: async (runId: string) =>
        runId === "run-1" ? { kind: "shared" as const, secret: "s3cret" } : undefined,
      // The harness's task is no run's target: nothing calls this.
      recordOutcome: async () => "recorded",
    },
    secrets: { get: async () => undefined },
    sealer: { seal: async (secret: string) => ({ sealed: `sealed:${secret}` }) },
    publisher: {
      publish: async ({ componentId }: BmcAddress, command: BmcCommand) =>
        void published.push({ componentId, command }),
    },
    clock: () => 5_000,
    images: everyImage,
    imageUrls: {
      presignGet: async (key: string, seconds: number) => `https://images.example/${key}?expires=${seconds}`,
    },
    logger: silentLogger,
  } as unknown as StepDeps;
  return {
    deps,
    commands,
    calls,
    published,
    recorded,
    reads: () => reads,
    stored: async () => (await inner.getTasks([task.id]))[0],
    create: () => inner.createTask(stored),
  };
}

export const group = (facts: UpgradeGroup["facts"]): UpgradeGroup => ({
  stage: 0,
  name: "compute",
  componentIds: ["c1", "c2"],
  maxParallel: 2,
  steps: [{ action: "UPDATE_FIRMWARE", timeoutSeconds: 0, sleepSeconds: 0 }],
  ...(facts === undefined ? {} : { facts }),
});

export const event = (g: UpgradeGroup): StepEventOf<"sendWave"> => ({
  step: "sendWave",
  taskId: task.id,
  rackId: task.rackId,
  settings,
  groups: [g],
  cursor: { group: 0, wave: 0, step: 0, attempt: 0, more: true, retry: false, waitSeconds: 0 },
});

/** c1's update as a check made it, one component a wave: its window from 4 s, a deadline at 9 s. */
export const firstUpdateWave = (): WaveState => ({
  stage: 0,
  step: 0,
  action: "UPDATE_FIRMWARE",
  attempt: 0,
  timeoutSeconds: 60,
  componentIds: ["c1"],
  types: { c1: "COMPUTE" },
  versions: { c1: "2.1.0" },
  deadline: 9_000,
  polls: 0,
  waitSeconds: 1,
  done: false,
});
