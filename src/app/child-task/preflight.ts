/**
 * The preflight: SendQueries asks every component's BMC for its running version, CheckQueries
 * polls the answers (Wait ◄─► CheckPreflight) until all are in or the preflight times out, then
 * records each version in the report, skips components already at their target (unless
 * override_version_check), and returns the upgrade groups in UPGRADE_GROUP_ORDER.
 */
import { nextWaitSeconds, queryRequestId } from "../../domain/component-verdict.js";
import type { Task } from "../../domain/model.js";
import { componentLabel, StepError } from "../../domain/step-errors.js";
import {
  parseReport,
  serializeReport,
  type TaskReport,
  targetOf,
  UPGRADE_GROUP_ORDER,
} from "../../domain/task-report.js";
import { requestKey } from "../ports.js";
import type { StepDeps } from "./deps.js";
import { isTerminalTask, loadTask, updateTask } from "./outcome.js";
import type { PollState, PreflightResult, StepEventOf, UpgradeGroup } from "./settings.js";

function reportOf(task: Task): TaskReport {
  try {
    return parseReport(task.report);
  } catch (err) {
    throw new StepError(
      "TaskMisconfigured",
      `task ${task.id} has no readable report: ${(err as Error).message}`,
    );
  }
}

export async function sendQueries(deps: StepDeps, e: StepEventOf<"sendQueries">): Promise<PollState> {
  const { requests, clock } = deps;
  const task = await loadTask(deps, e.taskId);
  const now = clock();
  const deadline = now + e.settings.preflightTimeoutSeconds * 1000;
  const opened = await Promise.all(
    task.componentIds.map((componentId) =>
      requests.open({
        componentId,
        requestId: queryRequestId(task.id, componentId),
        taskId: task.id,
        kind: "query",
        sentAt: now,
        deadline,
      }),
    ),
  );
  await Promise.all(
    opened.map(async (record) => {
      if (record.publishedAt !== undefined) return;
      await deps.publisher.publish(record.componentId, {
        v: 1,
        type: "query",
        requestId: record.requestId,
      });
      await requests.markPublished(record.componentId, record.requestId, clock());
    }),
  );
  // A retried step keeps the first deadline: the records carry it.
  const first = opened.reduce((min, r) => Math.min(min, r.deadline), deadline);
  return {
    done: false,
    deadline: first,
    polls: 0,
    waitSeconds: nextWaitSeconds(e.settings, 0, first, clock()),
  };
}

export async function checkQueries(deps: StepDeps, e: StepEventOf<"checkQueries">): Promise<PreflightResult> {
  const task = await loadTask(deps, e.taskId);
  const report = reportOf(task);
  const keys = report.components.map((c) => ({
    componentId: c.id,
    requestId: queryRequestId(task.id, c.id),
  }));
  const records = await deps.requests.get(keys);
  const now = deps.clock();
  const missing = report.components.filter(
    (c) => records.get(requestKey(c.id, queryRequestId(task.id, c.id)))?.status === undefined,
  );
  if (missing.length > 0) {
    if (now < e.preflight.deadline) {
      const polls = e.preflight.polls + 1;
      return {
        done: false,
        deadline: e.preflight.deadline,
        polls,
        waitSeconds: nextWaitSeconds(e.settings, polls, e.preflight.deadline, now),
      };
    }
    const shown = missing
      .slice(0, 3)
      .map((c) => componentLabel(c.id, c.type))
      .join(", ");
    const more = missing.length > 3 ? ` and ${missing.length - 3} more` : "";
    throw new StepError(
      "BmcUnreachable",
      `preflight: ${shown}${more} did not answer the version query within ${e.settings.preflightTimeoutSeconds} s (BMC unreachable)`,
    );
  }
  const { task: updated } = await updateTask(deps, task.id, (t) => {
    const r = parseReport(t.report);
    for (const c of r.components) {
      const version = records.get(requestKey(c.id, queryRequestId(task.id, c.id)))?.status?.version;
      if (version === undefined) continue;
      c.versionBefore = version;
      if (version === targetOf(r, c) && !r.overrideVersionCheck && c.status === "PENDING") {
        c.status = "SKIPPED";
      }
    }
    t.report = serializeReport(r);
    return t;
  });
  const final = parseReport(updated.report);
  const groups: UpgradeGroup[] = isTerminalTask(updated)
    ? []
    : UPGRADE_GROUP_ORDER.flatMap((type) => {
        const componentIds = final.components
          .filter((c) => c.type === type && c.status === "PENDING")
          .map((c) => c.id);
        return componentIds.length === 0 ? [] : [{ type, componentIds }];
      });
  deps.log(
    `task ${task.id}: preflight done, ${groups.reduce((n, g) => n + g.componentIds.length, 0)} to update, ${final.components.filter((c) => c.status === "SKIPPED").length} already at ${final.targetVersion ?? "their version"}`,
  );
  return {
    done: true,
    deadline: e.preflight.deadline,
    polls: e.preflight.polls,
    waitSeconds: 1,
    groups,
    cursor: { group: 0, wave: 0, more: groups.length > 0 },
  };
}
