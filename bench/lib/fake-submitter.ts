/**
 * A ChildTaskSubmitter for tests and the dispatch benchmark, typed from the port so it cannot
 * drift. Behaviour per rack: complete or fail after N ms, hang until cancelled, conflict a number
 * of times (or forever) before behaving otherwise, or reject submission outright. Like the real task service it is idempotent per
 * key (a repeat submit returns the same task and starts nothing) and, when a task ends, records the
 * outcome on the run's target through `RunStore.recordOutcome`.
 *
 * What tests read back: `submissions` (submit calls per key, retries included), `starts` (tasks
 * actually started per key: must be 1 for every key, or a rack was flashed twice), `running` now and
 * `maxRunning` (hardware concurrency ever observed), `cancels`.
 */
import type { ChildTaskRequest, ChildTaskSubmitter, RunStore, SubmitOutcome } from "../../src/app/ports.js";

export type RackBehaviour =
  | { kind: "complete"; afterMs: number }
  | { kind: "fail"; afterMs: number; message: string }
  | { kind: "hang" }
  | { kind: "reject"; message: string }
  /** Conflict on the first `times` submissions (Infinity = always), then behave as `then`. */
  | { kind: "conflict"; times: number; message?: string; then?: RackBehaviour };

export interface FakeTask {
  taskId: string;
  key: string;
  runId: string;
  targetId: string;
  rackId: string;
  status: "RUNNING" | "COMPLETED" | "FAILED" | "TERMINATED";
  timer?: ReturnType<typeof setTimeout>;
}

export interface FakeSubmitterOptions {
  runs: RunStore;
  clock: () => number;
  /** Per rack id; default: complete after 5 ms. */
  behaviour?: (rackId: string) => RackBehaviour;
  /** cancel() waits for this before it stops the task (a child task slow to confirm: the cancel budget). */
  cancelWaitsFor?: Promise<unknown>;
  /** cancel() throws for these task ids. */
  cancelFailsFor?: (taskId: string) => boolean;
}

export const conflictMessage = (rackId: string): string =>
  `failed to create task for required rack ${rackId}: rack ${rackId} already has a conflicting task: rack conflict`;

export class FakeSubmitter implements ChildTaskSubmitter {
  readonly submissions = new Map<string, number>();
  readonly starts = new Map<string, number>();
  readonly tasks = new Map<string, FakeTask>();
  readonly cancels: string[] = [];
  readonly conflictsByRack = new Map<string, number>();
  running = 0;
  maxRunning = 0;
  private readonly byKey = new Map<string, FakeTask>();
  private readonly pending = new Set<Promise<void>>();
  private seq = 0;

  constructor(private readonly options: FakeSubmitterOptions) {}

  async submit(request: ChildTaskRequest, _now: number): Promise<SubmitOutcome> {
    const key = request.idempotencyKey;
    this.submissions.set(key, (this.submissions.get(key) ?? 0) + 1);
    const existing = this.byKey.get(key);
    if (existing !== undefined) return { kind: "submitted", taskId: existing.taskId };

    let behaviour = this.behaviourFor(request.rackId);
    while (behaviour.kind === "conflict") {
      const seen = this.conflictsByRack.get(request.rackId) ?? 0;
      if (seen < behaviour.times) {
        this.conflictsByRack.set(request.rackId, seen + 1);
        return { kind: "conflict", message: behaviour.message ?? conflictMessage(request.rackId) };
      }
      behaviour = behaviour.then ?? { kind: "complete", afterMs: 5 };
    }
    if (behaviour.kind === "reject") return { kind: "rejected", message: behaviour.message };

    const task: FakeTask = {
      taskId: `task-${++this.seq}-${request.targetId.slice(-6)}`,
      key,
      runId: request.runId,
      targetId: request.targetId,
      rackId: request.rackId,
      status: "RUNNING",
    };
    this.byKey.set(key, task);
    this.tasks.set(task.taskId, task);
    this.starts.set(key, (this.starts.get(key) ?? 0) + 1);
    this.running += 1;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    if (behaviour.kind === "complete") {
      task.timer = setTimeout(() => this.end(task, "COMPLETED", "task completed"), behaviour.afterMs);
    } else if (behaviour.kind === "fail") {
      task.timer = setTimeout(() => this.end(task, "FAILED", behaviour.message), behaviour.afterMs);
    }
    return { kind: "submitted", taskId: task.taskId };
  }

  async cancel(taskId: string, reason: string): Promise<void> {
    this.cancels.push(taskId);
    if (this.options.cancelWaitsFor !== undefined) await this.options.cancelWaitsFor;
    if (this.options.cancelFailsFor?.(taskId)) throw new Error(`cannot stop task ${taskId}`);
    const task = this.tasks.get(taskId);
    if (task === undefined || task.status !== "RUNNING") return;
    if (task.timer !== undefined) clearTimeout(task.timer);
    await this.end(task, "TERMINATED", `task cancelled: ${reason}`);
  }

  /** Ends a hanging task from the test. */
  finish(
    targetId: string,
    status: "COMPLETED" | "FAILED",
    message = `task ${status.toLowerCase()}`,
  ): Promise<void> {
    const task = [...this.tasks.values()].find((t) => t.targetId === targetId && t.status === "RUNNING");
    if (task === undefined) throw new Error(`no running task for target ${targetId}`);
    if (task.timer !== undefined) clearTimeout(task.timer);
    return this.end(task, status, message);
  }

  /** Resolves when every outcome recording started so far has finished. */
  async settle(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  /** Total starts must equal the number of distinct keys: no rack flashed twice. */
  duplicateStarts(): string[] {
    return [...this.starts.entries()].filter(([, n]) => n > 1).map(([k]) => k);
  }

  private behaviourFor(rackId: string): RackBehaviour {
    return this.options.behaviour?.(rackId) ?? { kind: "complete", afterMs: 5 };
  }

  private end(task: FakeTask, status: FakeTask["status"], message: string): Promise<void> {
    if (task.status !== "RUNNING") return Promise.resolve();
    task.status = status;
    this.running -= 1;
    const recording = this.options.runs
      .recordOutcome(
        task.runId,
        task.targetId,
        status as "COMPLETED" | "FAILED" | "TERMINATED",
        message,
        this.options.clock(),
      )
      .then(() => undefined);
    this.pending.add(recording);
    void recording.finally(() => this.pending.delete(recording)).catch(() => undefined);
    return recording;
  }
}
