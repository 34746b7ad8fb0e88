/**
 * The demo fleet the local stack loads without `--inventory`: 120 racks shaped like GB200
 * NVL72 racks, generated deterministically from a seed, so every run, demo and test sees the same
 * ids and the same plans.
 *
 * Per rack (39 components, 4,680 in the default fleet):
 *   18 COMPUTE      compute trays (4 GPUs each: the 72 GPUs of one NVLink domain)
 *    9 NVSWITCH     NVLink switch trays
 *    8 POWERSHELF   power shelves
 *    2 TORSWITCH    top-of-rack switches
 *    1 UMS          the rack management controller
 *    1 CDU          the in-rack coolant distribution unit
 *
 * Layout: datacenter `dc1`, rows A, B, C… of 15 racks (positions 1–15), so 120 racks fill rows A–H.
 * Rack i (0-based) sits in row `rowLabel(i / 15)` at position `i % 15 + 1` and is named
 * `rack-a01`, externally `EXT-A01`; its NVLink domain is its own (`nvl-a01`), as in an NVL72.
 * Component serials name rack, slot and kind: `SN-A01-CT07` is compute tray 7 of rack A01.
 *
 * Ids are UUIDs derived from the seed and the object's name (`seededUuid`), so they are stable
 * across runs and machines, and a different seed gives a disjoint fleet.
 *
 * Firmware: most components run the current version of their type; a deterministic ~1 in 8 runs
 * the previous one (so "already at version" and "needs an update" both occur in demos).
 */
import { createHash } from "node:crypto";
import type { InventoryComponent, InventoryRack } from "../src/domain/inventory.js";
import type { ComponentType } from "../src/domain/model.js";

export const DEMO_SEED = "flow-demo";
export const DEMO_RACK_COUNT = 120;
export const RACKS_PER_ROW = 15;

/** In rack order: slots are numbered per type from 1. */
export const DEMO_RACK_SHAPE: readonly { type: ComponentType; count: number; tag: string }[] = [
  { type: "COMPUTE", count: 18, tag: "CT" },
  { type: "NVSWITCH", count: 9, tag: "SW" },
  { type: "POWERSHELF", count: 8, tag: "PS" },
  { type: "TORSWITCH", count: 2, tag: "TOR" },
  { type: "UMS", count: 1, tag: "UMS" },
  { type: "CDU", count: 1, tag: "CDU" },
];

/** [current, previous] firmware version per type. */
export const DEMO_FIRMWARE: Readonly<Record<ComponentType, readonly [string, string]>> = {
  COMPUTE: ["1.2.0", "1.1.4"],
  NVSWITCH: ["2.4.1", "2.3.9"],
  POWERSHELF: ["3.0.2", "2.9.0"],
  TORSWITCH: ["4.1.0", "4.0.7"],
  UMS: ["1.0.3", "1.0.1"],
  CDU: ["2.2.0", "2.1.5"],
};

/**
 * A UUID from sha256(seed + ":" + name), laid out as RFC 9562 version 8 (the version for
 * application-defined UUIDs; a hash is not random, so v4 would be a lie): version nibble 8,
 * variant bits 10.
 *
 * `seededUuid("flow-demo", "rack:A01")` is the same string on every machine.
 */
export function seededUuid(seed: string, name: string): string {
  const bytes = createHash("sha256").update(`${seed}:${name}`, "utf8").digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** 0 → "A", 25 → "Z", 26 → "AA", 27 → "AB" (spreadsheet column letters). */
export function rowLabel(index: number): string {
  let n = index;
  let label = "";
  do {
    label = String.fromCharCode(65 + (n % 26)) + label;
    n = Math.floor(n / 26) - 1;
  } while (n >= 0);
  return label;
}

export interface DemoFleetOptions {
  seed?: string;
  racks?: number;
  datacenter?: string;
}

export function generateDemoFleet(options: DemoFleetOptions = {}): InventoryRack[] {
  const seed = options.seed ?? DEMO_SEED;
  const count = options.racks ?? DEMO_RACK_COUNT;
  const datacenter = options.datacenter ?? "dc1";
  if (!Number.isSafeInteger(count) || count < 0) {
    throw new RangeError(`racks must be a non-negative integer (got ${count})`);
  }
  const racks: InventoryRack[] = [];
  for (let i = 0; i < count; i++) {
    const row = rowLabel(Math.floor(i / RACKS_PER_ROW));
    const position = (i % RACKS_PER_ROW) + 1;
    const label = `${row}${String(position).padStart(2, "0")}`; // "A01"
    const components: InventoryComponent[] = [];
    for (const { type, count: slots, tag } of DEMO_RACK_SHAPE) {
      for (let slot = 1; slot <= slots; slot++) {
        const serial = `SN-${label}-${tag}${String(slot).padStart(2, "0")}`;
        const [current, previous] = DEMO_FIRMWARE[type];
        // The first hash byte decides: < 32 of 256 (1 in 8) runs the previous version.
        const behind = createHash("sha256").update(`${seed}:fw:${serial}`).digest()[0]! < 32;
        components.push({
          id: seededUuid(seed, `component:${serial}`),
          type,
          externalId: serial,
          firmwareVersion: behind ? previous : current,
        });
      }
    }
    racks.push({
      id: seededUuid(seed, `rack:${label}`),
      name: `rack-${label.toLowerCase()}`,
      externalId: `EXT-${label}`,
      nvlDomain: { id: seededUuid(seed, `nvl:${label}`), name: `nvl-${label.toLowerCase()}` },
      location: { datacenter, row, position },
      components,
    });
  }
  return racks;
}
