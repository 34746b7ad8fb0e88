/**
 * The task report as a child task's command sets (command-sets.ts) say it is now. A task running
 * on command sets writes its report once, when it ends; until then the stored report is the one
 * it was created with (every component PENDING), and this is what Task.report shows: the stored
 * report with what the preflight answered, what each wave sent and what each BMC reported laid
 * over it, by the same verdicts the waves decide by (component-verdict.ts). The outcome recorder
 * composes the final report the same way before it writes it.
 *
 * Per component (only those still PENDING in the stored report, so a written report wins):
 *   versionBefore   its latest preflight answer;
 *   SKIPPED         preflight done (the update record exists) and it is not planned: it was at
 *                   its target version (and override_version_check was not set);
 *   UPDATING        its latest update attempt was sent and has no verdict yet (`progress`: the
 *                   percent last stored);
 *   COMPLETED       that attempt's result verified (versionAfter, finishedAt: the result's time);
 *   FAILED          that attempt failed and its step has no retry left; with a retry left it is
 *                   PENDING again, keeping the error until the retry settles it. A verify step's
 *                   failure with no retry left fails it too.
 *   warnings        the readiness override's warning, kept with the update record.
 */
import {
  type CommandAddress,
  type CommandSet,
  commandRecord,
  entryKey,
  queryAddress,
  updateAddress,
  verifyAddress,
} from "./command-sets.js";
import { type ComponentResult, queryVerdict, verdict } from "./component-verdict.js";
import type { OperationRule, RuleStep } from "./operation-rules.js";
import { causeText } from "./step-errors.js";
import { type ComponentReport, type TaskReport, targetOf } from "./task-report.js";

export interface CommandSets {
  /** Updates (family u), preflight queries (q), verify queries (v); absent: not opened yet. */
  u?: CommandSet;
  q?: CommandSet;
  v?: CommandSet;
}

/** The send key of an update wave: `attempt.stage.step.wave`. */
export const updateSendKey = (attempt: number, stage: number, step: number, wave: number): string =>
  `${attempt}.${stage}.${step}.${wave}`;
/** The send key of a verify wave: `stage.step.attempt.wave`. */
export const verifySendKey = (stage: number, step: number, attempt: number, wave: number): string =>
  `${stage}.${step}.${attempt}.${wave}`;
/** The send key of a preflight round: its attempt. */
export const querySendKey = (attempt: number): string => String(attempt);

/** The rule step an update entry's send belongs to (undefined for a key of another form). */
function stepOfUpdateSend(rule: OperationRule, key: string): RuleStep | undefined {
  const [, stage, step] = key.split(".").map(Number);
  return rule.stages[stage ?? -1]?.steps[step ?? -1];
}

const retriesLeft = (step: RuleStep | undefined, attempt: number): boolean =>
  step?.retry !== undefined && attempt < step.retry.maxRetries;

/** The last attempt (0, 1, …) whose entry exists for the component, with its record. */
function lastAttempt<T>(has: (attempt: number) => T | undefined): { attempt: number; value: T } | undefined {
  let found: { attempt: number; value: T } | undefined;
  for (let attempt = 0; ; attempt++) {
    const value = has(attempt);
    if (value === undefined) return found;
    found = { attempt, value };
  }
}

export function liveReport(
  stored: TaskReport,
  taskId: string,
  rule: OperationRule,
  sets: CommandSets,
  now: number,
): TaskReport {
  const report: TaskReport = structuredClone(stored);
  const { u, q, v } = sets;
  if (u?.warnings !== undefined && u.warnings.length > 0 && report.warnings === undefined) {
    report.warnings = [...u.warnings];
  }
  for (const c of report.components) {
    if (c.status !== "PENDING") continue;
    const answered = lastAttempt((a) => (has(q, queryAddress(taskId, a), c.id) ? a : undefined));
    // The latest answer wins; an attempt still unanswered leaves the earlier one.
    for (let a = answered?.attempt ?? -1; a >= 0; a--) {
      const version = commandRecord(q, queryAddress(taskId, a), c.id)?.status?.version;
      if (version !== undefined) {
        c.versionBefore = version;
        break;
      }
    }
    if (u === undefined) continue;
    const planned = lastAttempt((a) => (has(u, updateAddress(taskId, a), c.id) ? a : undefined));
    if (planned === undefined) {
      c.status = "SKIPPED";
      continue;
    }
    applyUpdate(c, report, rule, taskId, u, planned.attempt, now);
    if (v !== undefined) applyVerifies(c, report, rule, taskId, v, now);
  }
  return report;
}

const has = (set: CommandSet | undefined, address: CommandAddress, componentId: string): boolean =>
  set?.entries[entryKey(address, componentId)] !== undefined;

const errorOf = (failed: ComponentResult): { name: string; message: string } => ({
  name: failed.error?.Error ?? "Error",
  message: causeText(failed.error),
});

function applyUpdate(
  c: ComponentReport,
  report: TaskReport,
  rule: OperationRule,
  taskId: string,
  u: CommandSet,
  attempt: number,
  now: number,
): void {
  const address = updateAddress(taskId, attempt);
  const entry = u.entries[entryKey(address, c.id)];
  const record = commandRecord(u, address, c.id);
  // A retry not sent yet: PENDING, with the error of the attempt before it.
  if (entry === undefined || record === undefined) {
    if (attempt > 0) lastError(c, report, rule, taskId, u, attempt - 1, now);
    return;
  }
  const send = u.sends[entry.send]!;
  c.requestId = record.requestId;
  c.startedAt = send.sentAt;
  const outcome = verdict(
    c.id,
    c.type,
    record,
    targetOf(report, c),
    { updateTimeoutSeconds: send.timeoutSeconds },
    send.deadline,
    now,
    c.subTargets,
  );
  if (outcome === "pending") {
    c.status = "UPDATING";
    if (entry.progress !== undefined) c.progress = entry.progress;
    return;
  }
  if (outcome.ok) {
    c.status = "COMPLETED";
    if (outcome.version !== undefined) c.versionAfter = outcome.version;
    c.finishedAt = entry.resultAt ?? now;
    delete c.error;
    return;
  }
  c.error = errorOf(outcome);
  if (retriesLeft(stepOfUpdateSend(rule, entry.send), attempt)) return; // PENDING until the retry
  c.status = "FAILED";
  c.finishedAt = entry.resultAt ?? send.deadline;
}

/** The error a failed attempt left (for a component waiting for its retry). */
function lastError(
  c: ComponentReport,
  report: TaskReport,
  rule: OperationRule,
  taskId: string,
  u: CommandSet,
  attempt: number,
  now: number,
): void {
  const previous = structuredClone(c);
  applyUpdate(previous, report, rule, taskId, u, attempt, now);
  if (previous.error !== undefined) c.error = previous.error;
}

/** A verify step of the component's stage that failed with no retry left fails the component. */
function applyVerifies(
  c: ComponentReport,
  report: TaskReport,
  rule: OperationRule,
  taskId: string,
  v: CommandSet,
  now: number,
): void {
  rule.stages.forEach((stage, s) => {
    if (!stage.componentTypes.includes(c.type)) return;
    stage.steps.forEach((step, k) => {
      if (step.action !== "VERIFY_VERSION" && step.action !== "VERIFY_REACHABILITY") return;
      const last = lastAttempt((a) => commandRecord(v, verifyAddress(taskId, s, k, a), c.id));
      if (last === undefined) return;
      const entry = v.entries[entryKey(verifyAddress(taskId, s, k, last.attempt), c.id)]!;
      const send = v.sends[entry.send]!;
      const check =
        step.action === "VERIFY_VERSION"
          ? {
              step: "verify-version" as const,
              expected: targetOf(report, c),
              timeoutSeconds: send.timeoutSeconds,
            }
          : { step: "verify-reachability" as const, timeoutSeconds: send.timeoutSeconds };
      const outcome = queryVerdict(c.id, c.type, last.value, check, send.deadline, now);
      if (outcome === "pending" || outcome.ok || retriesLeft(step, last.attempt)) return;
      c.status = "FAILED";
      c.error = errorOf(outcome);
      c.finishedAt = send.deadline;
    });
  });
}
