/** Component readiness: the inventory's states, the reasons the preflight gives, its messages. */
import { describe, expect, it } from "vitest";
import {
  checkReadiness,
  MAX_READINESS_REASON,
  notReadyMessage,
  notReadyReason,
  readinessOverrideWarning,
} from "../../src/domain/readiness.js";

describe("readiness: what inventory stores", () => {
  it("READY is stored as nothing; NOT_READY and MAINTENANCE keep their (trimmed) reason", () => {
    expect(checkReadiness("READY", "", "r")).toEqual({ ok: true, readiness: undefined });
    expect(checkReadiness("READY", "ignored", "r")).toEqual({ ok: true, readiness: undefined });
    expect(checkReadiness("MAINTENANCE", " PSU swap ", "r")).toEqual({
      ok: true,
      readiness: { state: "MAINTENANCE", reason: "PSU swap" },
    });
  });

  it("every problem at once: a missing reason, one too long", () => {
    expect(checkReadiness("NOT_READY", "  ", "readiness")).toEqual({
      ok: false,
      violations: [{ field: "readiness.reason", rule: "a NOT_READY component needs a reason" }],
    });
    const long = "x".repeat(MAX_READINESS_REASON + 1);
    expect(checkReadiness("MAINTENANCE", long, "readiness")).toEqual({
      ok: false,
      violations: [
        {
          field: "readiness.reason",
          rule: `must be at most ${MAX_READINESS_REASON} characters (got ${long.length})`,
        },
      ],
    });
  });
});

describe("readiness: why a component is not ready (inventory first, then its BMC)", () => {
  it.each([
    ["ready everywhere", undefined, {}, undefined],
    ["no BMC word at all", undefined, undefined, undefined],
    ["the BMC says ready", undefined, { ready: true }, undefined],
    [
      "inventory MAINTENANCE",
      { state: "MAINTENANCE", reason: "PSU swap" },
      { ready: false, reason: "host down" },
      "in maintenance: PSU swap",
    ],
    ["inventory NOT_READY", { state: "NOT_READY", reason: "burn-in" }, undefined, "burn-in"],
    [
      "the BMC says not ready",
      undefined,
      { ready: false, reason: "host down" },
      "BMC reports not ready: host down",
    ],
    ["the BMC says not ready, no reason", undefined, { ready: false }, "BMC reports not ready"],
  ] as const)("%s", (_, inventory, bmc, reason) => {
    expect(notReadyReason(inventory, bmc)).toBe(reason);
  });
});

describe("readiness: messages", () => {
  const a = { id: "a", type: "COMPUTE" as const, reason: "in maintenance: PSU swap" };
  const b = { id: "b", type: "NVSWITCH" as const, reason: "burn-in" };

  it("the failed target names the first component, its type and reason, and counts the rest", () => {
    expect(notReadyMessage([a])).toBe("component a (COMPUTE) not ready: in maintenance: PSU swap");
    expect(notReadyMessage([a, b])).toBe(
      "component a (COMPUTE) not ready: in maintenance: PSU swap; 1 more component(s) not ready",
    );
    expect(notReadyMessage([])).toBe("");
  });

  it("the override warning names every component", () => {
    expect(readinessOverrideWarning([a, b])).toBe(
      "override_readiness_check: flashing components that are not ready: component a (COMPUTE): in maintenance: PSU swap; component b (NVSWITCH): burn-in",
    );
  });
});
