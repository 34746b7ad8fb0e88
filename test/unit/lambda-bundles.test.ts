/**
 * The Lambda bundles (infra/lambda-bundles.ts) are kept with the hashes of their inputs: reused
 * while every input is unchanged, built again when one changes, each entry on its own. Here on two
 * small entries of the test's own project, in a cache directory of its own.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { BUNDLE_FILES, LocalLambdaBundling, lambdaBundle } from "../../infra/lambda-bundles.js";

const root = mkdtempSync(join(tmpdir(), "flow-lambda-bundles-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
mkdirSync(join(root, "lambdas"));
mkdirSync(join(root, "src"));

const write = (path: string, text: string) => writeFileSync(join(root, path), text);
const bundling = { root, cache: join(root, "cache") };
/** What a bundle's handler returns, imported as the runtime imports it. */
const handle = async (dir: string): Promise<string> =>
  (await import(`${pathToFileURL(join(dir, "index.mjs")).href}?${Date.now()}`)).handler();

describe("Lambda bundles: kept while their inputs are unchanged", () => {
  it("built once, reused unchanged, and the entry whose input changed (a module it imports) built again alone", async () => {
    write("src/word.ts", 'export const word = "first";\n');
    write(
      "lambdas/one.ts",
      'import { word } from "../src/word.js";\nexport const handler = async () => "one " + word;\n',
    );
    write("lambdas/two.ts", 'export const handler = async () => "two";\n');

    const one = lambdaBundle("lambdas/one.ts", bundling);
    const two = lambdaBundle("lambdas/two.ts", bundling);
    expect([one.built, two.built]).toEqual([true, true]);
    expect(readdirSync(one.dir).sort()).toEqual([...BUNDLE_FILES]);
    expect(await handle(one.dir)).toBe("one first");
    expect(await handle(two.dir)).toBe("two");
    // The map names the sources from the entries' directory, wherever the checkout is.
    const map = JSON.parse(readFileSync(join(one.dir, "index.mjs.map"), "utf8"));
    expect(map.sources.sort()).toEqual(["../src/word.ts", "one.ts"]);

    expect(lambdaBundle("lambdas/one.ts", bundling)).toEqual({ dir: one.dir, built: false });
    expect(lambdaBundle("lambdas/two.ts", bundling)).toEqual({ dir: two.dir, built: false });

    write("src/word.ts", 'export const word = "other";\n');
    const changed = lambdaBundle("lambdas/one.ts", bundling);
    expect(changed.built).toBe(true);
    expect(changed.dir).not.toBe(one.dir);
    expect(await handle(changed.dir)).toBe("one other");
    expect(readFileSync(join(changed.dir, "index.mjs"), "utf8")).not.toBe(
      readFileSync(join(one.dir, "index.mjs"), "utf8"),
    );
    expect(lambdaBundle("lambdas/two.ts", bundling)).toEqual({ dir: two.dir, built: false });
    // The bundle built before is left as it was, for a synthesis that may still copy it.
    expect(await handle(one.dir)).toBe("one first");
  });

  it("CDK's local bundling copies the entry's bundle into the directory CDK stages, and names its entry in the options CDK keys assets by", async () => {
    write("lambdas/three.ts", 'export const handler = async () => "three";\n');
    const out = join(root, "staged");
    mkdirSync(out);
    const local = new LocalLambdaBundling("lambdas/three.ts", bundling);
    expect(local.tryBundle(out)).toBe(true);
    expect(await handle(out)).toBe("three");
    expect(readdirSync(out).sort()).toEqual([...BUNDLE_FILES]);
    expect(JSON.parse(JSON.stringify(local))).toMatchObject({ entry: "lambdas/three.ts" });
    expect(JSON.stringify(local)).not.toBe(
      JSON.stringify(new LocalLambdaBundling("lambdas/one.ts", bundling)),
    );
  });
});
