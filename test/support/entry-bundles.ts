/**
 * The programs the e2e tests start as processes (the local stack as `npm start` runs it, the
 * restart tests' stack process), as bundles the e2e project's globalSetup provides, built or
 * reused while their sources are unchanged (test/support/entry-bundles-setup.ts):
 *
 *   spawn(process.execPath, [entryBundle("local-main"), "--port", "0"], { cwd: ROOT })
 *
 * Spawned as `node --import tsx <file>.ts`, every start resolved and loaded each of the product's
 * few hundred modules through tsx's loader: about a second of CPU per start more than the
 * bundle, and the restart tests alone start the stack 14 times. Where a test is about a command
 * as a user runs it (the `flowctl` bin, its exit code and terminal; `flow-bmc-agent`), it spawns
 * the bin itself.
 */
import { join } from "node:path";
import { inject } from "vitest";
import type { EntryName } from "./entry-bundles-setup.js";

/** The bundle of `name`: run it with `node <path> …args`. */
export function entryBundle(name: EntryName): string {
  const path = inject("entryBundles")?.[name];
  if (path === undefined) throw new Error(`no bundle of ${name}: the project's globalSetup builds none`);
  return path;
}

/**
 * For the environment of a process started from a bundle: Node keeps the code V8 compiled from the
 * bundle and from the packages it loads in this directory (NODE_COMPILE_CACHE) and reuses it at the
 * next start, instead of compiling all of it again: about a tenth of a start's CPU, and the
 * restart tests start the stack 16 times. Node keys the cache by its own version and takes an
 * entry only for the unchanged source it was compiled from; it is kept beside the bundles.
 */
export const COMPILE_CACHE_ENV = {
  NODE_COMPILE_CACHE: join(import.meta.dirname, "..", "..", "node_modules", ".cache", "flow-node-compile"),
} as const;
