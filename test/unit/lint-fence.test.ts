/**
 * The fences biome.json puts around the pure core and the use cases, each shown catching a sample:
 * src/domain takes no clock, randomness, I/O or environment; src/app takes time, timers and
 * randomness through ports and reads no environment or file; no import cycle anywhere. Each
 * sample is linted by the project's own biome with the project's own configuration and plugins,
 * in a copy made under a temporary directory (a sample never lands in the tree, nor in coverage).
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const BIOME = join(ROOT, "node_modules/.bin/biome");

interface Diagnostic {
  category: string;
  message: string;
  location: { path: string };
}

let project: string;

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), "flow-lint-"));
  const config = JSON.parse(readFileSync(join(ROOT, "biome.json"), "utf8")) as Record<string, unknown>;
  delete config.$schema;
  config.vcs = { enabled: false };
  writeFileSync(join(project, "biome.json"), JSON.stringify(config));
  cpSync(join(ROOT, "lint"), join(project, "lint"), { recursive: true });
});

afterAll(() => rmSync(project, { recursive: true, force: true }));

/** Writes the files, lints them all, and returns every diagnostic (rule or plugin) per file. */
function lint(files: Record<string, string>): Diagnostic[] {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(project, path)), { recursive: true });
    writeFileSync(join(project, path), text);
  }
  let out: string;
  try {
    out = execFileSync(BIOME, ["lint", "--reporter=json", "--max-diagnostics=none", ...Object.keys(files)], {
      cwd: project,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
  } catch (error) {
    out = (error as { stdout: string }).stdout;
  } finally {
    for (const path of Object.keys(files)) rmSync(join(project, path), { force: true });
  }
  return (JSON.parse(out) as { diagnostics: Diagnostic[] }).diagnostics.filter(
    (d) => d.category !== "format" && !d.category.startsWith("assist"),
  );
}

/**
 * [where, what the sample does, code, the rule that must fire, words its message must hold]. A
 * denied global's message names the global (biome shows the configured reason as its advice).
 */
const SAMPLES: [string, string, string, string, string][] = [
  [
    "src/domain",
    "reads the clock",
    "export const t = () => Date.now();",
    "lint/style/noRestrictedGlobals",
    "Date",
  ],
  ["src/domain", "draws a random number", "export const r = () => Math.random();", "plugin", "no randomness"],
  [
    "src/domain",
    "draws one through globalThis",
    "export const r = () => globalThis.Math.random();",
    "lint/style/noRestrictedGlobals",
    "globalThis",
  ],
  [
    "src/domain",
    "makes an id",
    'import { randomUUID } from "node:crypto";\nexport const id = () => randomUUID();',
    "lint/style/noRestrictedImports",
    "no randomness",
  ],
  [
    "src/domain",
    "times itself",
    "export const t = () => performance.now();",
    "lint/style/noRestrictedGlobals",
    "performance",
  ],
  [
    "src/domain",
    "logs",
    'export const l = () => console.log("x");',
    "lint/style/noRestrictedGlobals",
    "console",
  ],
  [
    "src/domain",
    "reads the environment",
    "export const e = () => process.env.X;",
    "lint/style/noRestrictedGlobals",
    "process",
  ],
  [
    "src/domain",
    "reads a file",
    'export { readFileSync } from "node:fs";',
    "lint/style/noRestrictedImports",
    "src/domain is pure",
  ],
  ["src/app", "reads the clock", "export const t = () => Date.now();", "plugin", "Clock port"],
  ["src/app", "passes the clock on", "export const now: () => number = Date.now;", "plugin", "Clock port"],
  ["src/app", "draws a random number", "export const r = () => Math.random();", "plugin", "no randomness"],
  [
    "src/app",
    "sets a timer",
    "export const s = (f: () => void) => setTimeout(f, 10);",
    "lint/style/noRestrictedGlobals",
    "setTimeout",
  ],
  [
    "src/app",
    "reads the environment",
    "export const e = () => process.env.X;",
    "lint/style/noRestrictedGlobals",
    "process",
  ],
  [
    "src/app",
    "reads a file",
    'import { readFileSync } from "node:fs";\nexport const f = () => readFileSync("x");',
    "lint/style/noRestrictedImports",
    "no I/O",
  ],
  [
    "src/app",
    "uses timers by import",
    'import { setTimeout as sleep } from "node:timers/promises";\nexport const s = () => sleep(1);',
    "lint/style/noRestrictedImports",
    "no I/O",
  ],
];

/** Where a sample is written: `src/domain/reads-the-clock.ts`. */
const samplePath = (where: string, what: string): string => `${where}/${what.replaceAll(" ", "-")}.ts`;
const shellPath = (i: number): string => `src/service/sample-${i}.ts`;
const CYCLE = {
  "cli/cycle-a.ts": 'import type { B } from "./cycle-b.js";\nexport type A = { b?: B };\n',
  "cli/cycle-b.ts": 'import type { A } from "./cycle-a.js";\nexport type B = { a?: A };\n',
};
const HASH = {
  "src/domain/hash-sample.ts":
    'import { createHash } from "node:crypto";\nexport const h = (t: string) => createHash("sha256").update(t).digest("hex");\n',
};

describe("lint fence: each rule catches its sample", () => {
  // Every test's files, each at a path of its own, linted in one biome run (a run costs a second
  // of CPU, the same for one file or forty); each test looks at the diagnostics of its own files.
  let diagnostics: Diagnostic[];
  beforeAll(() => {
    diagnostics = lint({
      ...Object.fromEntries(SAMPLES.map(([where, what, code]) => [samplePath(where, what), `${code}\n`])),
      ...Object.fromEntries(SAMPLES.map(([, , code], i) => [shellPath(i), `${code}\n`])),
      ...CYCLE,
      ...HASH,
    });
  });
  const foundIn = (paths: readonly string[]): Diagnostic[] =>
    diagnostics.filter((d) => paths.includes(d.location.path));

  it.each(SAMPLES)("%s: code that %s fails lint (%s)", (where, what, _code, rule, words) => {
    const found = foundIn([samplePath(where, what)]);
    expect(found.map((d) => d.category)).toContain(rule);
    expect(found.find((d) => d.category === rule)?.message).toContain(words);
  });

  it("the same code is allowed outside the fences (the shell may)", () => {
    const shell = SAMPLES.map((_, i) => shellPath(i));
    const found = foundIn(shell).filter((d) => /noRestricted|plugin/.test(d.category));
    expect(found).toEqual([]);
  });

  it("an import cycle fails lint anywhere, type-only imports included", () => {
    const found = foundIn(Object.keys(CYCLE));
    expect(
      found
        .filter((d) => d.category === "lint/suspicious/noImportCycles")
        .map((d) => d.location.path)
        .sort(),
    ).toEqual(["cli/cycle-a.ts", "cli/cycle-b.ts"]);
  });

  it("the domain may hash", () => {
    expect(foundIn(Object.keys(HASH))).toEqual([]);
  });
});
