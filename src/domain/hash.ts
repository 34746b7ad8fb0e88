/**
 * Seeded, reproducible ordering of racks: the reference's selection and ordering rule.
 *
 * Each rack gets the key `sha256(seed + ":" + rackId)` as lowercase hex; racks sort by key
 * ascending, byte-wise (plain `<`, never `localeCompare`, so the order matches Go's string
 * comparison), ties by the rack id. A tie needs a SHA-256 collision or the same id twice, so in
 * practice the key alone decides — but the tie-break keeps the sort total and the result
 * independent of the input order.
 *
 * Worked example, seed `seed-a`:
 *
 *   rack id                                key (first 8 hex digits)
 *   00000000-0000-4000-8000-000000000001   b458570f…
 *   00000000-0000-4000-8000-000000000002   4e3ba7bd…
 *   00000000-0000-4000-8000-000000000003   2e634b68…
 *
 *   seededOrder([…1, …2, …3], "seed-a") → […3, …2, …1]
 *
 * The full key of the first row is
 * `b458570fe4ae3fcbbb658a4b532905e955745d9896f135835e9b20b26d3d6d1f`.
 */
import { createHash } from "node:crypto";

export function rankKey(seed: string, rackId: string): string {
  return createHash("sha256").update(`${seed}:${rackId}`, "utf8").digest("hex");
}

function compareStrings(a: string, b: string): number {
  if (a < b) return -1;
  return a > b ? 1 : 0;
}

/** A new array of `ids` in seeded order; the input is not modified. */
export function seededOrder(ids: readonly string[], seed: string): string[] {
  return ids
    .map((id) => ({ id, key: rankKey(seed, id) }))
    .sort((a, b) => compareStrings(a.key, b.key) || compareStrings(a.id, b.id))
    .map((entry) => entry.id);
}
