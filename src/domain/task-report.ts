/**
 * The task report (Task.report): what a firmware child task did to each component, as a versioned
 * JSON document, and the order component-type groups are upgraded in. Pure: the child-task steps
 * (src/app/child-task/) read and write it through these functions.
 */
import type { ComponentType } from "./model.js";
import type { Task } from "./task.js";

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

/**
 * 2: a component's target version may be its own (`components[].targetVersion`, from the firmware
 * baselines) and the report's `targetVersion` is then absent, so a v1 reader that took the
 * report's version for every component would be wrong: hence the bump. v1 reports (tasks created
 * before) are still read: every v1 component's target is the report's targetVersion.
 */
export const TASK_REPORT_VERSION = 2 as const;
const READABLE_VERSIONS: readonly number[] = [1, TASK_REPORT_VERSION];

export type ComponentProgress =
  | "PENDING"
  /** Already at its target version (preflight), and override_version_check was not set. */
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
  /** This component's own target (resolved from the firmware baselines); absent: the report's. */
  targetVersion?: string;
  /** The parts to flash (the request's sub_targets this type has); absent: the whole component. */
  subTargets?: string[];
  /** What the BMC answered to the preflight query. */
  versionBefore?: string;
  /** What the BMC reported in its result. */
  versionAfter?: string;
  requestId?: string;
  /** While UPDATING: the last progress percent its BMC reported (stored every few seconds at most). */
  progress?: number;
  /** Epoch ms. */
  startedAt?: number;
  finishedAt?: number;
  /** `name` is a STEP_ERROR_NAMES entry, `message` the sentence that names the cause. */
  error?: { name: string; message: string };
}

/**
 * `{"v":2,"targetVersion":"2.0.0","overrideVersionCheck":false,"groupOrder":[…],"components":[
 *    {"id":"…","type":"POWERSHELF","status":"COMPLETED","versionBefore":"1.0.0","versionAfter":"2.0.0",…}]}`
 * Readers must ignore fields they do not know; a breaking change bumps `v`.
 */
export interface TaskReport {
  v: typeof TASK_REPORT_VERSION;
  /** The request's target_version, when it named one for every component. */
  targetVersion?: string;
  overrideVersionCheck: boolean;
  /** The request's override_readiness_check (absent in reports written before readiness). */
  overrideReadinessCheck?: boolean;
  /** The operation rule the task runs (src/domain/operation-rules.ts). */
  rule?: { id: string; version: number; name: string };
  /** The order component types are upgraded in: the rule's stages, flattened. */
  groupOrder: ComponentType[];
  components: ComponentReport[];
  /** What the operator should know the task did anyway, e.g. flashing components not ready. */
  warnings?: string[];
}

/** What a component is to be upgraded to: its own target, else the report's ("" if neither). */
export function targetOf(
  report: Pick<TaskReport, "targetVersion">,
  c: Pick<ComponentReport, "targetVersion">,
): string {
  return c.targetVersion ?? report.targetVersion ?? "";
}

/**
 * The first report of a task: every component PENDING, in upgrade order (the rule's, else
 * UPGRADE_GROUP_ORDER), then by id. A component's own `targetVersion` (from the baselines) is
 * kept; `targetVersion` is the request's, if any.
 */
export function initialReport(
  components: readonly { id: string; type: ComponentType; targetVersion?: string; subTargets?: string[] }[],
  targetVersion: string | undefined,
  overrideVersionCheck: boolean,
  overrideReadinessCheck = false,
  rule?: { id: string; version: number; name: string; order: readonly ComponentType[] },
): TaskReport {
  const order = rule?.order ?? UPGRADE_GROUP_ORDER;
  // Types the order does not name sort last (a rule covers every planned type; this is a guard).
  const rank = (t: ComponentType) => (order.includes(t) ? order.indexOf(t) : order.length);
  const sorted = [...components].sort(
    (a, b) => rank(a.type) - rank(b.type) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
  const report: TaskReport = {
    v: TASK_REPORT_VERSION,
    overrideVersionCheck,
    overrideReadinessCheck,
    ...(rule ? { rule: { id: rule.id, version: rule.version, name: rule.name } } : {}),
    groupOrder: [...order],
    components: sorted.map((c) => {
      const entry: ComponentReport = { id: c.id, type: c.type, status: "PENDING" };
      if (c.targetVersion !== undefined && c.targetVersion !== targetVersion)
        entry.targetVersion = c.targetVersion;
      if (c.subTargets !== undefined && c.subTargets.length > 0) entry.subTargets = [...c.subTargets];
      return entry;
    }),
  };
  if (targetVersion !== undefined) report.targetVersion = targetVersion;
  return report;
}

export function parseReport(text: string): TaskReport {
  const parsed = JSON.parse(text) as Omit<TaskReport, "v"> & { v: unknown };
  if (!READABLE_VERSIONS.includes(parsed.v as number))
    throw new Error(`task report version ${String(parsed.v)} is not supported`);
  // A v1 report is a v2 report whose components all take the report's targetVersion.
  return { ...parsed, v: TASK_REPORT_VERSION };
}

export function serializeReport(report: TaskReport): string {
  return JSON.stringify(report);
}

/**
 * Where a task stands by its report: its components done (COMPLETED or SKIPPED), updating (with
 * the mean of the progress their BMCs reported, when any did) and failed.
 */
export function reportProgress(report: TaskReport): {
  total: number;
  done: number;
  updating: number;
  failed: number;
  meanProgress?: number;
} {
  const count = (...statuses: ComponentProgress[]) =>
    report.components.filter((c) => statuses.includes(c.status)).length;
  const reported = report.components.flatMap((c) =>
    c.status === "UPDATING" && c.progress !== undefined ? [c.progress] : [],
  );
  const summary = {
    total: report.components.length,
    done: count("COMPLETED", "SKIPPED"),
    updating: count("UPDATING"),
    failed: count("FAILED"),
  };
  if (reported.length === 0) return summary;
  return { ...summary, meanProgress: Math.round(reported.reduce((a, b) => a + b, 0) / reported.length) };
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

/**
 * `"upgraded 18 components to 2.0.0 (3 already at 2.0.0)"`; with versions from the baselines,
 * `"upgraded 18 components to 2.0.0, 2.1.0 (3 already at their version)"`.
 */
export function completionMessage(task: Pick<Task, "report">): string {
  try {
    const report = parseReport(task.report);
    const done = report.components.filter((c) => c.status === "COMPLETED");
    const skipped = report.components.filter((c) => c.status === "SKIPPED").length;
    const targets = [...new Set(report.components.map((c) => targetOf(report, c)))].sort();
    const at = targets.length === 1 ? targets[0] : "their version";
    if (done.length === 0) return `all ${skipped} components already at ${at}`;
    const to = [...new Set(done.map((c) => targetOf(report, c)))].sort().join(", ");
    const tail = skipped > 0 ? ` (${skipped} already at ${at})` : "";
    return `upgraded ${done.length} component${done.length === 1 ? "" : "s"} to ${to}${tail}`;
  } catch {
    return "completed";
  }
}
