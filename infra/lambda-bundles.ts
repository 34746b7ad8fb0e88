/**
 * The Lambda functions' code: each entry file under `lambdas/` bundled by esbuild, through its API in
 * the synthesizing process, into `index.mjs` and its source map (the asset FlowFunction deploys).
 *
 * A bundle is kept under node_modules/.cache with a manifest of what it was built from (every
 * input's hash, packages included, and esbuild's version and options): a synthesis whose inputs
 * are unchanged copies it (hashing the inputs instead of seconds of esbuild's CPU per function),
 * and any change to any input builds it again. A clean checkout builds every time. Bundles are
 * named by their inputs' hash and never rewritten, so syntheses at once in one checkout cannot see
 * a half-written or changed bundle.
 */
import { createHash } from "node:crypto";
import {
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join, relative, resolve, sep } from "node:path";
import type { ILocalBundling } from "aws-cdk-lib";
import { type BuildOptions, buildSync, version as esbuildVersion } from "esbuild";
import { PROJECT_ROOT } from "./config.js";

/** The files of a bundle, as the function's handler (`index.handler`) and the runtime find them. */
export const BUNDLE_FILES = ["index.mjs", "index.mjs.map"] as const;

/**
 * How a function is bundled: Node.js 22, ESM (the project is ESM) with a banner that gives bundled
 * CommonJS dependencies a `require`, a source map so stack traces point into the TypeScript, and
 * nothing external (the runtime ships SDK v3, but the bundle pins the versions tested with).
 * The output is placed beside the entries, so the map's sources read `../src/…` wherever the
 * checkout is.
 */
const OPTIONS = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  mainFields: ["module", "main"],
  sourcemap: true,
  banner: {
    js: "import { createRequire as __flowCreateRequire } from 'node:module'; const require = __flowCreateRequire(import.meta.url);",
  },
  logLevel: "error",
} as const satisfies BuildOptions;

/** Bump when what a manifest holds changes: a manifest of another format is not reused. */
const FORMAT = 1;

export const LAMBDA_BUNDLE_CACHE = join(PROJECT_ROOT, "node_modules", ".cache", "flow-lambda-bundles");

/** Where an entry is bundled from and to: the project (entries and inputs are found from it), the cache. */
export interface LambdaBundling {
  root: string;
  cache: string;
}

const DEFAULT_BUNDLING: LambdaBundling = { root: PROJECT_ROOT, cache: LAMBDA_BUNDLE_CACHE };

/** What a bundle was built from: its inputs (from the root, `/`-separated) and each one's hash. */
interface Manifest {
  format: number;
  esbuild: string;
  options: string;
  entry: string;
  bundle: string;
  inputs: Record<string, string>;
}

const OPTIONS_TEXT = JSON.stringify(OPTIONS);

/**
 * Packages' files' hashes, memoized by path, modification time and size: the functions share most
 * of them (the SDK), a synthesis reads each once. The project's own sources, which are edited, are
 * hashed every time.
 */
const packageHashes = new Map<string, { mtimeMs: number; size: number; hash: string }>();
const NODE_MODULES = `${sep}node_modules${sep}`;

function hashOf(path: string): string {
  if (!path.includes(NODE_MODULES)) return createHash("sha256").update(readFileSync(path)).digest("hex");
  const { mtimeMs, size } = statSync(path);
  const known = packageHashes.get(path);
  if (known !== undefined && known.mtimeMs === mtimeMs && known.size === size) return known.hash;
  const hash = createHash("sha256").update(readFileSync(path)).digest("hex");
  packageHashes.set(path, { mtimeMs, size, hash });
  return hash;
}

const nameOf = (entry: string) => entry.replace(/\.[cm]?ts$/, "").replaceAll("/", "-");

/** The cached bundle's directory, if the manifest is there and every input still has its hash. */
function reusable({ root, cache }: LambdaBundling, entry: string): string | undefined {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(join(cache, `${nameOf(entry)}.json`), "utf8")) as Manifest;
  } catch {
    return undefined;
  }
  if (
    manifest.format !== FORMAT ||
    manifest.esbuild !== esbuildVersion ||
    manifest.options !== OPTIONS_TEXT ||
    manifest.entry !== entry
  )
    return undefined;
  const dir = join(cache, manifest.bundle);
  try {
    for (const [path, hash] of Object.entries(manifest.inputs))
      if (hashOf(resolve(root, path)) !== hash) return undefined;
    for (const file of BUNDLE_FILES) statSync(join(dir, file));
  } catch {
    return undefined;
  }
  return dir;
}

/** Builds `entry`'s bundle into the cache, named by its inputs' hash, with its manifest. */
function build({ root, cache }: LambdaBundling, entry: string): string {
  const started = Date.now();
  const result = buildSync({
    ...OPTIONS,
    entryPoints: [join(root, entry)],
    outfile: join(root, "lambdas", BUNDLE_FILES[0]),
    absWorkingDir: root,
    write: false,
    metafile: true,
  });
  const inputs: Record<string, string> = {};
  let editedDuringBuild = false;
  for (const input of Object.keys(result.metafile.inputs).sort()) {
    const path = resolve(root, input);
    if (statSync(path).mtimeMs >= started) editedDuringBuild = true;
    inputs[relative(root, path).split(sep).join("/")] = hashOf(path);
  }
  const name = nameOf(entry);
  const key = createHash("sha256")
    .update(JSON.stringify([FORMAT, esbuildVersion, OPTIONS_TEXT, entry, inputs]))
    .digest("hex")
    .slice(0, 16);
  const bundle = `${name}-${key}`;
  const dir = join(cache, bundle);
  const temp = `${dir}.${process.pid}.tmp`;
  mkdirSync(temp, { recursive: true });
  for (const file of result.outputFiles) {
    const base = file.path.split(sep).pop() ?? "";
    if (!(BUNDLE_FILES as readonly string[]).includes(base))
      throw new Error(`esbuild wrote ${file.path} for ${entry}`);
    writeFileSync(join(temp, base), file.contents);
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(temp, dir);
  // A file edited while esbuild read it may be in the bundle as it was: built again next time.
  if (!editedDuringBuild) {
    const manifest: Manifest = {
      format: FORMAT,
      esbuild: esbuildVersion,
      options: OPTIONS_TEXT,
      entry,
      bundle,
      inputs,
    };
    writeFileSync(`${temp}.json`, JSON.stringify(manifest));
    renameSync(`${temp}.json`, join(cache, `${name}.json`));
  }
  pruneOlder(cache, name, bundle);
  return dir;
}

/**
 * Removes `name`'s other bundles (and a crashed build's temporary files) not written in the last
 * hour: a synthesis still going may copy one. The tests' entry bundles are pruned the same way.
 */
export function pruneOlder(cache: string, name: string, keep: string): void {
  const hourAgo = Date.now() - 3_600_000;
  for (const file of readdirSync(cache)) {
    if (!file.startsWith(`${name}-`) || file === keep) continue;
    const path = join(cache, file);
    try {
      if (statSync(path).mtimeMs < hourAgo) rmSync(path, { recursive: true, force: true });
    } catch {
      // Removed by another synthesis meanwhile.
    }
  }
}

/**
 * The directory holding `entry`'s bundle (BUNDLE_FILES), reused where its inputs are unchanged,
 * else built; `built` says which. `entry` is a path from the root, e.g. `lambdas/dispatcher.ts`.
 */
export function lambdaBundle(
  entry: string,
  bundling: LambdaBundling = DEFAULT_BUNDLING,
): { dir: string; built: boolean } {
  mkdirSync(bundling.cache, { recursive: true });
  const cached = reusable(bundling, entry);
  if (cached !== undefined) return { dir: cached, built: false };
  return { dir: build(bundling, entry), built: true };
}

/**
 * CDK's local bundling of one entry (an asset's `bundling.local`): the bundle's files copied into
 * the directory CDK stages. It runs only where CDK bundles (not for stacks
 * `aws:cdk:bundling-stacks` leaves out), and the asset's hash is its output's. `entry` is a field
 * because CDK keys the assets it staged in this process by their options as JSON: without it, the
 * five functions' options would be one asset.
 */
export class LocalLambdaBundling implements ILocalBundling {
  constructor(
    readonly entry: string,
    private readonly bundling: LambdaBundling = DEFAULT_BUNDLING,
  ) {}

  tryBundle(outputDir: string): boolean {
    const { dir } = lambdaBundle(this.entry, this.bundling);
    for (const file of BUNDLE_FILES) copyFileSync(join(dir, file), join(outputDir, file));
    return true;
  }
}
