/**
 * A test table for the capacity estimate (bench/lib/capacity-estimate.ts): its shape, items of a
 * given size, what the estimate remembers of them, and an estimate of one call against it.
 */
import { expect } from "vitest";
import {
  type AttributeMap,
  type EstimateInput,
  estimateCapacity,
  type ItemMemory,
  itemKey,
  itemSize,
  type TableShape,
} from "../../bench/lib/capacity-estimate.js";

// One table with two sparse global indexes: byName (ALL) and active (KEYS_ONLY).
export const T = "flow-Things";
export const SHAPE: TableShape = {
  partitionKey: "pk",
  indexes: [
    { name: "byName", kind: "global", partitionKey: "name", projection: "ALL" },
    { name: "active", kind: "global", partitionKey: "activePk", sortKey: "pk", projection: "KEYS_ONLY" },
  ],
};

/** An item of exactly `bytes` bytes: `pk`, the extra attributes, and a `pad` string. */
export function itemOf(pk: string, bytes: number, extra: AttributeMap = {}): AttributeMap {
  const base: AttributeMap = { pk: { S: pk }, ...extra };
  const pad = bytes - itemSize(base) - "pad".length;
  if (pad < 0) throw new Error(`an item of ${bytes} bytes cannot hold ${JSON.stringify(extra)}`);
  const item = { ...base, pad: { S: "x".repeat(pad) } };
  expect(itemSize(item)).toBe(bytes);
  return item;
}

export function memoryOf(items: AttributeMap[], average?: number): ItemMemory {
  const map = new Map<string, AttributeMap | null>();
  for (const item of items) map.set(itemKey(SHAPE, item)!, item);
  return { get: (_table, key) => map.get(key), averageSize: () => average };
}

export function estimate(call: Omit<EstimateInput, "form" | "tables">) {
  const { seen: _seen, ...units } = estimateCapacity({
    form: "attribute-values",
    tables: (name) => (name === T ? SHAPE : undefined),
    ...call,
  });
  return units;
}
