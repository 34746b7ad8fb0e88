/**
 * vitest's file order for `npm test`, with the files known to take longest started first: the
 * waiting projects (integration, e2e, deploy) share one group of workers, and a long file started
 * last keeps one worker busy while the others have nothing left to do. vitest.config.ts names
 * the known-slow files, slowest first, and builds its sequencer with `longestFirst(thoseFiles)`:
 *
 *   sequence: { sequencer: longestFirst(SLOW_FILES) },
 *
 * The list, not vitest's cache of past durations, says what is slow: CI runs a fresh clone with no
 * cache, where vitest falls back to starting the largest files first, and the slowest files are
 * small ones whose work lives in test/support. Within a group the listed files come first, in the
 * list's order, across projects; every other file keeps vitest's own order after them.
 */
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/** What the order needs of a file: its group and its path from the root. */
export interface SequencedFile {
  groupOrder: number;
  /** Relative to the repository root, with `/`: `test/e2e/restart-sigterm-1-3.test.ts`. */
  path: string;
}

/**
 * `files` (in vitest's order) in the order they should start: by group, then the files of
 * `slowest` (slowest first) in its order, then the rest in the order given.
 */
export function orderLongestFirst<F extends SequencedFile>(
  files: readonly F[],
  slowest: readonly string[],
): F[] {
  const rank = new Map(slowest.map((path, i) => [path, i]));
  return files
    .map((file, given) => ({ file, given, rank: rank.get(file.path) ?? slowest.length }))
    .sort((a, b) => a.file.groupOrder - b.file.groupOrder || a.rank - b.rank || a.given - b.given)
    .map(({ file }) => file);
}

/** A vitest sequencer class that starts the `slowest` files (paths from the root) first. */
export function longestFirst(slowest: readonly string[]): typeof BaseSequencer {
  return class LongestFirstSequencer extends BaseSequencer {
    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      const given = await super.sort(files);
      const root = this.ctx.config.root;
      const sequenced = given.map((spec) => ({
        spec,
        groupOrder: spec.project.config.sequence.groupOrder,
        path: relative(root, spec.moduleId).split("\\").join("/"),
      }));
      return orderLongestFirst(sequenced, slowest).map(({ spec }) => spec);
    }
  };
}
