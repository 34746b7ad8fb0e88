/**
 * A CHECK_HEALTH step's external check (src/domain/external-check.ts): once the BMCs' own health
 * of the stage's last wave passed, the task hands the rack and every component it upgraded so far
 * to the check the step names, and waits for its verdict.
 *
 *   finishWave (waves.ts) ── cursor.external ──► AwaitExternalCheck (`startExternalCheck`, a
 *   `.waitForTaskToken` Task: the check answers with the token) ──► JudgeExternalCheck
 *   (`judgeExternalCheck`) ──► MoreWaves? with the next cursor
 *
 * Verdicts: pass goes on; fail throws HealthCheckFailed (RecordFailure ends the target FAILED with
 * the check's reason); inconclusive (also: no verdict within the timeout, a check that could not
 * be reached) goes on, with a warning in the task report, and pauses the task's run
 * (EXTERNAL_CHECK_INCONCLUSIVE) for a person to look; a plain task has no run to pause and keeps
 * the warning alone.
 */
import {
  CHECK_UNAVAILABLE_ERROR,
  type ExternalCheckRequest,
  externalCheckFailure,
  judgeExternalCheck,
} from "../../domain/external-check.js";
import type { ComponentType, Run } from "../../domain/model.js";
import { historyEvents } from "../../domain/run-history.js";
import { reduceRun } from "../../domain/run-machine.js";
import { causeText, StepError } from "../../domain/step-errors.js";
import { parseReport, serializeReport } from "../../domain/task-report.js";
import type { RunStore } from "../ports.js";
import type { StepDeps } from "./deps.js";
import { renewLockIfNeeded } from "./lock.js";
import type { StepEventOf, WaveCursor } from "./settings.js";
import { updateTask } from "./task-item.js";
import { nextCursor } from "./wave-cursor.js";

/** AwaitExternalCheck: hands the rack to the check with the state's task token. */
export async function startExternalCheck(
  deps: StepDeps,
  e: StepEventOf<"startExternalCheck">,
): Promise<{ started: true }> {
  const due = e.cursor.external;
  if (due === undefined) throw new Error("startExternalCheck without cursor.external");
  const check = deps.externalChecks?.checks.find((c) => c.name === due.name);
  const runner = deps.externalChecks?.runner;
  if (check === undefined || runner === undefined) {
    throw new StepError(
      CHECK_UNAVAILABLE_ERROR,
      `external check ${due.name} is not configured in this deployment`,
    );
  }
  const group = e.groups[e.cursor.group];
  // The rack stays the task's while the check judges it: the lock must outlast the wait.
  await renewLockIfNeeded(
    deps,
    { taskId: e.taskId, rackId: e.rackId, leaseEnd: group?.facts?.leaseEnd },
    e.settings,
    { components: 1, timeoutSeconds: due.timeoutSeconds },
    deps.clock(),
  );
  const components: ExternalCheckRequest["components"] = [];
  let runId: string | undefined;
  for (const g of e.groups.slice(0, e.cursor.group + 1)) {
    runId ??= g.facts?.runId;
    for (const id of g.componentIds) {
      components.push({
        id,
        type: g.facts?.types[id] as ComponentType,
        version: g.facts?.versions[id] ?? "",
      });
    }
  }
  const request: ExternalCheckRequest = {
    taskToken: e.token,
    check: due.name,
    checkId: `${e.taskId}.s${group?.stage ?? e.cursor.group}`,
    taskId: e.taskId,
    ...(runId === undefined ? {} : { runId }),
    rackId: e.rackId,
    stage: group?.name ?? "",
    components,
    timeoutSeconds: due.timeoutSeconds,
    requestedAt: new Date(deps.clock()).toISOString(),
  };
  try {
    await runner.start(check, request);
  } catch (error) {
    throw new StepError(
      CHECK_UNAVAILABLE_ERROR,
      `could not hand rack ${e.rackId} to external check ${due.name}: ${(error as Error).message}`,
    );
  }
  deps.logger.info("external check started", { taskId: e.taskId, check: due.name, rackId: e.rackId });
  return { started: true };
}

/**
 * JudgeExternalCheck: the verdict from how the wait ended (`checked`: the check's answer, or the
 * caught error), then the next cursor. Fail: HealthCheckFailed. Inconclusive: a warning in the
 * report and, for a run child, its run paused.
 */
export async function judgeExternalCheckStep(
  deps: StepDeps,
  e: StepEventOf<"judgeExternalCheck">,
): Promise<WaveCursor> {
  const due = e.cursor.external;
  if (due === undefined) throw new Error("judgeExternalCheck without cursor.external");
  const checked = e.checked as { Error?: unknown; Cause?: unknown } | undefined;
  const caught =
    checked !== null && typeof checked === "object" && typeof checked.Error === "string"
      ? { Error: checked.Error, Cause: causeText({ Error: checked.Error, Cause: checked.Cause }) }
      : undefined;
  const verdict = judgeExternalCheck(
    caught === undefined ? { answer: e.checked } : { error: caught },
    due.timeoutSeconds,
  );
  const { external: _, ...cursor } = e.cursor;
  deps.logger.info("external check verdict", {
    taskId: e.taskId,
    check: due.name,
    verdict: verdict.kind,
    ...(verdict.kind === "pass" ? {} : { reason: verdict.reason }),
  });
  if (verdict.kind === "fail")
    throw new StepError("HealthCheckFailed", externalCheckFailure(due.name, verdict.reason));
  if (verdict.kind === "inconclusive") {
    // The run first, then the report: a retried step pauses nothing twice (the same verdict is
    // the same pause) and adds its warning once.
    const warning = `external check ${due.name} inconclusive: ${verdict.reason}`;
    const runs = deps.externalChecks?.runs;
    const [task] = await deps.tasks.getTasks([e.taskId]);
    if (runs !== undefined && task?.runId !== undefined && task.targetId !== undefined) {
      await pauseRun(deps, runs, task.runId, {
        check: due.name,
        targetId: task.targetId,
        rackId: e.rackId,
        reason: verdict.reason,
      });
    }
    await updateTask(
      deps,
      e.taskId,
      (t) => {
        const report = parseReport(t.report);
        if (report.warnings?.includes(warning)) return undefined;
        report.warnings = [...(report.warnings ?? []), warning];
        t.report = serializeReport(report);
        return t;
      },
      task,
    );
  }
  return nextCursor(e.groups, cursor);
}

/** The run paused for a person (EXTERNAL_CHECK_INCONCLUSIVE), with its history event; retried while another writer wins. */
async function pauseRun(
  deps: StepDeps,
  runs: Pick<RunStore, "getRun" | "saveRun">,
  runId: string,
  said: { check: string; targetId: string; rackId: string; reason: string },
): Promise<void> {
  const event = { type: "externalCheckInconclusive" as const, ...said };
  for (let attempt = 0; attempt < 10; attempt++) {
    const run: Run | undefined = await runs.getRun(runId);
    if (run === undefined) return;
    const now = deps.clock();
    const result = reduceRun(run, event, now);
    if (!result.ok || !result.write) return;
    const next = { ...result.run, updatedAt: Math.max(now, run.updatedAt + 1) };
    const saved = await runs.saveRun(next, run.updatedAt, historyEvents(run, next, event, now));
    if (saved !== "stale") {
      if (saved === "saved") deps.logger.warn("run paused: external check inconclusive", { runId, ...said });
      return;
    }
  }
  throw new Error(`operation run ${runId} kept changing; could not pause it`);
}
