import { describe, expect, it } from "vitest";
import { runEventDetail } from "../../src/adapters/eventbridge/run-event-bus.js";
import { runConfigToProto } from "../../src/adapters/grpc/convert/config-response.js";
import { runEventToProto } from "../../src/adapters/grpc/convert/run-events.js";
import { createRunInputFromProto } from "../../src/adapters/grpc/convert/run-request.js";
import type { CreateRunInput } from "../../src/domain/create-run-input.js";
import { ValidationError } from "../../src/domain/errors.js";
import type { RunHistoryEvent } from "../../src/domain/history-event.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { PhasePlan, RunConfig } from "../../src/domain/model.js";
import { planRun } from "../../src/domain/planner.js";
import { validateCreateRun } from "../../src/domain/run-config.js";
import type * as pb from "../../src/gen/flow/v1/flow.js";
import { runConfig } from "../support/domain-fixtures.js";

const NOW = 1_600_000_000_000;
const PHASES = "configuration.options.phase_policy";

function input(
  phasePolicy: NonNullable<NonNullable<CreateRunInput["configuration"]>["options"]>["phasePolicy"],
) {
  return {
    name: "soak",
    description: "",
    configuration: {
      selector: { kind: "percentage", percentage: 100, seed: "s" },
      options: {
        maxConcurrentTargets: 2,
        safetyPolicy: { gates: [{ kind: "failureCount", scope: "UNKNOWN", thresholdCount: 1 }] },
        phasePolicy,
      },
      operation: {
        upgradeFirmware: {
          description: "",
          targetVersion: "1.0.0",
          subTargets: [],
          overrideReadinessCheck: false,
          overrideVersionCheck: false,
        },
      },
    },
  } as CreateRunInput;
}

function soaksOf(phasePolicy: Parameters<typeof input>[0]): Pick<RunConfig, "minSoakMs" | "phaseMinSoakMs"> {
  const result = validateCreateRun(input(phasePolicy), () => "seed", NOW);
  if (!result.ok) throw new Error(JSON.stringify(result.violations));
  const { minSoakMs, phaseMinSoakMs } = result.config;
  return { ...(minSoakMs === undefined ? {} : { minSoakMs }), ...(phaseMinSoakMs ? { phaseMinSoakMs } : {}) };
}

function violationsOf(phasePolicy: Parameters<typeof input>[0]): [string, string][] {
  const result = validateCreateRun(input(phasePolicy), () => "seed", NOW);
  if (result.ok) throw new Error("expected violations");
  return result.violations.map((v) => [v.field, v.rule]);
}

const equal3: PhasePlan = { kind: "equal", phaseCount: 3 };

describe("validateCreateRun: the phase soaks", () => {
  it("keeps a positive soak, and per-phase soaks (a 0 entry too: it turns the soak off for its phase)", () => {
    expect(soaksOf({ plan: equal3, minSoakMs: 30_000 })).toEqual({ minSoakMs: 30_000 });
    expect(soaksOf({ plan: equal3, minSoakMs: 30_000, phaseMinSoakMs: [0, 3_600_000] })).toEqual({
      minSoakMs: 30_000,
      phaseMinSoakMs: [0, 3_600_000],
    });
  });

  it("leaves out no soak, a 0 soak and an empty list: nothing to act on", () => {
    expect(soaksOf({ plan: equal3 })).toEqual({});
    expect(soaksOf({ plan: equal3, minSoakMs: 0, phaseMinSoakMs: [] })).toEqual({});
    expect(soaksOf(undefined)).toEqual({});
  });

  it("accepts 720h and refuses more, and a negative soak, naming the field", () => {
    expect(soaksOf({ minSoakMs: 720 * 3_600_000 })).toEqual({ minSoakMs: 720 * 3_600_000 });
    expect(violationsOf({ minSoakMs: 720 * 3_600_000 + 1 })).toEqual([
      [`${PHASES}.min_soak`, "must be between 0s and 720h0m0s (got 720h0m0.001s)"],
    ]);
    expect(violationsOf({ plan: equal3, phaseMinSoakMs: [1_000, -1_000] })).toEqual([
      [`${PHASES}.phase_min_soaks.min_soaks[1]`, "must be between 0s and 720h0m0s (got -1s)"],
    ]);
  });

  it.each([
    [{ kind: "equal", phaseCount: 2 } as PhasePlan, 3, "has 3 entries for a phase plan of at most 2 phases"],
    [
      { kind: "percentage", percentages: [50, 50] } as PhasePlan,
      3,
      "has 3 entries for a phase plan of at most 2 phases",
    ],
    [{ kind: "count", counts: [1, 2] } as PhasePlan, 4, "has 4 entries for a phase plan of at most 3 phases"],
    [undefined, 2, "has 2 entries for a phase plan of at most 1 phase"],
  ])("refuses more per-phase soaks than plan %j can have phases", (plan, entries, rule) => {
    const phaseMinSoakMs = Array.from({ length: entries }, () => 1_000);
    expect(violationsOf({ ...(plan ? { plan } : {}), phaseMinSoakMs })).toEqual([
      [`${PHASES}.phase_min_soaks.min_soaks`, rule],
    ]);
  });
});

describe("planRun: per-phase soaks against the phases it made", () => {
  const inventory: InventoryRack[] = [1, 2].map((n) => ({
    id: `00000000-0000-4000-8000-00000000000${n}`,
    name: `rack-${n}`,
    components: [{ id: `c0000000-0000-4000-8000-00000000000${n}`, type: "COMPUTE" }],
  }));

  it("a count plan without a remainder phase has fewer phases than soaks: InvalidArgument", () => {
    const config = runConfig({ phasePlan: { kind: "count", counts: [1, 1] }, phaseMinSoakMs: [1, 2, 3] });
    expect(() => planRun({ config, inventory, excludedTargets: [] })).toThrow(
      expect.objectContaining({
        code: "INVALID_ARGUMENT",
        message: "configuration.options.phase_policy.phase_min_soaks: 3 soaks for 2 phases",
      }),
    );
    const single = runConfig({ phasePlan: { kind: "count", counts: [2] }, phaseMinSoakMs: [1, 2] });
    expect(() => planRun({ config: single, inventory, excludedTargets: [] })).toThrow(
      "configuration.options.phase_policy.phase_min_soaks: 2 soaks for 1 phase",
    );
    const fits = runConfig({ phasePlan: { kind: "count", counts: [1, 1] }, phaseMinSoakMs: [1, 2] });
    expect(planRun({ config: fits, inventory, excludedTargets: [] }).phaseSizes).toEqual([1, 1]);
  });
});

describe("the wire: min_soak and phase_min_soaks in, the effective soaks back", () => {
  const request = (policy: Partial<pb.OperationRunPhasePolicy>): pb.CreateOperationRunRequest =>
    ({
      name: "soak",
      description: "",
      clientRequestId: "",
      configuration: {
        options: {
          maxConcurrentTargets: 1,
          maintenanceWindows: [],
          phasePolicy: { plan: undefined, advancePolicy: undefined, ...policy },
        },
      },
    }) as unknown as pb.CreateOperationRunRequest;

  it("decodes durations to ms with their paths", () => {
    const decoded = createRunInputFromProto(
      request({
        minSoak: { seconds: 30, nanos: 0 },
        phaseMinSoaks: {
          minSoaks: [
            { seconds: 0, nanos: 0 },
            { seconds: 3600, nanos: 500_000_000 },
          ],
        },
      }),
    );
    expect(decoded.configuration?.options?.phasePolicy).toMatchObject({
      minSoakMs: 30_000,
      phaseMinSoakMs: [0, 3_600_500],
    });
    expect(() => createRunInputFromProto(request({ minSoak: { seconds: 1, nanos: -5 } }))).toThrow(
      ValidationError,
    );
  });

  it("echoes the effective soaks in the configuration, and none when there are none", () => {
    const withSoaks = runConfigToProto(runConfig({ minSoakMs: 30_000, phaseMinSoakMs: [0, 1_500] }));
    expect(withSoaks.options?.phasePolicy?.minSoak).toEqual({ seconds: 30, nanos: 0 });
    expect(withSoaks.options?.phasePolicy?.phaseMinSoaks).toEqual({
      minSoaks: [
        { seconds: 0, nanos: 0 },
        { seconds: 1, nanos: 500_000_000 },
      ],
    });
    const without = runConfigToProto(runConfig());
    expect(without.options?.phasePolicy?.minSoak).toBeUndefined();
    expect(without.options?.phasePolicy?.phaseMinSoaks).toBeUndefined();
  });
});

describe("SOAK_STARTED, out: on the wire and on the bus", () => {
  const event: RunHistoryEvent = {
    runId: "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
    at: Date.parse("2026-12-05T00:00:00Z"),
    seq: 0,
    kind: "SOAK_STARTED",
    runName: "soak",
    status: "RUNNING",
    reason: "NONE",
    message: "phase 1 complete: phase 1 soaking until 2026-12-05T00:00:30Z",
    phaseIndex: 0,
    totalPhases: 2,
    stats: {
      current: {
        phaseIndex: 0,
        selectedTargets: 2,
        outcomes: { completed: 2, failed: 0, terminated: 0, skipped: 0 },
      },
      cumulative: {
        phaseIndex: 0,
        selectedTargets: 2,
        outcomes: { completed: 2, failed: 0, terminated: 0, skipped: 0 },
      },
    },
    detail: { type: "soak", phaseIndex: 0, minSoakMs: 30_000, endsAt: Date.parse("2026-12-05T00:00:30Z") },
  };

  it("gRPC: kind SOAK_STARTED = 110 and the soak detail", () => {
    const out = runEventToProto(event);
    expect(out.kind).toBe(110);
    expect(out.detail).toEqual({
      $case: "soak",
      value: { phaseIndex: 0, minSoak: { seconds: 30, nanos: 0 }, endsAt: new Date("2026-12-05T00:00:30Z") },
    });
  });

  it("EventBridge: kind and a soak key", () => {
    expect(runEventDetail(event)).toMatchObject({
      kind: "SOAK_STARTED",
      soak: { phaseIndex: 0, minSoakMs: 30_000, endsAt: "2026-12-05T00:00:30.000Z" },
    });
  });
});
