/**
 * The repository says what things are, and everything it cites lives in it. Every tracked text
 * file (`git ls-files`; the generated src/gen and binary files aside) is scanned line by line for:
 *
 *   - tracker citations: the word issue or round followed by a number, or `#` and two digits or
 *     more. History goes in commit messages; a comment or a doc says what the thing is or why.
 *   - absolute paths of a build machine (under /work, /root or /home) and citations of the
 *     specification folder that lives beside the repository, not in it.
 *
 * Two shapes look like citations and are not, and are let through by their exact form, wherever
 * they appear: a run event's key suffix (`…#00`, `001800000001000#01`: `#` and two digits right
 * after a digit or an ellipsis) and the benchmarks' `--rounds N` flag. A failure lists every hit
 * as file:line: text.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

const TRACKER = /\b(?:[Ii]ssue|[Rr]ound)s? [0-9]+|#[0-9]{2,}/;
/** Removed before TRACKER is tried: run event key suffixes and the `--rounds N` flag. */
const NOT_A_CITATION = /(?<=[0-9…])#[0-9]{2}(?![0-9])|--rounds [0-9]+/g;

const BUILD_MACHINE_PATH = /(?<![\w.~-])\/(?:work|root|home)\//;
const OUTSIDE_SPEC = /\.\.\/shared\b|\bshared\/spec\//;

export function citesTracker(line: string): boolean {
  return TRACKER.test(line.replace(NOT_A_CITATION, ""));
}

export function citesOutside(line: string): boolean {
  return BUILD_MACHINE_PATH.test(line) || OUTSIDE_SPEC.test(line);
}

/** The tracked files worth reading as text. */
function trackedTextFiles(): { path: string; text: string }[] {
  const paths = execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" })
    .split("\0")
    .filter((p) => p !== "" && !p.startsWith("src/gen/"));
  const files: { path: string; text: string }[] = [];
  for (const path of paths) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(ROOT, path));
    } catch {
      continue; // deleted in the work tree, not yet in the index
    }
    if (bytes.subarray(0, 8000).includes(0)) continue;
    files.push({ path, text: bytes.toString("utf8") });
  }
  return files;
}

function hits(check: (line: string) => boolean): string[] {
  const found: string[] = [];
  for (const { path, text } of trackedTextFiles()) {
    text.split("\n").forEach((line, i) => {
      if (check(line)) found.push(`${path}:${i + 1}: ${line.trim()}`);
    });
  }
  return found;
}

describe("repository hygiene: the patterns", () => {
  // Built from parts, so that this file's own text holds no citation.
  const n = 17;
  it.each([
    `see issue ${n}`,
    `Issues ${n} and 18`,
    `(round ${n - 9})`,
    `Round ${n - 6}: the local window`,
    `fixed in #${n}`,
  ])("a tracker citation is caught: %s", (line) => {
    expect(citesTracker(line)).toBe(true);
  });

  it.each([
    'eventKey: { S: "001700000000000#00" }',
    '"001800000001000#01": the second event',
    'eventKey: {S:"…#00"}',
    `npm run bench:durability -- --rounds ${n - 14}`,
    "5 round trips, rounding up",
  ])("not a citation: %s", (line) => {
    expect(citesTracker(line)).toBe(false);
  });

  it("an event key beside a real citation does not hide it", () => {
    expect(citesTracker(`key "001800000001000#01" (issue ${n})`)).toBe(true);
    expect(citesTracker(`key …#00, see #${n}`)).toBe(true);
  });

  it.each([
    `format in ${"/"}work/${"shared"}/spec/local-stack.md`,
    `cd ${"/"}root/project`,
    `a log in ${"/"}home/dev/flow`,
    `see ${".."}/shared/design/style.md`,
    `the options of ${"shared"}/spec/local-stack.md`,
  ])("a citation of something outside the repository is caught: %s", (line) => {
    expect(citesOutside(line)).toBe(true);
  });

  it.each([
    "format in docs/local-stack.md",
    "https://example.com/home/index.html",
    "the shared specification of the wire",
  ])("inside the repository: %s", (line) => {
    expect(citesOutside(line)).toBe(false);
  });
});

describe("repository hygiene: the tracked files", () => {
  it("no tracked text file cites a tracker number or a round of work", () => {
    expect(hits(citesTracker)).toEqual([]);
  });

  it("no tracked text file carries a build machine's path or cites a file outside the repository", () => {
    expect(hits(citesOutside)).toEqual([]);
  });
});
