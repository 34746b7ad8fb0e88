/**
 * vitest globalSetup for the e2e project: the programs its tests start as processes, each bundled
 * once per run with esbuild, so a start is `node <bundle>` (test/support/entry-bundles.ts has how a
 * test takes one, and why).
 *
 * The bundle is the same source (tsx transpiles with esbuild too); packages stay outside it,
 * loaded from node_modules as before, so the bundles are written under node_modules/.cache, where
 * node resolves those packages from, in a directory of this run's own, removed at its end.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import { pathToFileURL } from "node:url";
import { build, type Plugin } from "esbuild";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** Bundle paths by entry name (ENTRIES), for entryBundle(). */
    entryBundles: Record<string, string>;
  }
}

const ROOT = join(import.meta.dirname, "..", "..");

/** The entries, by name: what `npm start` runs, and the restart tests' stack process. */
export const ENTRIES = {
  "local-main": "local/main.ts",
  "stack-process": "test/support/stack-process.ts",
} as const;

export type EntryName = keyof typeof ENTRIES;

/**
 * Each module's `import.meta.url` (and `dirname`, `filename`) stays the path of its source file,
 * not the bundle's: the product finds files beside its sources by them (the proto files, the ASL
 * definition, the moto launcher).
 */
const sourceLocations: Plugin = {
  name: "source-locations",
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
      const text = readFileSync(args.path, "utf8")
        .replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href))
        .replaceAll("import.meta.dirname", JSON.stringify(dirname(args.path)))
        .replaceAll("import.meta.filename", JSON.stringify(args.path));
      return { contents: text, loader: "ts" };
    });
  },
};

/** Bundles every entry into a new directory; returns the paths by name and how to remove them. */
export async function buildEntryBundles(): Promise<{ paths: Record<EntryName, string>; remove: () => void }> {
  const cache = join(ROOT, "node_modules", ".cache");
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, "flow-test-bundles-"));
  const names = Object.keys(ENTRIES) as EntryName[];
  await Promise.all(
    names.map((name) =>
      build({
        entryPoints: [join(ROOT, ENTRIES[name])],
        outfile: join(dir, `${name}.mjs`),
        bundle: true,
        platform: "node",
        format: "esm",
        target: "node22",
        packages: "external",
        logLevel: "error",
        plugins: [sourceLocations],
      }),
    ),
  );
  const paths = Object.fromEntries(names.map((name) => [name, join(dir, `${name}.mjs`)])) as Record<
    EntryName,
    string
  >;
  return { paths, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export default async function setup(project: TestProject): Promise<() => void> {
  const { paths, remove } = await buildEntryBundles();
  project.provide("entryBundles", paths);
  return remove;
}
