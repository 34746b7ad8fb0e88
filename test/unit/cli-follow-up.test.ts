/**
 * flowctl run retry / rollback build their request from the followed run (cli/follow-up-commands.ts):
 * its options without the ordering seed, 100 % with a fresh selection seed, no operation (the
 * service takes the followed run's template), and the link. flowctl run targets prints prior
 * versions per (before, to) pair.
 */
import { describe, expect, it } from "vitest";
import { followUpRequest } from "../../cli/follow-up-commands.js";
import { priorVersionsText } from "../../cli/run-commands.js";
import * as pb from "../../src/gen/flow/v1/flow.js";

const RUN = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";

const followed = pb.OperationRun.fromPartial({
  summary: { name: "fw 2.0" },
  configuration: {
    selector: { selector: { $case: "percentage", value: { percentage: 30, seed: "old" } } },
    options: {
      maxConcurrentTargets: 7,
      safetyPolicy: { gates: [{ gate: { $case: "failureCount", value: { failureThresholdCount: 2 } } }] },
      orderingPolicy: { ordering: { $case: "random", value: { seed: "old-order" } } },
      phasePolicy: { plan: { $case: "equal", value: { phaseCount: 3 } } },
    },
    operation: { operation: { $case: "upgradeFirmware", value: { targetVersion: "2.0.0" } } },
  },
});

describe("flowctl run retry / rollback: the request", () => {
  it("the followed run's options (gates, concurrency, phases) without its seeds, no operation, the link", () => {
    const link = { retry: { operationRunId: { id: RUN }, includeTerminated: true, includeSkipped: false } };
    const request = followUpRequest("retry", RUN, followed, undefined, { ...link, rollback: undefined });
    expect(request.name).toBe("fw 2.0 retry");
    expect(request.description).toBe(`retry of run ${RUN}`);
    expect(request.configuration?.selector).toEqual({
      selector: { $case: "percentage", value: { percentage: 100, seed: "" } },
    });
    expect(request.configuration?.options).toEqual({
      ...followed.configuration?.options,
      orderingPolicy: undefined,
    });
    expect(request.configuration?.operation).toBeUndefined();
    expect(request.retry).toEqual(link.retry);
    expect(request.rollback).toBeUndefined();
  });

  it("--name names the new run", () => {
    const request = followUpRequest("rollback", RUN, followed, "back to 1.0", {
      retry: undefined,
      rollback: { operationRunId: { id: RUN } },
    });
    expect([request.name, request.rollback]).toEqual(["back to 1.0", { operationRunId: { id: RUN } }]);
  });
});

describe("flowctl run targets: prior versions", () => {
  it("components counted per (version before, version flashed to), in first-seen order", () => {
    const prior = (before: string, to: string) =>
      pb.ComponentPriorVersion.fromPartial({ priorVersion: before, targetVersion: to });
    expect(
      priorVersionsText([prior("1.0", "2.0"), prior("1.1", "2.0"), prior("1.0", "2.0"), prior("0.9", "")]),
    ).toBe("1.0→2.0×2 1.1→2.0×1 0.9→?×1");
    expect(priorVersionsText([])).toBe("");
  });
});
