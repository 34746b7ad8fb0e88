/**
 * ReportTargetFailure (ours): a COMPLETED target reported FAILED afterwards. The rules are pure
 * (src/domain/late-failure.ts); this reads the run and the target, writes the report with its
 * history event in one conditional write on both versions (re-reading when another writer got
 * there first), then wakes a dispatch pass so the gates count the failure at once: reported
 * during a phase's soak, it pauses the run before the next phase opens. Returns the run as
 * committed (or as it is, for a repeated report), without stats.
 */
import type { Actor } from "../domain/actor.js";
import { NotFoundError, ValidationError } from "../domain/errors.js";
import {
  checkLateFailureRequest,
  type LateFailureRequest,
  lateFailureEvent,
  reportLateFailure,
} from "../domain/late-failure.js";
import type { Run, Target } from "../domain/model.js";
import { errorText, type Logger, pickLogger } from "./observability.js";
import type { Clock, RunStore } from "./ports.js";

export interface LateFailureDeps {
  runs: RunStore;
  clock: Clock;
  logger?: Logger;
  log?: (line: string) => void;
  /** A dispatch pass after the report (the gates evaluated at once); absent: the stream or the tick. */
  dispatch?: (runId: string) => Promise<unknown>;
}

export interface LateFailureReports {
  reportTargetFailure(request: LateFailureRequest, actor?: Actor): Promise<Run>;
}

const MAX_STALE_RETRIES = 10;
const ALL = { offset: 0, limit: 10_000 };

export function createLateFailureReports(deps: LateFailureDeps): LateFailureReports {
  const { runs, clock } = deps;
  const logger = pickLogger(deps);

  async function findTarget(run: Run, request: LateFailureRequest): Promise<Target> {
    if (request.targetId !== undefined && request.targetId !== "") {
      const target = await runs.getTarget(run.id, request.targetId.toLowerCase());
      if (target !== undefined) return target;
      throw new NotFoundError(
        `operation run target not found: ${request.targetId} in operation run ${run.id}`,
      );
    }
    const rackId = (request.rackId ?? "").toLowerCase();
    const last = run.phaseSizes.length - 1;
    const listed = await runs.listTargets(run.id, {
      phaseFrom: 0,
      phaseTo: last,
      page: ALL,
      knownCommitted: true,
    });
    const target = listed?.targets.find((t) => t.rackId === rackId);
    if (target !== undefined) return target;
    throw new NotFoundError(`operation run ${run.id} has no target on rack ${rackId}`);
  }

  async function reportTargetFailure(request: LateFailureRequest, actor?: Actor): Promise<Run> {
    const violations = checkLateFailureRequest(request);
    if (violations.length > 0) throw new ValidationError(violations);
    for (let attempt = 0; ; attempt++) {
      const run = await runs.getRun(request.runId);
      if (run === undefined) throw new NotFoundError(`operation run not found: ${request.runId}`);
      const target = await findTarget(run, request);
      const decision = reportLateFailure(run, target, request.reason, actor, clock.now());
      if (decision.kind === "refused") throw decision.error;
      if (decision.kind === "already-reported") return run;
      const event = lateFailureEvent(decision.run, decision.target, actor);
      const saved = await runs.recordLateFailure(
        decision.run,
        run.updatedAt,
        decision.target,
        target.updatedAt,
        [event],
      );
      if (saved === "not-found") throw new NotFoundError(`operation run not found: ${request.runId}`);
      if (saved === "saved") {
        logger.info("late target failure reported", {
          runId: run.id,
          targetId: target.id,
          rackId: target.rackId,
          reason: decision.target.message,
        });
        await wake(run.id);
        return decision.run;
      }
      // 'stale': a dispatch pass, a control or another report wrote first; decide again.
      if (attempt >= MAX_STALE_RETRIES) {
        throw new Error(`operation run ${run.id} kept changing; gave up after ${attempt + 1} attempts`);
      }
    }
  }

  async function wake(runId: string): Promise<void> {
    if (deps.dispatch === undefined) return;
    try {
      await deps.dispatch(runId);
    } catch (error) {
      logger.warn("dispatch after a late failure report failed; the next tick retries", {
        runId,
        error: errorText(error),
      });
    }
  }

  return { reportTargetFailure };
}
