/**
 * vitest globalSetup for the e2e project: the programs its tests start as processes, each bundled
 * with esbuild, so a start is `node <bundle>` (test/support/entry-bundles.ts has how a test takes
 * one, and why).
 *
 * The bundle is the same source (tsx transpiles with esbuild too); packages stay outside it,
 * loaded from node_modules as before, so the bundles are written under node_modules/.cache, where
 * node resolves those packages from. A bundle is kept there with a manifest of what it was built
 * from (each source file's hash, esbuild's version): a run whose sources are unchanged reuses it
 * (hashing a few hundred files instead of a second of esbuild's CPU), any change builds it again.
 * A clean checkout (CI) builds every time. Bundles are named by their sources' hash and never
 * rewritten, so runs at once in one checkout cannot see a half-written or changed bundle.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { pathToFileURL } from "node:url";
import { build, version as esbuildVersion, type Plugin } from "esbuild";
import type { TestProject } from "vitest/node";
import { pruneOlder } from "../../infra/lambda-bundles.js";

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
 * definition, the moto launcher). `read` hears each file's text as it is bundled.
 */
function sourceLocations(read: (path: string, text: string) => void): Plugin {
  return {
    name: "source-locations",
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, (args) => {
        if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
        const source = readFileSync(args.path, "utf8");
        read(args.path, source);
        const text = source
          .replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href))
          .replaceAll("import.meta.dirname", JSON.stringify(dirname(args.path)))
          .replaceAll("import.meta.filename", JSON.stringify(args.path));
        return { contents: text, loader: "ts" };
      });
    },
  };
}

const CACHE = join(ROOT, "node_modules", ".cache", "flow-test-bundles");
/** Bump when the build options below change: a manifest of another format is not reused. */
const FORMAT = 1;

/** What a bundle was built from: its sources (from the root) and each one's hash. */
interface Manifest {
  format: number;
  esbuild: string;
  entry: string;
  bundle: string;
  sources: Record<string, string>;
}

const sha256 = (text: string | Buffer): string => createHash("sha256").update(text).digest("hex");

/** Where bundles are kept, and which entries (name → source file from the root) to bundle. */
interface Bundling<N extends string> {
  cache: string;
  entries: Readonly<Record<N, string>>;
}

/** The manifest's bundle, if it is there and every source still has the hash it was built from. */
function reusable<N extends string>({ cache, entries }: Bundling<N>, name: N): string | undefined {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(join(cache, `${name}.json`), "utf8")) as Manifest;
  } catch {
    return undefined;
  }
  if (manifest.format !== FORMAT || manifest.esbuild !== esbuildVersion || manifest.entry !== entries[name])
    return undefined;
  const bundle = join(cache, manifest.bundle);
  try {
    for (const [path, hash] of Object.entries(manifest.sources))
      if (sha256(readFileSync(join(ROOT, path))) !== hash) return undefined;
    statSync(bundle);
  } catch {
    return undefined;
  }
  return bundle;
}

/** Builds `name`'s bundle into the cache, named by its sources' hash, with its manifest. */
async function buildBundle<N extends string>({ cache, entries }: Bundling<N>, name: N): Promise<string> {
  const read = new Map<string, string>();
  const result = await build({
    entryPoints: [join(ROOT, entries[name])],
    outfile: join(cache, `${name}.mjs`),
    write: false,
    metafile: true,
    absWorkingDir: ROOT,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    packages: "external",
    logLevel: "error",
    plugins: [sourceLocations((path, text) => read.set(path, sha256(text)))],
  });
  // Hashes of the text bundled (a file edited during the build is built again next run).
  const sources: Record<string, string> = {};
  for (const input of Object.keys(result.metafile.inputs).sort()) {
    const path = input.split(sep).join("/");
    sources[path] = read.get(resolve(ROOT, input)) ?? sha256(readFileSync(resolve(ROOT, input)));
  }
  const key = sha256(JSON.stringify([FORMAT, esbuildVersion, entries[name], sources])).slice(0, 16);
  const bundle = `${name}-${key}.mjs`;
  const output = result.outputFiles[0];
  if (output === undefined) throw new Error(`esbuild wrote no bundle of ${name}`);
  const temp = join(cache, `${bundle}.${process.pid}.tmp`);
  writeFileSync(temp, output.contents);
  renameSync(temp, join(cache, bundle));
  const manifest: Manifest = {
    format: FORMAT,
    esbuild: esbuildVersion,
    entry: entries[name],
    bundle,
    sources,
  };
  writeFileSync(`${temp}.json`, JSON.stringify(manifest));
  renameSync(`${temp}.json`, join(cache, `${name}.json`));
  pruneOlder(cache, name, bundle);
  return join(cache, bundle);
}

/**
 * Every entry's bundle, reused from the cache where its sources are unchanged, else built; `built`
 * names the entries built this time. By default ENTRIES, kept in node_modules/.cache.
 */
export async function entryBundles<N extends string = EntryName>(
  bundling: Bundling<N> = { cache: CACHE, entries: ENTRIES as Record<string, string> as Record<N, string> },
): Promise<{ paths: Record<N, string>; built: N[] }> {
  mkdirSync(bundling.cache, { recursive: true });
  const names = Object.keys(bundling.entries) as N[];
  const built: N[] = [];
  const paths = await Promise.all(
    names.map(async (name) => {
      const cached = reusable(bundling, name);
      if (cached !== undefined) return cached;
      built.push(name);
      return buildBundle(bundling, name);
    }),
  );
  return { paths: Object.fromEntries(names.map((name, i) => [name, paths[i]])) as Record<N, string>, built };
}

export default async function setup(project: TestProject): Promise<void> {
  const { paths } = await entryBundles();
  project.provide("entryBundles", paths);
}
