/**
 * The e2e project's entry bundles (test/support/entry-bundles-setup.ts) are kept with the hashes of
 * their sources: reused while every source is unchanged, built again when one changes, each
 * entry on its own. Here on two small entries of the test's own, in a cache directory of its own.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { entryBundles } from "../support/entry-bundles-setup.js";

const ROOT = resolve(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "flow-bundles-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const write = (name: string, text: string) => writeFileSync(join(dir, name), text);
const bundling = {
  cache: join(dir, "cache"),
  entries: { one: relative(ROOT, join(dir, "one.ts")), two: relative(ROOT, join(dir, "two.ts")) },
};
/** What a bundle prints when node runs it. */
const run = (bundle: string) => execFileSync(process.execPath, [bundle], { encoding: "utf8" }).trim();

describe("entry bundles: kept while their sources are unchanged", () => {
  it("built once, reused unchanged, and the entry whose source changed (an import of it) built again alone", async () => {
    write("word.ts", 'export const word = "first";\n');
    write("one.ts", 'import { word } from "./word.js";\nconsole.log("one", word);\n');
    write("two.ts", 'console.log("two");\n');

    const first = await entryBundles(bundling);
    expect(first.built.sort()).toEqual(["one", "two"]);
    expect(run(first.paths.one)).toBe("one first");
    expect(run(first.paths.two)).toBe("two");

    const again = await entryBundles(bundling);
    expect(again).toEqual({ paths: first.paths, built: [] });

    write("word.ts", 'export const word = "second";\n');
    const changed = await entryBundles(bundling);
    expect(changed.built).toEqual(["one"]);
    expect(changed.paths.one).not.toBe(first.paths.one);
    expect(changed.paths.two).toBe(first.paths.two);
    expect(run(changed.paths.one)).toBe("one second");
    // The bundle built before is left as it was, for a run that may still use it.
    expect(run(first.paths.one)).toBe("one first");
  });
});
