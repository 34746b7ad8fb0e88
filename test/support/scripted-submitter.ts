/**
 * A ChildTaskSubmitter for the use-case tables, typed from the port: every call is recorded, and
 * `answer` says what a submission returns (by default the task `task:<targetId>`, the same for a
 * repeat of the key, as the real task service's idempotency gives). `onCancel` is what stopping a
 * task does (by default nothing: the task path that records TERMINATED is not part of these
 * tables). Nothing here runs on a timer; a test that wants a slow or failing call scripts it.
 * (test/support/fake-submitter.ts is the one that runs tasks and records their outcomes.)
 */
import type { ChildTaskRequest, ChildTaskSubmitter, SubmitOutcome } from "../../src/app/ports.js";

export const taskIdFor = (targetId: string): string => `task:${targetId}`;

export class ScriptedSubmitter implements ChildTaskSubmitter {
  readonly submits: ChildTaskRequest[] = [];
  readonly cancels: { taskId: string; reason: string }[] = [];
  answer: (request: ChildTaskRequest, now: number) => SubmitOutcome | Promise<SubmitOutcome> = (request) => ({
    kind: "submitted",
    taskId: taskIdFor(request.targetId),
  });
  onCancel: (taskId: string, reason: string) => Promise<void> = async () => {};

  async submit(request: ChildTaskRequest, now: number): Promise<SubmitOutcome> {
    this.submits.push(structuredClone(request));
    return this.answer(request, now);
  }

  async cancel(taskId: string, reason: string): Promise<void> {
    this.cancels.push({ taskId, reason });
    await this.onCancel(taskId, reason);
  }

  /** The target ids submitted, in call order. */
  submittedTargets(): string[] {
    return this.submits.map((r) => r.targetId);
  }
}
