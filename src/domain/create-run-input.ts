/**
 * The raw create request, as decoded from the wire, before validation. Everything the client may
 * omit is optional; enums may be UNKNOWN. The gRPC converter builds it; `validateCreateRun` turns it
 * into a `RunConfig` or a list of violations.
 */
import type { FailureDomainKind } from "./failure-domain-spread.js";
import type {
  ComponentRef,
  ComponentType,
  FirmwareTemplate,
  GateScope,
  PhasePlan,
  RackRef,
  RetryRequest,
  TargetSpec,
} from "./model.js";

export type Scoped<T extends string> = T | "UNKNOWN";

export type SafetyGateInput =
  | { kind: "failureRate"; scope: Scoped<GateScope>; thresholdPercent: number }
  | { kind: "failureCount"; scope: Scoped<GateScope>; thresholdCount: number }
  /** `minFinished` absent when the message left it unset (the default applies). */
  | { kind: "observedFailureRate"; scope: Scoped<GateScope>; thresholdPercent: number; minFinished?: number }
  | { kind: "unset" };

export interface CreateRunInput {
  name: string;
  description: string;
  /** (ours) Retry a finished run: as sent, the run id unchecked (runs.ts checks it). */
  retry?: RetryRequest;
  /** (ours) Roll a finished run back: as sent. */
  rollback?: { runId: string };
  configuration?: {
    selector?: { kind: "percentage"; percentage: number; seed: string } | { kind: "unset" };
    options?: {
      maxConcurrentTargets: number;
      safetyPolicy?: { gates: SafetyGateInput[] };
      conflictPolicy?: {
        retry?: { retryTimeoutMs?: number; initialRetryDelayMs?: number; maxRetryDelayMs?: number };
      };
      orderingPolicy?:
        | { kind: "random"; seed: string }
        | { kind: "physicalLocation"; strategy: Scoped<"ROW_BY_ROW" | "ONE_PER_ROW_ROUND_ROBIN"> }
        | { kind: "unset" };
      phasePolicy?: {
        plan?: PhasePlan;
        advancePolicy?: { autoAdvance: boolean };
        /** A soak is absent when the message left it unset. */
        minSoakMs?: number;
        phaseMinSoakMs?: number[];
      };
      /** A window's duration is absent when the message left it unset. */
      maintenanceWindows?: { cron: string; durationMs?: number }[];
      failureDomainSpread?: { kind: Scoped<FailureDomainKind>; attribute: string; maxInFlight: number };
    };
    operation?: {
      upgradeFirmware?: Omit<FirmwareTemplate, "targetSpec"> & { targetSpec?: TargetSpecInput };
      targetScope?: { excludeOperationRunIds: string[]; defaultScopeComponentFilter?: ComponentFilterInput };
    };
  };
}

/** A target spec as sent: `unset` is an explicit but empty spec (an error, not the default scope). */
export type TargetSpecInput =
  | TargetSpec
  | { kind: "unset" }
  | {
      kind: "racks";
      racks: { ref: RackRef | { by: "unset" }; componentTypes: Scoped<ComponentType>[] }[];
    };

export type ComponentFilterInput =
  | { kind: "types"; types: Scoped<ComponentType>[] }
  | { kind: "components"; components: ComponentRef[] }
  | { kind: "unset" };
