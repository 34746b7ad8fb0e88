/**
 * Where the upgrade loop goes after a step of a wave has every verdict: the same step again for
 * the components that failed while the step has retries left, ComponentsFailed when a failure is
 * left, else the next step of the wave, the next wave, or the next stage (`nextCursor`).
 */

import { retryWaitSeconds } from "../../domain/operation-rules.js";
import { causeText, StepError } from "../../domain/step-errors.js";
import { parseReport, serializeReport } from "../../domain/task-report.js";
import type { StepDeps } from "./deps.js";
import { externalCheckDue } from "./external-check-due.js";
import { isRackCycle } from "./rack-cycle.js";
import {
  currentCursor,
  currentGroups,
  currentWave,
  type StepEventOf,
  type UpgradeGroup,
  type WaveCursor,
} from "./settings.js";
import { updateTask } from "./task-item.js";

/**
 * Ends the step (from checkWave; the FinishWave state of executions of the definition before calls
 * it directly). Failures with retries left → the same step again for those components;
 * failures without → ComponentsFailed (nothing after runs; a verify step's failures are written
 * to the report, an update's are in its entries already). Else the cursor of the next step, wave
 * or stage.
 */
export async function finishWave(deps: StepDeps, event: StepEventOf<"finishWave">): Promise<WaveCursor> {
  const e = { ...event, groups: currentGroups(event.groups, event.settings) };
  const cursor = currentCursor(event.cursor);
  const wave = currentWave(event.wave, event.settings);
  const results = wave.results ?? [];
  const byId = new Map(results.map((r) => [r.componentId, r]));
  const failed = results.filter((r) => !r.ok);
  const step = e.groups[cursor.group]?.steps[cursor.step];
  const retry = step?.retry !== undefined && failed.length > 0 && cursor.attempt < step.retry.maxRetries;
  // An update's outcome is its entries in the update set, which Task.report folds in (live, and
  // for good with the verified versions on inventory at the task's end: outcome.ts), so an update
  // step writes nothing here. A verify step that fails for good marks its components FAILED in
  // the report; a sleep, a passed verify and a failure about to be retried write nothing.
  if (wave.action !== "UPDATE_FIRMWARE" && failed.length > 0 && !retry) {
    // A whole-rack cycle's verdict is its power shelf's: when it failed, every component of the
    // wave was left unactivated, and fails with the shelf's error (never COMPLETED staged).
    const shelfFailed = step !== undefined && isRackCycle(step) ? failed[0] : undefined;
    const waveIds = new Set(shelfFailed === undefined ? [] : waveComponents(e.groups, cursor));
    await updateTask(deps, e.taskId, (t, now) => {
      const r = parseReport(t.report);
      for (const c of r.components) {
        const result = byId.get(c.id) ?? (waveIds.has(c.id) ? shelfFailed : undefined);
        if (result === undefined || result.ok) continue;
        c.error = { name: result.error?.Error ?? "Error", message: causeText(result.error) };
        c.status = "FAILED";
        c.finishedAt = now;
      }
      t.report = serializeReport(r);
      return t;
    });
  }
  if (retry && step?.retry !== undefined) {
    const attempt = cursor.attempt + 1;
    deps.logger.warn("task step failed; retrying", {
      taskId: e.taskId,
      action: step.action,
      failed: failed.length,
      attempt,
      maxRetries: step.retry.maxRetries,
    });
    return {
      ...cursor,
      attempt,
      more: true,
      retry: true,
      waitSeconds: retryWaitSeconds(step.retry, attempt),
      only: failed.map((f) => f.componentId),
    };
  }
  if (failed.length > 0) {
    const failures = failed.map((r) => causeText(r.error));
    const kinds = [...new Set(failed.map((r) => wave.types[r.componentId]))];
    const kind = kinds.length === 1 ? `${kinds[0]} ` : "";
    const more = failures.length > 1 ? `; ${failures.length - 1} more ${kind}component(s) failed` : "";
    throw new StepError("ComponentsFailed", `${failures[0]}${more}`);
  }
  // The rack to an external check first, when the step names one (external-check.ts).
  const external = externalCheckDue(deps, e.groups, cursor);
  if (external !== undefined) return { ...cursor, more: true, retry: false, waitSeconds: 0, external };
  return nextCursor(e.groups, cursor);
}

/** The cursor's wave: its group's components of that wave (all of them, retried or not). */
function waveComponents(groups: readonly UpgradeGroup[], cursor: WaveCursor): string[] {
  const group = groups[cursor.group];
  const size = Math.max(1, Math.floor(group?.maxParallel ?? 1));
  return group?.componentIds.slice(cursor.wave * size, (cursor.wave + 1) * size) ?? [];
}

/** The next step of the wave, else the next wave's first step, else the next group's. */
export function nextCursor(groups: readonly UpgradeGroup[], cursor: WaveCursor): WaveCursor {
  const group = groups[cursor.group];
  const size = Math.max(1, Math.floor(group?.maxParallel ?? 1));
  const steps = group?.steps.length ?? 0;
  const groupSize = group?.componentIds.length ?? 0;
  const next =
    cursor.step + 1 < steps
      ? { group: cursor.group, wave: cursor.wave, step: cursor.step + 1 }
      : (cursor.wave + 1) * size < groupSize
        ? { group: cursor.group, wave: cursor.wave + 1, step: 0 }
        : { group: cursor.group + 1, wave: 0, step: 0 };
  return { ...next, attempt: 0, more: next.group < groups.length, retry: false, waitSeconds: 0 };
}
