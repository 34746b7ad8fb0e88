/**
 * A run file back from a stored configuration (cli/run-file/to-file.ts) parses to the same request,
 * and the files in examples/ parse.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseRunFile } from "../../cli/run-file/load.js";
import { runFileFromConfig } from "../../cli/run-file/to-file.js";
import * as pb from "../../src/gen/flow/v1/flow.js";

describe("run file: back from a configuration", () => {
  it("runFileFromConfig then parseRunFile gives the same request (seeds and defaults kept)", () => {
    const text = `
name: fw
description: d
selector: { percentage: 30%, seed: s1 }
options:
  maxConcurrentTargets: 4
  gates: [{ failureCount: 2, scope: cumulativeRun }, { failureRate: 25% }, { observedFailureRate: { percent: 50, minFinished: 4 } }]
  phases: { percentage: [10, 30, 60] }
  autoAdvance: false
  ordering: { random: { seed: s2 } }
  conflictRetry: { retryTimeout: 1h, initialRetryDelay: 30s, maxRetryDelay: 5m }
  maintenanceWindows: [{ cron: "0 2 * * MON-FRI", duration: 2h30m }]
  failureDomainSpread: { domain: attribute, attribute: datacenter, maxInFlight: 2 }
operation:
  upgradeFirmware:
    targetVersion: 7.2.0
    targets: { racks: [{ externalId: EXT-1, componentTypes: [COMPUTE] }, rack-b] }
    startTime: 2026-11-20T08:00:00Z
    endTime: 2026-11-27T08:00:00Z
  excludeRuns: [0a6f1a9e-0000-4000-8000-000000000001]
`;
    const req = parseRunFile(text, "f");
    const doc = runFileFromConfig(req.name, req.description, req.configuration);
    expect(parseRunFile(JSON.stringify(doc), "f")).toEqual(req);
    expect(doc.options).toMatchObject({
      conflictRetry: { retryTimeout: "1h", initialRetryDelay: "30s", maxRetryDelay: "5m" },
      maintenanceWindows: [{ cron: "0 2 * * MON-FRI", duration: "2h30m" }],
    });
  });
  it("queue strategies and gate scopes are written by name; UNSPECIFIED is left out, UNKNOWN is currentPhase", () => {
    const gate = (scope: pb.OperationRunSafetyGateScope): pb.OperationRunSafetyGate => ({
      gate: { $case: "failureCount", value: { scope, failureThresholdCount: 1 } },
    });
    const config = (conflictStrategy: pb.ConflictStrategy) =>
      pb.OperationRunConfiguration.fromPartial({
        options: {
          safetyPolicy: {
            gates: [
              gate(pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN),
              gate(pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_UNKNOWN),
            ],
          },
        },
        operation: {
          operation: { $case: "upgradeFirmware", value: { queueOptions: { conflictStrategy } } },
        },
      });
    const written = (s: pb.ConflictStrategy) => {
      const doc = runFileFromConfig("fw", "", config(s));
      const op = doc.operation as { upgradeFirmware: { queue: unknown } };
      return { gates: (doc.options as { gates: unknown }).gates, queue: op.upgradeFirmware.queue };
    };
    expect(written(pb.ConflictStrategy.CONFLICT_STRATEGY_QUEUE)).toEqual({
      gates: [
        { failureCount: 1, scope: "cumulativeRun" },
        { failureCount: 1, scope: "currentPhase" },
      ],
      queue: { strategy: "queue" },
    });
    expect(written(pb.ConflictStrategy.CONFLICT_STRATEGY_REJECT).queue).toEqual({ strategy: "reject" });
    expect(written(pb.ConflictStrategy.CONFLICT_STRATEGY_UNSPECIFIED).queue).toEqual({});
  });
});

describe("run file: the examples in examples/", () => {
  it.each([
    "examples/canary.yaml",
    "examples/quickstart.yaml",
    "examples/explicit-racks.json",
    "examples/nightly-window.yaml",
  ])("%s parses", (file) => {
    const req = parseRunFile(readFileSync(file, "utf8"), file);
    expect(req.name).not.toBe("");
    expect(req.configuration?.options?.safetyPolicy?.gates.length).toBeGreaterThan(0);
  });
});
