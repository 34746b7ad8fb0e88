import { describe, expect, it } from "vitest";
import type { FailureDomainSpread } from "../../src/domain/failure-domain-spread.js";
import {
  assignFailureDomains,
  checkFailureDomainSpread,
  chooseClaims,
  domainGate,
  domainsTaken,
  failureDomainOf,
  pendingToRead,
} from "../../src/domain/failure-domains.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { Run, Target } from "../../src/domain/model.js";
import { Violations } from "../../src/domain/violations.js";
import { runConfig } from "../support/domain-fixtures.js";

const ROW1: FailureDomainSpread = { kind: "ROW", maxInFlight: 1 };

function target(id: string, domain: string | undefined, status: Target["status"] = "PENDING"): Target {
  return {
    id,
    runId: "r",
    rackId: `rack-${id}`,
    sequenceIndex: 0,
    phaseIndex: 0,
    status,
    message: "",
    componentsByType: [],
    createdAt: 0,
    updatedAt: 0,
    conflictAttempts: 0,
    ...(domain === undefined ? {} : { failureDomain: domain }),
  };
}

const run = (spread: FailureDomainSpread | undefined, domainInFlight?: Record<string, number>) => ({
  config: runConfig(spread === undefined ? {} : { failureDomainSpread: spread }),
  ...(domainInFlight ? { domainInFlight } : {}),
});
const ids = (targets: readonly Target[]) => targets.map((t) => t.id);

describe("failure domains: a rack's domain", () => {
  const rack: Pick<InventoryRack, "location" | "nvlDomain"> = {
    location: { datacenter: "dc1", row: "A", position: 3 },
    nvlDomain: { id: "n-1", name: "nvl-07" },
  };
  it.each([
    [{ kind: "ROW", maxInFlight: 1 }, "dc1/A"],
    [{ kind: "NVL_DOMAIN", maxInFlight: 1 }, "nvl-07"],
    [{ kind: "ATTRIBUTE", attribute: "datacenter", maxInFlight: 1 }, "dc1"],
    [{ kind: "ATTRIBUTE", attribute: "power_feed", maxInFlight: 1 }, undefined],
  ] as [FailureDomainSpread, string | undefined][])("%o → %s", (spread, domain) => {
    expect(failureDomainOf(rack, spread)).toBe(domain);
  });

  it("a rack without a location or NVLink domain has none", () => {
    expect(failureDomainOf({}, ROW1)).toBeUndefined();
    expect(failureDomainOf({}, { kind: "NVL_DOMAIN", maxInFlight: 1 })).toBeUndefined();
    expect(
      failureDomainOf({}, { kind: "ATTRIBUTE", attribute: "datacenter", maxInFlight: 1 }),
    ).toBeUndefined();
  });

  it("assigns each planned rack its domain; racks the inventory places in none are refused by name", () => {
    const racks = new Map<string, Pick<InventoryRack, "name" | "location" | "nvlDomain">>([
      ["a", { name: "rack-a", location: { datacenter: "dc1", row: "A", position: 0 } }],
      ["b", { name: "rack-b", location: { datacenter: "dc2", row: "A", position: 0 } }],
    ]);
    expect(assignFailureDomains(["a", "b"], racks, ROW1)).toEqual(
      new Map([
        ["a", "dc1/A"],
        ["b", "dc2/A"],
      ]),
    );
    const many = new Map<string, Pick<InventoryRack, "name" | "location" | "nvlDomain">>([
      ...racks,
      ...["c", "d", "e", "f", "g", "h"].map((id): [string, { name: string }] => [id, { name: `rack-${id}` }]),
    ]);
    expect(() => assignFailureDomains(["a", "c", "d", "e", "f", "g", "h", "x"], many, ROW1)).toThrow(
      "configuration.options.failure_domain_spread: the inventory places no row for 7 planned racks: rack-c, rack-d, rack-e, rack-f, rack-g and 2 more",
    );
    expect(() => assignFailureDomains(["c"], many, { kind: "NVL_DOMAIN", maxInFlight: 2 })).toThrow(
      "configuration.options.failure_domain_spread: the inventory places no NVLink domain for 1 planned rack: rack-c",
    );
    expect(() =>
      assignFailureDomains(["c"], many, { kind: "ATTRIBUTE", attribute: "datacenter", maxInFlight: 2 }),
    ).toThrow('the inventory places no attribute "datacenter" for 1 planned rack: rack-c');
  });
});

describe("failure domains: validation", () => {
  const check = (input: Parameters<typeof checkFailureDomainSpread>[0]) => {
    const v = new Violations();
    return { spread: checkFailureDomainSpread(input, v), violations: v.list };
  };
  const F = "configuration.options.failure_domain_spread";

  it("absent → no spread; ROW and NVL_DOMAIN without attribute; ATTRIBUTE with a known one (trimmed)", () => {
    expect(check(undefined)).toEqual({ spread: undefined, violations: [] });
    expect(check({ kind: "ROW", attribute: "", maxInFlight: 1 }).spread).toEqual({
      kind: "ROW",
      maxInFlight: 1,
    });
    expect(check({ kind: "NVL_DOMAIN", attribute: "", maxInFlight: 3 }).spread).toEqual({
      kind: "NVL_DOMAIN",
      maxInFlight: 3,
    });
    expect(check({ kind: "ATTRIBUTE", attribute: " datacenter ", maxInFlight: 2 }).spread).toEqual({
      kind: "ATTRIBUTE",
      attribute: "datacenter",
      maxInFlight: 2,
    });
  });

  it.each([
    [
      { kind: "ROW", attribute: "", maxInFlight: 0 },
      [[`${F}.max_in_flight`, "failure_domain_spread.max_in_flight must be at least 1"]],
    ],
    [
      { kind: "ROW", attribute: "", maxInFlight: -2 },
      [[`${F}.max_in_flight`, "failure_domain_spread.max_in_flight must be at least 1"]],
    ],
    [
      { kind: "UNKNOWN", attribute: "", maxInFlight: 1 },
      [[`${F}.domain`, "failure_domain_spread.domain must be ROW, NVL_DOMAIN or ATTRIBUTE"]],
    ],
    [
      { kind: "ATTRIBUTE", attribute: "power_feed", maxInFlight: 1 },
      [[`${F}.attribute`, 'unknown failure-domain attribute "power_feed": the inventory carries datacenter']],
    ],
    [
      { kind: "ATTRIBUTE", attribute: "  ", maxInFlight: 1 },
      [[`${F}.attribute`, "failure_domain_spread.attribute is required for the ATTRIBUTE domain"]],
    ],
    [
      { kind: "ROW", attribute: "datacenter", maxInFlight: 1 },
      [
        [
          `${F}.attribute`,
          "failure_domain_spread.attribute is only for the ATTRIBUTE domain (domain is ROW)",
        ],
      ],
    ],
  ] as const)("%o → InvalidArgument naming the field", (input, expected) => {
    const { spread, violations } = check(input);
    expect(spread).toBeUndefined();
    expect(violations.map((x) => [x.field, x.rule])).toEqual(expected);
  });
});

describe("failure domains: what a pass claims", () => {
  it("no spread: the first free-slots-many in order, re-claims always", () => {
    const ready = [target("a1", "A"), target("x", "A", "CLAIMED"), target("a2", "A"), target("a3", "A")];
    expect(ids(chooseClaims(run(undefined), ready, 2, 98))).toEqual(["a1", "x", "a2"]);
  });

  it("1 per row, row A holding one: a1, a2 wait; b2 waits for b1; the next eligible is taken", () => {
    const ready = ["a1", "a2", "b1", "b2", "c1"].map((id) => target(id, id[0]?.toUpperCase()));
    expect(ids(chooseClaims(run(ROW1, { A: 1 }), ready, 3, 98))).toEqual(["b1", "c1"]);
    expect(ids(chooseClaims(run(ROW1, { A: 1 }), ready, 1, 98))).toEqual(["b1"]);
    expect(ids(chooseClaims(run(ROW1, {}), ready, 5, 98))).toEqual(["a1", "b1", "c1"]);
  });

  it("2 per row counts what the pass took plus what was in flight; a re-claim holds its domain slot already", () => {
    const two: FailureDomainSpread = { kind: "ROW", maxInFlight: 2 };
    const ready = [
      target("held", "A", "CLAIMED"),
      ...["a1", "a2", "a3", "b1"].map((id) => target(id, id[0]?.toUpperCase())),
    ];
    expect(ids(chooseClaims(run(two, { A: 1 }), ready, 10, 98))).toEqual(["held", "a1", "b1"]);
  });

  it("the limit bounds the list; no free slot claims only re-claims", () => {
    const ready = ["a1", "b1", "c1"].map((id) => target(id, id[0]?.toUpperCase()));
    expect(ids(chooseClaims(run(ROW1), ready, 3, 2))).toEqual(["a1", "b1"]);
    expect(ids(chooseClaims(run(ROW1), [target("h", "A", "CLAIMED"), ...ready], 0, 98))).toEqual(["h"]);
  });

  it("the gate: a domain the store refused is full for the rest of the pass; targets without a domain pass", () => {
    const gate = domainGate(run({ kind: "ROW", maxInFlight: 3 }));
    const a = target("a", "A");
    expect(gate.hasRoom(a)).toBe(true);
    gate.markFull(a);
    expect(gate.hasRoom(a)).toBe(false);
    const n = target("n", undefined);
    gate.take(n);
    gate.take(n);
    expect(gate.hasRoom(n)).toBe(true);
    const none = domainGate(run(undefined));
    none.markFull(a);
    expect(none.hasRoom(a)).toBe(true);
  });

  it("domains taken count targets needing a slot, per domain", () => {
    expect(
      domainsTaken([
        target("a1", "A"),
        target("a2", "A"),
        target("h", "A", "CLAIMED"),
        target("n", undefined),
      ]),
    ).toEqual(new Map([["A", 2]]));
  });

  it("PENDING read: free slots without a spread; the phase with one (none when no slot is free)", () => {
    const r = (spread?: FailureDomainSpread): Pick<Run, "config" | "phaseSizes"> => ({
      ...run(spread),
      phaseSizes: [40, 60],
    });
    expect(pendingToRead(r(), 1, 3)).toBe(3);
    expect(pendingToRead(r(ROW1), 1, 3)).toBe(60);
    expect(pendingToRead(r(ROW1), 1, 0)).toBe(0);
    expect(pendingToRead(r(ROW1), 5, 2)).toBe(0);
  });
});
