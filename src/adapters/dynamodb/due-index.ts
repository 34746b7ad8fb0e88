/**
 * The run item's dispatch schedule and the sparse `due` index over it (schema.ts): which runs the
 * dispatcher's tick must pass, without reading every active run.
 *
 * Three attributes on the run item:
 * - `dueMark`: counts the writes that may have given the run work. Every write of the run item
 *   the product makes (a control's or a pass's saveRun, a claim, a block, an outcome) adds 1 and
 *   makes the run due now (the fragments below ride in the same update);
 * - `dueAt`: when the run next needs a pass, epoch ms (0: now); the index's sort key;
 * - `duePk`: the index's partition key, present while the run is in the index.
 * A pass that has done what it could writes when the run next needs one (`deferRun`), only if
 * `dueMark` is still what it read plus its own writes: a write it did not see leaves the run due.
 *
 *   pass reads mark 7, claims (mark 8), computes "next: lease end 10:00:30" → defer(8): written
 *   an outcome commits in between (mark 9)                                  → defer(8): refused,
 *   the run stays due now and the next tick passes it
 */
import { LIST_PARTITION } from "./schema.js";

/** `SET` fragment of a marking write (with MARK_ADD in an `ADD` clause, MARK_VALUES its values). */
export const MARK_SET = "duePk = :duePk, dueAt = :dueNow";
export const MARK_ADD = "dueMark :dueOne";
export const MARK_VALUES = { ":duePk": LIST_PARTITION.dueRuns, ":dueNow": 0, ":dueOne": 1 } as const;

/** A marking write's `SET … ADD …` with the write's own SET and ADD clauses (either may be empty). */
export function withMark(set: string, add: string): string {
  return `SET ${[set, MARK_SET].filter((s) => s !== "").join(", ")} ADD ${[add, MARK_ADD]
    .filter((s) => s !== "")
    .join(", ")}`;
}
