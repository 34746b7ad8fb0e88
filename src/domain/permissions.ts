/**
 * What each RPC needs: every RPC of every service the front serves (the Flow service with its
 * extensions, and flowadmin.v1.FlowInventoryAdmin; health and reflection are open) maps to exactly
 * one permission, in this one table. A unit test enumerates the generated service definitions and
 * fails for an RPC without an entry, and docs/security.md shows this table (a test keeps the two
 * equal).
 *
 *   read        runs, targets, tasks, events, plans, the version, inventory and policy reads
 *   operate     create a run or a task, pause, resume, advance, cancel a run or a task, report a
 *               completed target failed
 *   override    a request that sets override_readiness_check or override_version_check, and a
 *               resume of a run a safety gate or a conflict timeout paused (on top of operate)
 *   approve     approve a large run (the two-person rule)
 *   administer  inventory, baselines, rules, readiness, firmware images
 *
 * One exception, WhoAmI, is answered to anyone: it tells a caller its own identity and grants, so
 * that a refused caller can see why.
 *
 * A new RPC: one line here (a list or get → read, anything that changes inventory or policy →
 * administer), one row in docs/security.md.
 */

export const PERMISSIONS = ["read", "operate", "override", "approve", "administer"] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** What an RPC acts on, for its scope check and its denial message. */
export type RpcTarget =
  /** Nothing rack-scoped: any binding with the permission grants it, whatever its scope. */
  | "none"
  /** A run: the caller's scope must cover every rack of the run (pause, resume, advance, cancel). */
  | "run"
  /** A task: the caller's scope must cover its rack. */
  | "task"
  /** The racks the request plans or expands to, checked when the plan is frozen (create, upgrade). */
  | "planned-racks";

export interface RpcPermission {
  /** `anyone`: answered to every caller, verified or not (WhoAmI: the caller's own identity only). */
  permission: Permission | "anyone";
  /** How the denial message names what was refused: "<actor> may not <permission> <what>". */
  what: string;
  target: RpcTarget;
  /**
   * When `override` is needed as well: `checks` when the request sets override_readiness_check
   * or override_version_check; `gate-resume` when the run is paused by a safety gate or a conflict
   * retry timeout.
   */
  override?: "checks" | "gate-resume";
}

const FLOW = "/v1.Flow/";
const ADMIN = "/flowadmin.v1.FlowInventoryAdmin/";

/** RPC path (as gRPC sends it) → what it needs. */
export const RPC_PERMISSIONS: Readonly<Record<string, RpcPermission>> = {
  [`${FLOW}CreateOperationRun`]: {
    permission: "operate",
    what: "operation runs",
    target: "planned-racks",
    override: "checks",
  },
  [`${FLOW}PlanOperationRun`]: { permission: "read", what: "operation run plans", target: "none" },
  [`${FLOW}GetOperationRun`]: { permission: "read", what: "operation runs", target: "none" },
  [`${FLOW}ListOperationRuns`]: { permission: "read", what: "operation runs", target: "none" },
  [`${FLOW}ListOperationRunTargets`]: { permission: "read", what: "operation run targets", target: "none" },
  [`${FLOW}ListOperationRunEvents`]: { permission: "read", what: "operation run events", target: "none" },
  [`${FLOW}PauseOperationRun`]: { permission: "operate", what: "operation run", target: "run" },
  [`${FLOW}ResumeOperationRun`]: {
    permission: "operate",
    what: "operation run",
    target: "run",
    override: "gate-resume",
  },
  [`${FLOW}AdvanceOperationRunPhase`]: { permission: "operate", what: "operation run", target: "run" },
  [`${FLOW}CancelOperationRun`]: { permission: "operate", what: "operation run", target: "run" },
  [`${FLOW}ReportTargetFailure`]: { permission: "operate", what: "operation run", target: "run" },
  [`${FLOW}UpgradeFirmware`]: {
    permission: "operate",
    what: "firmware tasks",
    target: "planned-racks",
    override: "checks",
  },
  [`${FLOW}GetTasksByIDs`]: { permission: "read", what: "tasks", target: "none" },
  [`${FLOW}ListTasks`]: { permission: "read", what: "tasks", target: "none" },
  [`${FLOW}CancelTask`]: { permission: "operate", what: "task", target: "task" },
  [`${FLOW}Version`]: { permission: "read", what: "the version", target: "none" },
  [`${FLOW}WhoAmI`]: { permission: "anyone", what: "its own identity", target: "none" },
  [`${FLOW}ApproveOperationRun`]: { permission: "approve", what: "operation run", target: "run" },
  [`${ADMIN}ImportInventory`]: { permission: "administer", what: "inventory", target: "none" },
  [`${ADMIN}ListRacks`]: { permission: "read", what: "inventory", target: "none" },
  [`${ADMIN}SetFirmwareBaselines`]: { permission: "administer", what: "firmware baselines", target: "none" },
  [`${ADMIN}ListFirmwareBaselines`]: { permission: "read", what: "firmware baselines", target: "none" },
  [`${ADMIN}DeleteFirmwareBaseline`]: {
    permission: "administer",
    what: "firmware baselines",
    target: "none",
  },
  [`${ADMIN}SetComponentReadiness`]: {
    permission: "administer",
    what: "component readiness",
    target: "none",
  },
  [`${ADMIN}CreateOperationRule`]: { permission: "administer", what: "operation rules", target: "none" },
  [`${ADMIN}GetOperationRule`]: { permission: "read", what: "operation rules", target: "none" },
  [`${ADMIN}ListOperationRules`]: { permission: "read", what: "operation rules", target: "none" },
  [`${ADMIN}BeginFirmwareImageUpload`]: {
    permission: "administer",
    what: "firmware images",
    target: "none",
  },
  [`${ADMIN}CompleteFirmwareImageUpload`]: {
    permission: "administer",
    what: "firmware images",
    target: "none",
  },
  [`${ADMIN}ListFirmwareImages`]: { permission: "read", what: "firmware images", target: "none" },
  [`${ADMIN}DeleteFirmwareImage`]: { permission: "administer", what: "firmware images", target: "none" },
};

/** The roles every policy has; a policy may define more, not redefine these. */
export const DEFAULT_ROLES: Readonly<Record<string, readonly Permission[]>> = {
  viewer: ["read"],
  operator: ["read", "operate"],
  approver: ["read", "approve"],
  admin: ["read", "operate", "override", "approve", "administer"],
};

/** The RPC's name alone: "/v1.Flow/CreateOperationRun" → "CreateOperationRun". */
export function rpcName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/**
 * The table as docs/security.md shows it, one Markdown row per RPC in the table's order (a unit
 * test keeps the document equal to this):
 *   | `CreateOperationRun` | Flow | operate | the racks it plans; override to set override_… |
 */
export function permissionTableRows(): string[] {
  return Object.entries(RPC_PERMISSIONS).map(([path, entry]) => {
    const service = path.startsWith("/v1.Flow/") ? "Flow" : "FlowInventoryAdmin";
    const scope = {
      none: "",
      run: "every rack of the run",
      task: "the task's rack",
      "planned-racks": "every rack it plans",
    }[entry.target];
    const override =
      entry.override === "checks"
        ? "override too, to set override_readiness_check or override_version_check"
        : entry.override === "gate-resume"
          ? "override too, for a run a safety gate or a conflict timeout paused"
          : "";
    const notes = [scope === "" ? "" : `scope must cover ${scope}`, override]
      .filter((n) => n !== "")
      .join("; ");
    return `| \`${rpcName(path)}\` | ${service} | ${entry.permission} |${notes === "" ? "" : ` ${notes}`} |`;
  });
}
