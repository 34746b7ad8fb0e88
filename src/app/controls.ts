/**
 * Manual controls (PauseOperationRun, ResumeOperationRun, AdvanceOperationRunPhase,
 * CancelOperationRun): read the run, apply the run reducer, commit with an optimistic write on the
 * version read (re-read and decide again when another writer got there first), together with the
 * history events the change records and the caller who asked (src/domain/run-history.ts), THEN act
 * on the effects. Each returns the run as committed, without stats.
 *
 * Cancel, as a timeline:
 *   t0  saveRun(CANCELLED)                       committed first: nothing new is claimed from now
 *   t0  listTargets(current phase)               (claimTarget requires PENDING/RUNNING runs)
 *   t0… submitter.cancel(taskId) for every non-terminal target with a task, all at once, within ONE
 *       shared 5 s budget; failures and the budget running out are logged, never returned. Each
 *       stopped task records TERMINATED on its target when it stops.
 *   t0… skipTargets(PENDING, BLOCKED, CLAIMED without a task): they never got a task, so nothing
 *       else would ever end them, and they end SKIPPED, not TERMINATED, so an operator can tell the
 *       racks whose flash was interrupted from the untouched ones. The message is the reducer's
 *       (`not started: operation run cancelled`, or `not started: maintenance window closed`).
 *
 * Approve (the two-person rule, src/domain/approval.ts): the run's first events say who created
 * it and what the rule asked (CREATED, APPROVAL_REQUESTED); a run awaiting approval refuses an
 * unverified caller and its creator (each refusal logged and recorded in its history as
 * ACCESS_DENIED), else becomes PENDING with an APPROVED event naming both people, and is
 * dispatched at once where a dispatcher is at hand.
 */
import { type Actor, declaredActor } from "../domain/actor.js";
import { approvalRefusal } from "../domain/approval.js";
import { NotFoundError, PermissionDeniedError, UnauthenticatedError } from "../domain/errors.js";
import { isTerminalTarget, type Run, type Target } from "../domain/model.js";
import { historyEvents } from "../domain/run-history.js";
import { type RunEffect, type RunEvent, reduceRun } from "../domain/run-machine.js";
import { recordRunDenial } from "./access.js";
import type { OperationRunsApi } from "./api.js";
import type { Dispatcher } from "./dispatcher.js";
import { errorText, type Logger, pickLogger } from "./observability.js";
import type { ChildTaskSubmitter, Clock, RunStore } from "./ports.js";

export interface ControlsDeps {
  runs: RunStore;
  submitter: ChildTaskSubmitter;
  clock: Clock;
  logger?: Logger;
  log?: (line: string) => void;
  /**
   * A dispatch pass after resume and advance (gates re-checked at once): `dispatch` if given, else
   * `dispatcher.dispatchRun`, else none (the stream wake-up or the next tick does it). Errors are logged.
   */
  dispatch?: (runId: string) => Promise<unknown>;
  dispatcher?: Pick<Dispatcher, "dispatchRun">;
  /** The shared budget for stopping child tasks after a cancel (default 5 s). */
  cancelBudgetMs?: number;
}

/** The OperationRunsApi control methods (what the gRPC adapter calls), plus short aliases. */
export interface Controls
  extends Pick<OperationRunsApi, "pauseRun" | "resumeRun" | "advancePhase" | "cancelRun" | "approveRun"> {
  pause(id: string, actor?: Actor): Promise<Run>;
  resume(id: string, actor?: Actor): Promise<Run>;
  /** `expectedPhaseIndex` 0 or absent skips the check. */
  advance(id: string, expectedPhaseIndex?: number, actor?: Actor): Promise<Run>;
  cancel(id: string, reason: string, actor?: Actor): Promise<Run>;
  approve(id: string, actor?: Actor): Promise<Run>;
}

const MAX_STALE_RETRIES = 10;
const CANCEL_BUDGET_MS = 5_000;
const ALL = { offset: 0, limit: 10_000 };

export function createControls(deps: ControlsDeps): Controls {
  const { runs, submitter, clock } = deps;
  const logger = pickLogger(deps);
  const dispatcher = deps.dispatcher;
  const dispatch =
    deps.dispatch ??
    (dispatcher === undefined ? undefined : (runId: string) => dispatcher.dispatchRun(runId));

  /**
   * The control's change and the history events it records (who did it, and what followed from
   * it) in one conditional write: a retry after a lost answer finds the change made and records
   * nothing more (pausing a paused run writes nothing).
   */
  async function apply(
    id: string,
    event: RunEvent,
    actor: Actor | undefined,
    approval?: Parameters<typeof historyEvents>[5],
  ): Promise<{ run: Run; effects: RunEffect[] }> {
    for (let attempt = 0; ; attempt++) {
      const run = await runs.getRun(id);
      if (run === undefined) throw new NotFoundError(`operation run not found: ${id}`);
      const now = clock.now();
      const result = reduceRun(run, event, now);
      if (!result.ok) throw result.error;
      if (!result.write) return { run: result.run, effects: result.effects };
      const next = { ...result.run, updatedAt: Math.max(now, run.updatedAt + 1) };
      const saved = await runs.saveRun(
        next,
        run.updatedAt,
        historyEvents(run, next, event, now, actor, approval),
      );
      if (saved === "saved") return { run: next, effects: result.effects };
      if (saved === "not-found") throw new NotFoundError(`operation run not found: ${id}`);
      // 'stale': a dispatcher or another control wrote first; decide again on what is there now.
      if (attempt >= MAX_STALE_RETRIES) {
        throw new Error(`operation run ${id} kept changing; gave up after ${attempt + 1} attempts`);
      }
    }
  }

  async function wake(runId: string): Promise<void> {
    if (dispatch === undefined) return;
    try {
      await dispatch(runId);
    } catch (error) {
      logger.warn("dispatch after a manual control failed; the next tick retries", {
        runId,
        error: errorText(error),
      });
    }
  }

  async function restartConflictClocks(run: Run, phaseIndex: number): Promise<void> {
    const listed = await runs.listTargets(run.id, {
      phaseFrom: phaseIndex,
      phaseTo: phaseIndex,
      status: "BLOCKED",
      page: ALL,
      knownCommitted: true,
    });
    const blocked = listed?.targets ?? [];
    if (blocked.length === 0) return;
    const now = clock.now();
    for (const target of blocked) await runs.restartConflictClock(run.id, target.id, now);
  }

  async function cancelChildTasks(run: Run, phaseIndex: number, skipMessage: string): Promise<void> {
    const listed = await runs.listTargets(run.id, {
      phaseFrom: phaseIndex,
      phaseTo: phaseIndex,
      page: ALL,
      knownCommitted: true,
    });
    const open = (listed?.targets ?? []).filter((t) => !isTerminalTarget(t.status));
    const withTask = open.filter((t): t is Target & { taskId: string } => t.taskId !== undefined);
    const withoutTask = open.filter((t) => t.taskId === undefined).map((t) => t.id);
    const reason = run.statusMessage;

    const stopping = Promise.allSettled(
      withTask.map((t) =>
        submitter.cancel(t.taskId, reason).catch((error: unknown) => {
          logger.warn("could not stop a child task of a cancelled run", {
            runId: run.id,
            targetId: t.id,
            taskId: t.taskId,
            error: errorText(error),
          });
        }),
      ),
    );
    let cancelBudget = () => {};
    const budget = new Promise<"timeout">((resolve) => {
      cancelBudget = clock.after(deps.cancelBudgetMs ?? CANCEL_BUDGET_MS, () => resolve("timeout"));
    });
    const skipping = runs
      .skipTargets(run.id, withoutTask, skipMessage, clock.now())
      .catch((error: unknown) => {
        // The run is cancelled; a target left PENDING only makes its stats lag. Logged, not returned.
        logger.error("could not mark unsubmitted targets of a cancelled run SKIPPED", {
          runId: run.id,
          error: errorText(error),
        });
        return 0;
      });
    const [stopped] = await Promise.all([Promise.race([stopping, budget]), skipping]);
    cancelBudget();
    if (stopped === "timeout") {
      logger.warn("cancel budget ran out before every child task confirmed it stopped", {
        runId: run.id,
        tasks: withTask.length,
      });
    }
  }

  async function afterCommit(run: Run, effects: RunEffect[]): Promise<void> {
    for (const effect of effects) {
      switch (effect.type) {
        case "cancelChildTasks":
          await cancelChildTasks(run, effect.phaseIndex, effect.skipMessage);
          break;
        case "restartConflictClocks":
          await restartConflictClocks(run, effect.phaseIndex);
          break;
        case "claim":
          // Controls never claim themselves; the dispatch pass below does.
          break;
      }
    }
  }

  async function pause(id: string, actor?: Actor): Promise<Run> {
    return (await apply(id, { type: "pause" }, actor)).run;
  }
  async function resume(id: string, actor?: Actor): Promise<Run> {
    const { run, effects } = await apply(id, { type: "resume" }, actor);
    await afterCommit(run, effects);
    if (run.status === "RUNNING") await wake(id);
    return run;
  }
  async function advance(id: string, expectedPhaseIndex?: number, actor?: Actor): Promise<Run> {
    const event: RunEvent =
      expectedPhaseIndex === undefined ? { type: "advance" } : { type: "advance", expectedPhaseIndex };
    const { run } = await apply(id, event, actor);
    if (run.status === "RUNNING") await wake(id);
    return run;
  }
  async function cancel(id: string, reason: string, actor?: Actor): Promise<Run> {
    const { run, effects } = await apply(id, { type: "cancel", reason }, actor);
    await afterCommit(run, effects);
    return run;
  }
  /** The creator and the rule's request, from the run's first events (CREATED, APPROVAL_REQUESTED). */
  async function approvalRequest(id: string) {
    const first = await runs.listRunEvents(id, { offset: 0, limit: 2 }, { knownCommitted: true });
    const created = first?.events.find((e) => e.kind === "CREATED");
    const requested = first?.events.find((e) => e.kind === "APPROVAL_REQUESTED")?.detail;
    return {
      ...(created?.actor === undefined ? {} : { requestedBy: created.actor }),
      ...(requested?.type === "approval" ? { minRacks: requested.minRacks, racks: requested.racks } : {}),
    };
  }

  async function approve(id: string, actor?: Actor): Promise<Run> {
    const run = await runs.getRun(id);
    if (run === undefined) throw new NotFoundError(`operation run not found: ${id}`);
    // Only a run awaiting approval is judged here; any other gets the run machine's answer below.
    const awaiting = run.status === "PAUSED" && run.reason === "AWAITING_APPROVAL";
    const request = awaiting ? await approvalRequest(id) : {};
    const approver = actor ?? declaredActor(undefined);
    const refusal = awaiting ? approvalRefusal(id, request.requestedBy, approver) : undefined;
    if (refusal !== undefined) {
      logger.warn("access denied", {
        actor: approver.name,
        authenticated: approver.authenticated,
        method: "/v1.Flow/ApproveOperationRun",
        code: refusal.code,
        reason: refusal.message,
        runId: id,
        ...(approver.issuer === undefined ? {} : { issuer: approver.issuer }),
      });
      await recordRunDenial(runs, clock, id, approver, {
        rpc: "ApproveOperationRun",
        code: refusal.code,
        reason: refusal.message,
      }).catch((error: unknown) =>
        logger.warn("could not record an access denial in the run history", {
          runId: id,
          error: errorText(error),
        }),
      );
      throw refusal.code === "UNAUTHENTICATED"
        ? new UnauthenticatedError(refusal.message)
        : new PermissionDeniedError(refusal.message);
    }
    const detail =
      request.minRacks === undefined || request.racks === undefined
        ? undefined
        : { minRacks: request.minRacks, racks: request.racks, ...request };
    const { run: approved } = await apply(id, { type: "approve" }, actor, detail);
    if (approved.status === "PENDING") await wake(id);
    return approved;
  }

  return {
    pause,
    resume,
    advance,
    cancel,
    approve,
    approveRun: approve,
    pauseRun: pause,
    resumeRun: resume,
    advancePhase: advance,
    cancelRun: cancel,
  };
}
