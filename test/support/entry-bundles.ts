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
import { inject } from "vitest";
import type { EntryName } from "./entry-bundles-setup.js";

/** The bundle of `name`: run it with `node <path> …args`. */
export function entryBundle(name: EntryName): string {
  const path = inject("entryBundles")?.[name];
  if (path === undefined) throw new Error(`no bundle of ${name}: the project's globalSetup builds none`);
  return path;
}
