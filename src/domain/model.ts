/**
 * The domain model of operation runs: plain values, no I/O, independent of the wire format.
 * The run, its configuration and its targets are here; the other concepts have a module each:
 * inventory.ts (racks and components), task.ts (child tasks), create-run-input.ts (the create
 * request before validation), failure-domain-spread.ts and soak-config.ts (parts of the run
 * configuration), stats.ts (run stats) and list-queries.ts (the list queries).
 *
 * Conventions
 * - IDs are canonical lowercase UUID strings.
 * - Instants are epoch milliseconds (`number`); durations are milliseconds (`number`).
 * - Enumerations are `as const` string unions; switch on them exhaustively (see `assertNever`).
 * - Field paths in errors use the proto field names (snake_case), e.g.
 *   `configuration.options.safety_policy.gates[0].failure_rate.failure_threshold_percent`.
 */

import type { Actor } from "./actor.js";
import type { FailureDomainSpread } from "./failure-domain-spread.js";
import type { SoakConfig } from "./soak-config.js";

export function assertNever(value: never): never {
  throw new Error(`unreachable: ${JSON.stringify(value)}`);
}

// ---------------------------------------------------------------------------------------------
// Enumerations

/** In the published enum's order (COMPONENT_TYPE_COMPUTE = 1 … CDU = 6). */
export const COMPONENT_TYPES = ["COMPUTE", "NVSWITCH", "POWERSHELF", "TORSWITCH", "UMS", "CDU"] as const;
export type ComponentType = (typeof COMPONENT_TYPES)[number];

export const RUN_STATUSES = [
  "PENDING",
  "RUNNING",
  "PAUSED",
  "COMPLETED",
  "CANCELLED",
  "FAILED",
  "COMPLETED_WITH_FAILURES",
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const TERMINAL_RUN_STATUSES: ReadonlySet<RunStatus> = new Set([
  "COMPLETED",
  "CANCELLED",
  "FAILED",
  "COMPLETED_WITH_FAILURES",
]);
export const isTerminalRun = (s: RunStatus): boolean => TERMINAL_RUN_STATUSES.has(s);

export const RUN_REASONS = [
  "NONE",
  "OPERATOR_PAUSED",
  "PHASE_GATE",
  "SAFETY_GATE",
  "CONFLICT_RETRY_TIMEOUT",
  /** (ours) The run's end_time passed with targets never started (OPERATION_RUN_STATUS_REASON_MAINTENANCE_WINDOW = 100). */
  "MAINTENANCE_WINDOW",
  /**
   * (ours) Created paused by the two-person rule: its plan holds at least the access policy's
   * `approval.minRacks` racks (OPERATION_RUN_STATUS_REASON_AWAITING_APPROVAL = 110).
   */
  "AWAITING_APPROVAL",
  /**
   * (ours) A rack's external health check answered inconclusive, or not in time: a person looks,
   * then resumes or reports the rack failed (OPERATION_RUN_STATUS_REASON_EXTERNAL_CHECK_INCONCLUSIVE = 130).
   */
  "EXTERNAL_CHECK_INCONCLUSIVE",
] as const;
export type RunReason = (typeof RUN_REASONS)[number];

export const TARGET_STATUSES = [
  "PENDING",
  "BLOCKED",
  "SUBMITTED",
  "COMPLETED",
  "FAILED",
  "TERMINATED",
  "SKIPPED",
  "CLAIMED",
] as const;
export type TargetStatus = (typeof TARGET_STATUSES)[number];
export const TERMINAL_TARGET_STATUSES: ReadonlySet<TargetStatus> = new Set([
  "COMPLETED",
  "FAILED",
  "TERMINATED",
  "SKIPPED",
]);
export const isTerminalTarget = (s: TargetStatus): boolean => TERMINAL_TARGET_STATUSES.has(s);
/** The terminal target statuses that have an outcome counter. */
export type OutcomeStatus = "COMPLETED" | "FAILED" | "TERMINATED" | "SKIPPED";

export const GATE_SCOPES = ["CURRENT_PHASE", "CUMULATIVE_RUN"] as const;
export type GateScope = (typeof GATE_SCOPES)[number];

export const PHASE_SCOPES = ["CURRENT_PHASE", "COMPLETED_PHASES", "CURRENT_AND_COMPLETED_PHASES"] as const;
export type PhaseScope = (typeof PHASE_SCOPES)[number];

export const OPERATION_TYPES = ["POWER_CONTROL", "FIRMWARE_CONTROL"] as const;
export type OperationType = (typeof OPERATION_TYPES)[number];

// ---------------------------------------------------------------------------------------------
// The operation template (UpgradeFirmwareRequest, in domain terms)

export type RackRef =
  | { by: "id"; id: string }
  | { by: "name"; name: string }
  | { by: "externalId"; externalId: string };
export type ComponentRef =
  | { by: "id"; id: string }
  | { by: "external"; type: ComponentType; externalId: string };
export type NvlDomainRef = { by: "id"; id: string } | { by: "name"; name: string };

/** An explicit target spec: exactly one kind. `componentTypes` empty = every component type. */
export type TargetSpec =
  | { kind: "racks"; racks: { ref: RackRef; componentTypes: ComponentType[] }[] }
  | { kind: "components"; components: ComponentRef[] }
  | { kind: "nvlDomains"; domains: { ref: NvlDomainRef; componentTypes: ComponentType[] }[] };

export type ComponentFilter =
  | { kind: "types"; types: ComponentType[] }
  | { kind: "components"; componentIds: string[] };

export type ConflictStrategy = "UNSPECIFIED" | "QUEUE" | "REJECT";

/** Firmware credentials. Stored encrypted at rest; never returned by any read, never logged. */
export type FirmwareAuthentication =
  | { kind: "shared"; secret: string }
  | { kind: "perComponent"; compute?: string; nvswitch?: string; powershelf?: string };

export interface FirmwareTemplate {
  /** Inside a run: optional candidate base scope. For a plain UpgradeFirmware: required. */
  targetSpec?: TargetSpec;
  targetVersion?: string;
  startTime?: number;
  endTime?: number;
  description: string;
  queueOptions?: { conflictStrategy: ConflictStrategy; queueTimeoutSeconds: number };
  ruleId?: string;
  subTargets: string[];
  overrideReadinessCheck: boolean;
  authentication?: FirmwareAuthentication;
  overrideVersionCheck: boolean;
}

// ---------------------------------------------------------------------------------------------
// The effective run configuration (validated, defaults and generated seeds filled in)

export type SafetyGate =
  | { kind: "failureRate"; scope: GateScope; thresholdPercent: number }
  | { kind: "failureCount"; scope: GateScope; thresholdCount: number }
  /** (ours) failed / finished in the scope, judged once `minFinished` targets of it have finished. */
  | { kind: "observedFailureRate"; scope: GateScope; thresholdPercent: number; minFinished: number };

export type PhasePlan =
  | { kind: "equal"; phaseCount: number }
  | { kind: "percentage"; percentages: number[] }
  | { kind: "count"; counts: number[] };

export interface ConflictRetryPolicy {
  retryTimeoutMs: number;
  initialRetryDelayMs: number;
  maxRetryDelayMs: number;
}

/**
 * (ours) A recurring maintenance window: opens at each match of a 5-field UTC cron and stays open
 * `durationMs` (the grammar is in src/domain/cron.ts, the arithmetic in maintenance-window.ts).
 */
export interface MaintenanceWindow {
  cron: string;
  durationMs: number;
}

/** The soak fields (`minSoakMs`, `phaseMinSoakMs`) are the phase soak's (src/domain/soak-config.ts). */
export interface RunConfig extends SoakConfig {
  selector: { kind: "percentage"; percentage: number; seed: string };
  maxConcurrentTargets: number;
  safetyGates: SafetyGate[];
  conflictRetry: ConflictRetryPolicy;
  ordering: { kind: "random"; seed: string };
  phasePlan: PhasePlan;
  autoAdvance: boolean;
  operation: { kind: "upgradeFirmware"; firmware: FirmwareTemplate };
  targetScope: { excludeOperationRunIds: string[]; defaultScopeComponentFilter?: ComponentFilter };
  /**
   * Recurring windows: targets are claimed only inside one (the template's start and end times
   * still bound the run). Absent = none, as in every run stored before windows existed.
   */
  maintenanceWindows?: MaintenanceWindow[];
  /** (ours) At most `maxInFlight` racks of one failure domain in flight; absent = no spread. */
  failureDomainSpread?: FailureDomainSpread;
}

// ---------------------------------------------------------------------------------------------
// Plans, runs and targets

/** (ours) What a retry run takes of the run it retries: its FAILED targets, and optionally more. */
export interface RetryRequest {
  runId: string;
  includeTerminated: boolean;
  includeSkipped: boolean;
}

/** (ours) A run made from another finished run: retried, or rolled back. */
export type RunOrigin = ({ kind: "retry" } & RetryRequest) | { kind: "rollback"; runId: string };

/** (ours) A retry or rollback run created for a run (its RETRIED / ROLLED_BACK history event). */
export interface FollowUp {
  kind: "retry" | "rollback";
  runId: string;
}

export interface ComponentsForType {
  type: ComponentType;
  componentIds: string[];
}

/** Components to be upgraded to one firmware version, resolved from the baselines and frozen. */
export interface VersionGroup {
  version: string;
  componentIds: string[];
}

/**
 * What one component ran before a run flashed it: the version its BMC answered to the child
 * task's preflight query, kept on the target before the component's first flash, next to the
 * version the run flashes it to and the parts the flash covers (absent: the whole component).
 * What a rollback run takes each component back to (src/domain/rollback.ts).
 */
export interface PriorVersion {
  componentId: string;
  type: ComponentType;
  /** The version before the flash. */
  version: string;
  /** The version the run flashes it to ("" when the task knew none). */
  targetVersion: string;
  subTargets?: string[];
}

/** (ours) A component of a planned rack that a rollback run leaves alone, and why. */
export interface ComponentSkip {
  componentId: string;
  type: ComponentType;
  /** "never flashed", "already at its prior version 1.2.0", "no prior version recorded", … */
  reason: string;
}

export interface PlannedTarget {
  rackId: string;
  sequenceIndex: number;
  phaseIndex: number;
  componentsByType: ComponentsForType[];
  /** (ours) The rack's failure domain, with a spread only. */
  failureDomain?: string;
}

export interface Plan {
  /** Racks in the candidate set after exclusions, before selection. */
  candidateCount: number;
  /** Planned targets per phase; sums to `targets.length`; no zero entries. */
  phaseSizes: number[];
  /** In sequence order (which is also phase order). */
  targets: PlannedTarget[];
}

export interface OutcomeCounts {
  completed: number;
  failed: number;
  terminated: number;
  skipped: number;
}

export interface Run {
  id: string;
  name: string;
  description: string;
  config: RunConfig;
  status: RunStatus;
  reason: RunReason;
  statusMessage: string;
  /** Planned targets per phase, frozen at create. `phaseSizes.length` is total_phases. */
  phaseSizes: number[];
  currentPhaseIndex: number;
  /** Outcome counters per phase, moved exactly once per target transition. */
  counters: OutcomeCounts[];
  /** Targets CLAIMED or SUBMITTED now; kept <= config.maxConcurrentTargets by conditional writes. */
  inFlight: number;
  /**
   * (ours) With a failure-domain spread: targets in flight per domain, each kept <= the spread's
   * maxInFlight by the same conditional writes. Absent (or a domain missing) = 0.
   */
  domainInFlight?: Record<string, number>;
  /**
   * The operation rule `rule_id` pinned, frozen at create (a later version does not change the
   * run). Absent: the built-in DEFAULT_RULE (src/domain/operation-rules.ts).
   */
  rule?: OperationRule;
  /** (ours) The run this one retries or rolls back, frozen at create. */
  origin?: RunOrigin;
  /** (ours) Retry and rollback runs created for this run, oldest first. */
  followUps?: FollowUp[];
  createdAt: number;
  updatedAt: number;
  startedAt?: number;
  finishedAt?: number;
  /** (ours) While the current phase soaks: when its soak ends (src/domain/soak.ts). */
  soakEndsAt?: number;
}

export interface Target {
  id: string;
  runId: string;
  rackId: string;
  sequenceIndex: number;
  phaseIndex: number;
  status: TargetStatus;
  message: string;
  taskId?: string;
  componentsByType: ComponentsForType[];
  /**
   * The rack's external id as inventory had it at create, frozen with the plan: listing targets
   * then reads no rack items (a rack item is ~4 KB; 100 of them cost 100 read units a page).
   * Absent when the rack had none; listing then asks inventory, and fails if it still has none.
   */
  rackExternalId?: string;
  /** (ours) The rack's failure domain as planned, with a spread only: its claim holds a domain slot. */
  failureDomain?: string;
  /**
   * Each component's firmware version, resolved from the firmware baselines at create and frozen
   * with the plan (a later baseline edit does not re-plan). Absent when the run names one
   * `target_version` for every component.
   */
  versions?: VersionGroup[];
  /**
   * Every component's version before this run flashed it, recorded once by its child task's
   * preflight, before the first flash (a re-driven preflight finds it there and keeps it).
   * Absent until then, and for targets that never got a task past the preflight.
   */
  priorVersions?: PriorVersion[];
  /** (ours) A rollback run's target: the rack's components it leaves alone, and why. */
  skippedComponents?: ComponentSkip[];
  createdAt: number;
  updatedAt: number;
  /** While CLAIMED: when the claim lease runs out and another dispatcher may take it. */
  leaseExpiresAt?: number;
  /** Conflict backoff state; survives re-claims (see "Where we go further"). */
  conflictAttempts: number;
  firstBlockedAt?: number;
  /** While BLOCKED: when the target becomes ready again. */
  retryAt?: number;
  /**
   * (ours) A failure of this COMPLETED target reported afterwards (src/domain/late-failure.ts):
   * who reported it and when; the target is FAILED and its message is the reason.
   */
  failureReportedBy?: Actor;
  failureReportedAt?: number;
}

// ---------------------------------------------------------------------------------------------
// Operation rules (their validation and the built-in rule: operation-rules.ts)

export const RULE_ACTIONS = [
  "UPDATE_FIRMWARE",
  "VERIFY_VERSION",
  "VERIFY_REACHABILITY",
  "SLEEP",
  // Activation: the resets that make a staged version active, and the wait for the BMCs after them.
  "RESET_BMC",
  "POWER_CYCLE_HOST",
  "AC_CYCLE",
  "WAIT_BRING_UP",
  // Health after activation: each BMC's own health must be OK.
  "CHECK_HEALTH",
] as const;
export type RuleAction = (typeof RULE_ACTIONS)[number];

export interface RuleRetry {
  /** Retries after the first attempt (0 = none). */
  maxRetries: number;
  intervalSeconds: number;
  /** ≥ 1: the wait before retry n+1 is intervalSeconds · backoffRate^n. */
  backoffRate: number;
}

export interface RuleStep {
  action: RuleAction;
  /** 0 = the deployment's (updateTimeoutSeconds for the update, preflightTimeoutSeconds for a verify). */
  timeoutSeconds: number;
  retry?: RuleRetry;
  /** SLEEP only. */
  sleepSeconds: number;
  /** CHECK_HEALTH only: the deployment's external check to hand the rack to (src/domain/external-check.ts). */
  externalCheck?: RuleExternalCheck;
  /**
   * AC_CYCLE only: `RACK` cycles the whole rack through its power shelf (one reset of kind `rack`
   * to the rack's POWERSHELF component); absent: each component's own tray.
   */
  acScope?: "RACK";
}

/** What an AC_CYCLE step power-cycles: each component's tray (the default), or the whole rack. */
export const AC_SCOPES = ["TRAY", "RACK"] as const;
export type AcScope = (typeof AC_SCOPES)[number];

/** A CHECK_HEALTH step's external check: its configured name; 0 = the check's configured timeout. */
export interface RuleExternalCheck {
  name: string;
  timeoutSeconds: number;
}

export interface RuleStage {
  name: string;
  componentTypes: ComponentType[];
  /** Components of the stage flashed at once; 0 = the deployment's maxParallel. */
  maxParallel: number;
  steps: RuleStep[];
}

/** What an operator writes; the store adds identity. */
export interface RuleDefinition {
  name: string;
  description: string;
  stages: RuleStage[];
  /** 0 = the deployment's readiness timeout. */
  readinessTimeoutSeconds: number;
}

export interface OperationRule extends RuleDefinition {
  id: string;
  /** 1, 2, …: each write is a new version; a version never changes. */
  version: number;
  createdAt: number;
}
