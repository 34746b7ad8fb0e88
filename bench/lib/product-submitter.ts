/**
 * The dispatch benchmark's child tasks as the product runs them, minus the flash: the real task
 * service (src/app/child-task/task-service.ts: rack lock, task under its idempotency key, start)
 * as the dispatcher's submitter, and an executor whose "execution" leaves in the task's update set
 * what its wave's SendWave and its BMC would (one command, its result), waits `taskMs` and then
 * runs the real last state of the child-task machine: the last wave's CheckWave, which reads the
 * results with the task and records the successful outcome (task, run target, rack lock, wake-up),
 * as task-steps would. So a freed slot's refill costs here what it costs the product: every store
 * round trip from that check to the next StartExecution, the check's read of the results first.
 *
 * Each task's end opens a refill chain (bench/lib/work-scope.ts) that the wake-up's pass, its
 * claim and the next submission inherit through the async context; `start` marks the chain's
 * submission. The executor is idempotent per task id, like Step Functions: a repeated start
 * starts nothing and is counted in `duplicateStarts`.
 */

import { DEFAULT_CHILD_TASK_SETTINGS, type StepEvent } from "../../src/app/child-task/settings.js";
import { createTaskSteps, type TaskSteps } from "../../src/app/child-task/steps.js";
import { createTaskService } from "../../src/app/child-task/task-service.js";
import type {
  ChildTaskSubmitter,
  CommandSetStore,
  RackLockStore,
  RunStore,
  RunWaker,
  TaskExecutor,
  TaskStore,
} from "../../src/app/ports.js";
import { entryKey, updateAddress } from "../../src/domain/command-sets.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { Task } from "../../src/domain/task.js";
import { parseReport, targetOf } from "../../src/domain/task-report.js";
import { currentScope, inScope, type RefillChain } from "./work-scope.js";

export interface ProductSubmitterOptions {
  tasks: TaskStore;
  /** The tasks' command sets: each task's one update command, read with the task by its last check. */
  commands: CommandSetStore;
  runs: RunStore;
  locks: RackLockStore;
  taskMs: number;
  clock: () => number;
  /** The outcome recorder's wake-up (the direct mode); absent: the stream and the tick only. */
  waker?: RunWaker;
  /** Called at each task's end, before its outcome is recorded. */
  onTaskEnd?: () => void;
  /** Called at each StartExecution. */
  onStart?: () => void;
}

export interface ProductSubmitter {
  submitter: ChildTaskSubmitter;
  chains: RefillChain[];
  /** Task ids started more than once (a rack flashed twice): must be empty. */
  duplicateStarts(): string[];
  /** Resolves when every task started has ended and recorded its outcome. */
  settle(): Promise<void>;
}

const unused = (what: string) => () => {
  throw new Error(`the dispatch benchmark's tasks do not ${what}`);
};

export function productSubmitter(options: ProductSubmitterOptions): ProductSubmitter {
  const chains: RefillChain[] = [];
  let submissions = 0;
  const starts = new Map<string, number>();
  const running = new Set<Promise<unknown>>();
  // The real step handlers; only the last state's is called (the others would flash).
  const { commands } = options;
  const steps: TaskSteps = createTaskSteps({
    tasks: options.tasks,
    runs: options.runs,
    locks: options.locks,
    commands: {
      open: unused("open BMC commands"),
      reopen: unused("re-ask BMCs"),
      markPublished: unused("publish"),
      close: unused("close command sets"),
      awaitAnswers: unused("wait for BMC answers"),
      record: unused("receive reports"),
      get: (taskId, family, part) => commands.get(taskId, family, part),
      getUpdates: (taskId, parts) => commands.getUpdates(taskId, parts),
      ...(commands.getWithTask === undefined ? {} : { getWithTask: commands.getWithTask.bind(commands) }),
      getMany: unused("list BMC commands"),
    },
    secrets: { put: unused("store secrets"), get: unused("read secrets") },
    images: { getImages: unused("read firmware images") },
    imageUrls: { presignGet: unused("presign image URLs") },
    sealer: { seal: unused("seal credentials") },
    publisher: { publish: unused("publish") },
    // The inventory has none of these racks: the versions are recorded nowhere (beside the wake-up,
    // after the end, off the refill path in the product too).
    firmware: { record: async () => {} },
    readiness: { notReady: unused("check readiness"), rackComponents: unused("read a rack") },
    clock: options.clock,
    ...(options.waker ? { waker: options.waker } : {}),
  });
  const executor: TaskExecutor & { executionIdFor(taskId: string): string } = {
    executionIdFor: (taskId) => `arn:aws:states:us-east-1:000000000000:execution:bench:${taskId}`,
    async start(task: Task) {
      const executionId = executor.executionIdFor(task.id);
      starts.set(task.id, (starts.get(task.id) ?? 0) + 1);
      if ((starts.get(task.id) ?? 0) > 1) return { executionId };
      const scope = currentScope();
      const chain = scope?.chain;
      if (chain !== undefined && chain.submittedAt === undefined) {
        chain.submittedAt = performance.now();
        if (scope?.submission !== undefined) chain.submittedBy = scope.submission;
      }
      options.onStart?.();
      const startedAt = performance.now();
      // After the StartExecution, so on no chain's path (roundTrips stops at the submission).
      const ended = lastWave(task)
        .then(async (check) => {
          const left = options.taskMs - (performance.now() - startedAt);
          await new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, left)));
          return check;
        })
        .then((check) => {
          const next: RefillChain = { id: chains.length, startedAt: performance.now(), calls: [] };
          chains.push(next);
          options.onTaskEnd?.();
          return inScope({ part: "outcome", chain: next }, () => steps.handle(check));
        });
      running.add(ended);
      void ended.finally(() => running.delete(ended)).catch(() => undefined);
      return { executionId };
    },
    async stop() {},
  };
  /**
   * What the task's one wave leaves in its update set's part (SendWave's command, its BMC's
   * result: two writes) and the event of the check that finds it: the last step of the last wave,
   * as the product plans it now (its group's updates in the stage's part).
   */
  async function lastWave(task: Task): Promise<StepEvent> {
    const report = parseReport(task.report);
    const first = report.components[0];
    const component = first ?? { id: "bench-bmc", type: "COMPUTE" as const };
    const version = first === undefined ? "1.0.0" : targetOf(report, first);
    const key = entryKey(updateAddress(task.id, 0, 0), component.id);
    const now = options.clock();
    const deadline = now + 3_600_000;
    await commands.open(task.id, "u", { [key]: { sentAt: now, deadline } }, 0);
    await commands.record(
      task.id,
      "u",
      { [key]: { result: { value: { ok: true, version }, at: now }, ackedAt: now } },
      { part: 0 },
    );
    const step = { action: "UPDATE_FIRMWARE" as const, timeoutSeconds: 0, sleepSeconds: 0 };
    return {
      step: "checkWave",
      taskId: task.id,
      rackId: task.rackId,
      settings: { ...DEFAULT_CHILD_TASK_SETTINGS },
      groups: [
        { stage: 0, part: 0, name: "bench", componentIds: [component.id], maxParallel: 1, steps: [step] },
      ],
      cursor: { group: 0, wave: 0, step: 0, attempt: 0, more: true, retry: false, waitSeconds: 0 },
      wave: {
        stage: 0,
        step: 0,
        action: "UPDATE_FIRMWARE",
        attempt: 0,
        timeoutSeconds: 3_600,
        part: 0,
        componentIds: [component.id],
        types: { [component.id]: component.type },
        versions: { [component.id]: version },
        deadline,
        polls: 0,
        waitSeconds: 1,
        done: false,
      },
    };
  }

  const service = createTaskService({
    tasks: options.tasks,
    runs: options.runs,
    locks: options.locks,
    inventory: {
      getRacksByIds: async (): Promise<InventoryRack[]> => [],
    } as never,
    secrets: { put: unused("store secrets"), get: unused("read secrets") },
    images: { getImages: unused("read firmware images") },
    commands: options.commands,
    firmware: { record: unused("record firmware") },
    executor,
    clock: options.clock,
    newId: unused("make random ids"),
    ...(options.waker ? { waker: options.waker } : {}),
  });
  return {
    submitter: {
      submit: (request, now) =>
        inScope({ part: "submit", submission: submissions++ }, () => service.submitter.submit(request, now)),
      cancel: (taskId, reason) => service.submitter.cancel(taskId, reason),
    },
    chains,
    duplicateStarts: () => [...starts.entries()].filter(([, n]) => n > 1).map(([id]) => id),
    async settle() {
      while (running.size > 0) await Promise.allSettled([...running]);
    },
  };
}
