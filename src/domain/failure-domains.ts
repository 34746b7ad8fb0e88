/**
 * (ours) The failure-domain spread: at most N racks of one failure domain in flight at once, so a
 * bad wave cannot take out a whole row, NVLink domain or power feed.
 *
 * A rack's domain, frozen on its target with the plan:
 *   ROW         its location's datacenter and row: "dc1/A" (row A of another hall is another row)
 *   NVL_DOMAIN  its NVLink domain's name: "nvl-07"
 *   ATTRIBUTE   the named inventory attribute's value; the inventory carries `datacenter` today,
 *               so `{ ATTRIBUTE, "datacenter" }` spreads over halls and any other name is unknown
 * Every planned rack must have one: a rack the inventory places in no row is refused at plan
 * time, not dispatched uncapped.
 *
 * Choosing what a pass claims (`chooseClaims`): the ready targets in their seeded order; a target
 * whose domain is full (as read, plus what this pass already took) is skipped, and the next eligible
 * one is taken, until the free slots are used. A re-claim (CLAIMED, lease over) holds its slot and
 * its domain slot already and is always taken. Example, 1 per row, 3 free slots, row A holding one
 * in flight, ready [a1, a2, b1, b2, c1] → [b1, c1]: a1 and a2 wait for row A, b2 for b1.
 * The store enforces the same cap in the claim's conditional write (the run item's per-domain
 * counter), so racing dispatchers that choose on stale reads still cannot exceed it.
 */

import type { Scoped } from "./create-run-input.js";
import { ValidationError } from "./errors.js";
import type { FailureDomainKind, FailureDomainSpread } from "./failure-domain-spread.js";
import type { InventoryRack } from "./inventory.js";
import type { Run, Target } from "./model.js";
import type { Violations } from "./violations.js";

/** The attributes an ATTRIBUTE spread can name: what the inventory record carries. */
export const FAILURE_DOMAIN_ATTRIBUTES = ["datacenter"] as const;

const SPREAD_FIELD = "configuration.options.failure_domain_spread";

/** The rack's domain under `spread`, or undefined when the inventory does not place it in one. */
export function failureDomainOf(
  rack: Pick<InventoryRack, "location" | "nvlDomain">,
  spread: FailureDomainSpread,
): string | undefined {
  switch (spread.kind) {
    case "ROW":
      return rack.location === undefined ? undefined : `${rack.location.datacenter}/${rack.location.row}`;
    case "NVL_DOMAIN":
      return rack.nvlDomain?.name;
    case "ATTRIBUTE":
      return spread.attribute === "datacenter" ? rack.location?.datacenter : undefined;
  }
}

/** What a spread's domain is called in messages: "row", "NVLink domain", "attribute \"x\"". */
function domainNoun(spread: FailureDomainSpread): string {
  switch (spread.kind) {
    case "ROW":
      return "row";
    case "NVL_DOMAIN":
      return "NVLink domain";
    case "ATTRIBUTE":
      return `attribute "${spread.attribute}"`;
  }
}

/** Racks named in a message at most; the rest are counted. */
const NAMED_RACKS = 5;

/**
 * Each planned rack's domain, by rack id. Throws ValidationError naming the spread when a rack has
 * none in the inventory, e.g. `configuration.options.failure_domain_spread: the inventory places
 * no row for 2 planned racks: rack-3, rack-9`.
 */
export function assignFailureDomains(
  rackIds: readonly string[],
  racks: ReadonlyMap<string, Pick<InventoryRack, "name" | "location" | "nvlDomain">>,
  spread: FailureDomainSpread,
): Map<string, string> {
  const domains = new Map<string, string>();
  const missing: string[] = [];
  for (const id of rackIds) {
    const rack = racks.get(id);
    const domain = rack === undefined ? undefined : failureDomainOf(rack, spread);
    if (domain === undefined) missing.push(rack?.name ?? id);
    else domains.set(id, domain);
  }
  if (missing.length > 0) {
    const named = missing.slice(0, NAMED_RACKS).join(", ");
    const more = missing.length > NAMED_RACKS ? ` and ${missing.length - NAMED_RACKS} more` : "";
    throw new ValidationError([
      {
        field: SPREAD_FIELD,
        rule: `the inventory places no ${domainNoun(spread)} for ${missing.length} planned rack${missing.length === 1 ? "" : "s"}: ${named}${more}`,
      },
    ]);
  }
  return domains;
}

/** In-flight targets per domain as the run item was read. */
export function domainLoad(run: Pick<Run, "domainInFlight">, domain: string): number {
  return run.domainInFlight?.[domain] ?? 0;
}

/**
 * How many PENDING targets a pass reads from the claim queue: the free slots, or with a spread the
 * whole phase (at most 100 targets, one query), since the first free-slot-many may all sit in full
 * domains while later ones are eligible. No free slot: none either way.
 */
export function pendingToRead(
  run: Pick<Run, "config" | "phaseSizes">,
  phaseIndex: number,
  freeSlots: number,
) {
  if (run.config.failureDomainSpread === undefined || freeSlots <= 0) return freeSlots;
  return run.phaseSizes[phaseIndex] ?? 0;
}

/**
 * The targets a pass claims, in order (see the module comment): re-claims always; others while a
 * slot is free and, with a spread, while their domain is under its cap. `limit` bounds the list
 * (one transaction's worth).
 */
export function chooseClaims(
  run: Pick<Run, "config" | "domainInFlight">,
  ready: readonly Target[],
  slots: number,
  limit: number,
): Target[] {
  const gate = domainGate(run);
  const chosen: Target[] = [];
  let slotsLeft = slots;
  for (const target of ready) {
    if (chosen.length >= limit) break;
    if (target.status === "CLAIMED") {
      chosen.push(target);
      continue;
    }
    if (slotsLeft <= 0 || !gate.hasRoom(target)) continue;
    slotsLeft--;
    gate.take(target);
    chosen.push(target);
  }
  return chosen;
}

/** Per-domain room as a pass sees it: the run's counters as read, plus what the pass has taken. */
export interface DomainGate {
  hasRoom(target: Target): boolean;
  take(target: Target): void;
  /** The store refused a claim for its domain: treat the domain as full for the rest of the pass. */
  markFull(target: Target): void;
}

export function domainGate(run: Pick<Run, "config" | "domainInFlight">): DomainGate {
  const spread = run.config.failureDomainSpread;
  const load = new Map<string, number>();
  const current = (domain: string) => load.get(domain) ?? domainLoad(run, domain);
  return {
    hasRoom: (target) =>
      spread === undefined ||
      target.failureDomain === undefined ||
      current(target.failureDomain) < spread.maxInFlight,
    take: (target) => {
      if (target.failureDomain !== undefined)
        load.set(target.failureDomain, current(target.failureDomain) + 1);
    },
    markFull: (target) => {
      if (spread !== undefined && target.failureDomain !== undefined) {
        load.set(target.failureDomain, spread.maxInFlight);
      }
    },
  };
}

/** How many targets of each domain a claim batch adds (re-claims excluded: they hold theirs). */
export function domainsTaken(targets: readonly Target[]): Map<string, number> {
  const taken = new Map<string, number>();
  for (const t of targets) {
    if (t.status === "CLAIMED" || t.failureDomain === undefined) continue;
    taken.set(t.failureDomain, (taken.get(t.failureDomain) ?? 0) + 1);
  }
  return taken;
}

/**
 * The request's spread, checked: a known domain kind; `attribute` with ATTRIBUTE only, and one the
 * inventory carries; `max_in_flight` at least 1 (a spread of 0 could never claim). Absent = none.
 */
export function checkFailureDomainSpread(
  input: { kind: Scoped<FailureDomainKind>; attribute: string; maxInFlight: number } | undefined,
  v: Violations,
): FailureDomainSpread | undefined {
  if (input === undefined) return undefined;
  const before = v.list.length;
  v.positive(
    `${SPREAD_FIELD}.max_in_flight`,
    input.maxInFlight,
    "failure_domain_spread.max_in_flight must be at least 1",
  );
  const attribute = input.attribute.trim();
  if (input.kind === "UNKNOWN") {
    v.add(`${SPREAD_FIELD}.domain`, "failure_domain_spread.domain must be ROW, NVL_DOMAIN or ATTRIBUTE");
  } else if (input.kind === "ATTRIBUTE") {
    if (attribute === "") {
      v.add(
        `${SPREAD_FIELD}.attribute`,
        "failure_domain_spread.attribute is required for the ATTRIBUTE domain",
      );
    } else if (!(FAILURE_DOMAIN_ATTRIBUTES as readonly string[]).includes(attribute)) {
      v.add(
        `${SPREAD_FIELD}.attribute`,
        `unknown failure-domain attribute "${attribute}": the inventory carries ${FAILURE_DOMAIN_ATTRIBUTES.join(", ")}`,
      );
    }
  } else if (attribute !== "") {
    v.add(
      `${SPREAD_FIELD}.attribute`,
      `failure_domain_spread.attribute is only for the ATTRIBUTE domain (domain is ${input.kind})`,
    );
  }
  if (v.list.length > before || input.kind === "UNKNOWN") return undefined;
  return input.kind === "ATTRIBUTE"
    ? { kind: "ATTRIBUTE", attribute, maxInFlight: input.maxInFlight }
    : { kind: input.kind, maxInFlight: input.maxInFlight };
}
