/**
 * The task report (Task.report): what a firmware child task did to each component, as a versioned
 * JSON document, and the order component-type groups are upgraded in. Pure: the child-task steps
 * (src/app/child-task/) read and write it through these functions.
 */
import type { ComponentType, Task } from "./model.js";

/**
 * The order component-type groups are upgraded in, one group at a time:
 * - POWERSHELF first: power-shelf firmware governs power sequencing and capping that newer tray
 *   firmware relies on, and if it fails nothing else has been touched yet;
 * - NVSWITCH before COMPUTE: compute trays negotiate NVLink with the switch trays when they come
 *   back, so the fabric is brought to the new level first (the usual vendor order for NVL racks);
 * - COMPUTE: the bulk of the rack;
 * - CDU and UMS: cooling and management, independent of the fabric, done once the valuable part has
 *   succeeded;
 * - TORSWITCH last: its reboot drops the rack's network, which the other BMCs' reports travel over.
 * A failed group stops the task: later groups are NOT_ATTEMPTED, because the order exists precisely
 * so that no group runs against a predecessor at the wrong level.
 */
export const UPGRADE_GROUP_ORDER: readonly ComponentType[] = [
  "POWERSHELF",
  "NVSWITCH",
  "COMPUTE",
  "CDU",
  "UMS",
  "TORSWITCH",
];

// ---------------------------------------------------------------------------------------------
// The task report (Task.report): a versioned JSON document

export const TASK_REPORT_VERSION = 1 as const;

export type ComponentProgress =
  | "PENDING"
  /** Already at the target version (preflight), and override_version_check was not set. */
  | "SKIPPED"
  | "UPDATING"
  | "COMPLETED"
  | "FAILED"
  /** Never commanded: an earlier group, the preflight or the lock failed first. */
  | "NOT_ATTEMPTED"
  /** Its update was in flight when the task was stopped. */
  | "TERMINATED";

export interface ComponentReport {
  id: string;
  type: ComponentType;
  status: ComponentProgress;
  /** What the BMC answered to the preflight query. */
  versionBefore?: string;
  /** What the BMC reported in its result. */
  versionAfter?: string;
  requestId?: string;
  /** Epoch ms. */
  startedAt?: number;
  finishedAt?: number;
  /** `name` is a STEP_ERROR_NAMES entry, `message` the sentence that names the cause. */
  error?: { name: string; message: string };
}

/**
 * `{"v":1,"targetVersion":"2.0.0","overrideVersionCheck":false,"groupOrder":[…],"components":[
 *    {"id":"…","type":"POWERSHELF","status":"COMPLETED","versionBefore":"1.0.0","versionAfter":"2.0.0",…}]}`
 * Readers must ignore fields they do not know; a breaking change bumps `v`.
 */
export interface TaskReport {
  v: typeof TASK_REPORT_VERSION;
  targetVersion: string;
  overrideVersionCheck: boolean;
  groupOrder: ComponentType[];
  components: ComponentReport[];
}

/** The first report of a task: every component PENDING, in upgrade order, then by id. */
export function initialReport(
  components: readonly { id: string; type: ComponentType }[],
  targetVersion: string,
  overrideVersionCheck: boolean,
): TaskReport {
  const rank = (t: ComponentType) => UPGRADE_GROUP_ORDER.indexOf(t);
  const sorted = [...components].sort(
    (a, b) => rank(a.type) - rank(b.type) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
  return {
    v: TASK_REPORT_VERSION,
    targetVersion,
    overrideVersionCheck,
    groupOrder: [...UPGRADE_GROUP_ORDER],
    components: sorted.map((c) => ({ id: c.id, type: c.type, status: "PENDING" })),
  };
}

export function parseReport(text: string): TaskReport {
  const parsed = JSON.parse(text) as TaskReport;
  if (parsed.v !== TASK_REPORT_VERSION)
    throw new Error(`task report version ${String(parsed.v)} is not supported`);
  return parsed;
}

export function serializeReport(report: TaskReport): string {
  return JSON.stringify(report);
}

/** How a task ends (a target's OutcomeStatus also has SKIPPED, which no task ends with). */
export type TaskOutcomeStatus = "COMPLETED" | "FAILED" | "TERMINATED";

/**
 * The report of a task that ended with `status`: components in flight become TERMINATED (a stop)
 * or FAILED, never-started ones NOT_ATTEMPTED. An unreadable report is kept as it is.
 */
export function finishReport(text: string, status: TaskOutcomeStatus, now: number): string {
  let report: TaskReport;
  try {
    report = parseReport(text);
  } catch {
    return text;
  }
  for (const c of report.components) {
    if (c.status === "UPDATING") {
      c.status = status === "TERMINATED" ? "TERMINATED" : "FAILED";
      c.finishedAt = now;
    } else if (c.status === "PENDING") {
      c.status = "NOT_ATTEMPTED";
    }
  }
  return serializeReport(report);
}

/** `"upgraded 18 components to 2.0.0 (3 already at 2.0.0)"`. */
export function completionMessage(task: Pick<Task, "report">): string {
  try {
    const report = parseReport(task.report);
    const done = report.components.filter((c) => c.status === "COMPLETED").length;
    const skipped = report.components.filter((c) => c.status === "SKIPPED").length;
    if (done === 0) return `all ${skipped} components already at ${report.targetVersion}`;
    const tail = skipped > 0 ? ` (${skipped} already at ${report.targetVersion})` : "";
    return `upgraded ${done} component${done === 1 ? "" : "s"} to ${report.targetVersion}${tail}`;
  } catch {
    return "completed";
  }
}
