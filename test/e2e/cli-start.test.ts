/**
 * What a `flowctl` process loads as it starts (cli/bin/flowctl.js, docs/cli.md "Start-up"): the
 * bin as a user runs it, `node cli/bin/flowctl.js …`, needing no service. A command loads what it
 * uses: the AWS SDK only for `agent provision`, the yaml package only where YAML is read or
 * written, node:http's client only for `firmware upload`. And the bin keeps V8's compiled code in
 * Node's compile cache, which the next start reuses instead of adding entries of its own.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { runProcess } from "../support/run-process.js";

const ROOT = join(import.meta.dirname, "..", "..");
const FLOWCTL = join(ROOT, "cli", "bin", "flowctl.js");
const dirs: string[] = [];

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * Loaded before the bin: as the process exits, writes to stderr (after a marker line) the packages
 * it loaded (every one here is CommonJS, so in require's cache) and whether Node's HTTP client,
 * fetch's implementation, was loaded.
 */
const REPORT_LOADED = `data:text/javascript,${encodeURIComponent(`
import { createRequire } from "node:module";
const cache = createRequire(process.cwd() + "/").cache;
process.on("exit", () => {
  const loaded = new Set();
  const packageName = new RegExp("node_modules/((?:@[^/]+/)?[^/]+)");
  for (const file of Object.keys(cache)) {
    const name = packageName.exec(file)?.[1];
    if (name !== undefined) loaded.add(name);
  }
  if (process.moduleLoadList.some((m) => m.includes("undici"))) loaded.add("node:http client");
  process.stderr.write("\\nloaded: " + JSON.stringify([...loaded].sort()) + "\\n");
});
`)}`;

async function packagesLoadedBy(args: string[]): Promise<{ code: number; loaded: string[] }> {
  const r = await runProcess(process.execPath, ["--import", REPORT_LOADED, FLOWCTL, ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1" },
  });
  const line = /\nloaded: (.*)\n$/.exec(r.stderr);
  expect(line, r.stderr).not.toBeNull();
  return { code: r.code, loaded: JSON.parse(line?.[1] ?? "[]") };
}

/** What only some commands need, and so no other loads. */
const ON_DEMAND = /^(@aws-sdk\/|@smithy\/|yaml$|node:http client$)/;

describe("flowctl's start loads what the command uses", () => {
  it.each([
    ["--help", ["--help"], 0],
    ["a usage error", ["run", "get", "run-7"], 1],
    ["run list against no service", ["--endpoint", "127.0.0.1:1", "--timeout", "5s", "run", "list"], 24],
  ])("%s: neither the AWS SDK, the yaml package nor node:http's client", async (_, args, code) => {
    const r = await packagesLoadedBy(args as string[]);
    expect(r.code).toBe(code);
    expect(r.loaded).toContain("commander");
    expect(r.loaded.filter((name) => ON_DEMAND.test(name))).toEqual([]);
  });

  it("run create -f loads the yaml package to read the file, and still neither the AWS SDK nor node:http's client", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flowctl-start-"));
    dirs.push(dir);
    const file = join(dir, "run.yaml");
    writeFileSync(file, "name: no operation\n");
    const r = await packagesLoadedBy(["run", "create", "-f", file]);
    expect(r.code).toBe(1);
    expect(r.loaded.filter((name) => ON_DEMAND.test(name))).toEqual(["yaml"]);
  });
});

describe("flowctl's compile cache", () => {
  const cacheFiles = (dir: string) => readdirSync(dir, { recursive: true, encoding: "utf8" }).sort();

  it("the first start fills NODE_COMPILE_CACHE; the next reuses its entries (the CLI's own modules too) and adds none", async () => {
    const cache = mkdtempSync(join(tmpdir(), "flowctl-compile-cache-"));
    dirs.push(cache);
    const env = { ...process.env, NO_COLOR: "1", NODE_COMPILE_CACHE: cache };
    const first = await runProcess(process.execPath, [FLOWCTL, "--help"], { cwd: ROOT, env });
    expect(first.code).toBe(0);
    const filled = cacheFiles(cache);
    expect(filled.length).toBeGreaterThan(100);

    // Node says, per module, whether the cache it read was accepted (its native debug output).
    const second = await runProcess(process.execPath, [FLOWCTL, "--help"], {
      cwd: ROOT,
      env: { ...env, NODE_DEBUG_NATIVE: "COMPILE_CACHE" },
    });
    expect(second.code).toBe(0);
    expect(second.stdout).toBe(first.stdout);
    for (const module of ["cli/program.ts", "src/gen/flow/v1/flow.ts", "node_modules/commander/index.js"]) {
      const file = join(ROOT, module);
      const id = module.endsWith(".ts") ? pathToFileURL(file).href : file;
      expect(second.stderr).toContain(`cache for ${id} was accepted`);
    }
    expect(cacheFiles(cache)).toEqual(filled);
  });
});
