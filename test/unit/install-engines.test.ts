/**
 * What npm's EBADENGINE check would say about the installed packages, made here because the
 * project's .npmrc keeps npm's log to errors: every package package-lock.json installs accepts the
 * Node the project runs on (the `node` devDependency, which npm scripts and npx find first on the
 * path), and those that would refuse the oldest Node npm itself may run on (devEngines.runtime) are
 * exactly the ones named below, which run on the project's Node only. A package that needs a newer
 * Node than the project's, or a new one that refuses npm's, fails this test by name.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
// semver is npm's own range reader (installed with vitest's and the CDK's tooling), read as npm does.
const semver = createRequire(import.meta.url)("semver") as {
  satisfies(version: string, range: string, options: { includePrerelease: boolean }): boolean;
  minVersion(range: string): { version: string } | null;
};

/** Packages that need more than npm's Node: they run on the project's Node, never on npm's. */
const NEED_THE_PROJECT_NODE = ["node_modules/aws-local-stepfunctions"];

interface LockEntry {
  engines?: { node?: string } | string[];
  optional?: boolean;
}

const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as {
  engines: { node: string };
  devDependencies: Record<string, string>;
  devEngines: { runtime: { name: string; version: string } };
};
const lock = JSON.parse(readFileSync(`${ROOT}package-lock.json`, "utf8")) as {
  packages: Record<string, LockEntry>;
};
const projectNode = pkg.devDependencies.node ?? "";
const npmNode = semver.minVersion(pkg.devEngines.runtime.version)?.version ?? "";

/** [path, node range] of every installed package that names one. */
const ranges = Object.entries(lock.packages).flatMap(([path, entry]) => {
  const engines = entry.engines;
  return path !== "" && !entry.optional && engines !== undefined && !Array.isArray(engines) && engines.node
    ? [[path, engines.node] as const]
    : [];
});
const accepts = (version: string, range: string) =>
  semver.satisfies(version, range, { includePrerelease: true });

describe("the Node versions the installed packages declare", () => {
  it("are read from the lock file (the project's Node pinned, npm's Node a range)", () => {
    expect(projectNode).toMatch(/^\d+\.\d+\.\d+$/);
    expect(pkg.devEngines.runtime.name).toBe("node");
    expect(npmNode).toMatch(/^\d+\.\d+\.\d+$/);
    expect(ranges.length).toBeGreaterThan(100);
  });

  it("all accept the project's Node, and the project's engines say so", () => {
    expect(accepts(projectNode, pkg.engines.node)).toBe(true);
    expect(ranges.filter(([, range]) => !accepts(projectNode, range))).toEqual([]);
  });

  it("refuse the oldest Node npm may run on only where listed", () => {
    expect(ranges.filter(([, range]) => !accepts(npmNode, range)).map(([path]) => path)).toEqual(
      NEED_THE_PROJECT_NODE,
    );
  });
});
