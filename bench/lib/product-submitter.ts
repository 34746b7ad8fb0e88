/**
 * The dispatch benchmark's child tasks as the product runs them, minus the flash: the real task
 * service (src/app/child-task/task-service.ts: rack lock, task under its idempotency key, start)
 * as the dispatcher's submitter, and an executor whose "execution" waits `taskMs` and then runs
 * the real last state of the child-task machine (the step that records a successful outcome:
 * task, run target, rack lock, wake-up), as task-steps would. So a freed slot's refill costs here
 * what it costs the product: every store round trip from a task's end to the next StartExecution.
 *
 * Each task's end opens a refill chain (bench/lib/work-scope.ts) that the wake-up's pass, its
 * claim and the next submission inherit through the async context; `start` marks the chain's
 * submission. The executor is idempotent per task id, like Step Functions: a repeated start
 * starts nothing and is counted in `duplicateStarts`.
 */

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
import type { InventoryRack, Task } from "../../src/domain/model.js";
import { currentScope, inScope, type RefillChain } from "./work-scope.js";

export interface ProductSubmitterOptions {
  tasks: TaskStore;
  /** The tasks' command sets: the last state reads the update set beside the task (none exists here). */
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
  const steps: TaskSteps = createTaskSteps({
    tasks: options.tasks,
    runs: options.runs,
    locks: options.locks,
    commands: {
      open: unused("open BMC commands"),
      reopen: unused("re-ask BMCs"),
      markPublished: unused("publish"),
      close: unused("close command sets"),
      record: unused("receive reports"),
      get: (taskId, family) => options.commands.get(taskId, family),
      getMany: unused("list BMC commands"),
    },
    secrets: { put: unused("store secrets"), get: unused("read secrets") },
    sealer: { seal: unused("seal credentials") },
    publisher: { publish: unused("publish") },
    firmware: { record: unused("record firmware") },
    readiness: { notReady: unused("check readiness") },
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
      const ended = new Promise<void>((resolve) => setTimeout(resolve, options.taskMs)).then(() => {
        const next: RefillChain = { id: chains.length, startedAt: performance.now(), calls: [] };
        chains.push(next);
        options.onTaskEnd?.();
        return inScope({ part: "outcome", chain: next }, () =>
          steps.handle({ step: "recordOutcome", taskId: task.id }),
        );
      });
      running.add(ended);
      void ended.finally(() => running.delete(ended)).catch(() => undefined);
      return { executionId };
    },
    async stop() {},
  };
  const service = createTaskService({
    tasks: options.tasks,
    runs: options.runs,
    locks: options.locks,
    inventory: {
      getRacksByIds: async (): Promise<InventoryRack[]> => [],
    } as never,
    secrets: { put: unused("store secrets"), get: unused("read secrets") },
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
