/**
 * Where a command's AWS requests come from: runs it with bench/lib/request-sites-hook.ts loaded
 * into each of its Node processes (NODE_OPTIONS, so the vitest workers and the processes they
 * spawn too), then prints the requests by operation, by call site (operation, table role and the
 * caller's first frames outside node_modules) and by the file that led to them.
 *
 *   npx tsx bench/request-sites.ts [--top 20] [--out sites.json] -- npx vitest run --project e2e
 *
 * Counts are per SDK `send` (retries not counted) and per DynamoDB Streams call: what the code
 * asks for, the same as bench/moto-requests.ts counts at the endpoint but without one shared moto.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { printTable } from "./lib/table.js";

const argv = process.argv.slice(2);
const dash = argv.indexOf("--");
const command = dash < 0 ? [] : argv.slice(dash + 1);
const flags = dash < 0 ? argv : argv.slice(0, dash);
const flag = (name: string): string | undefined => {
  const i = flags.indexOf(name);
  return i < 0 ? undefined : flags[i + 1];
};
if (command.length === 0) {
  console.error("usage: npx tsx bench/request-sites.ts [--top N] [--out FILE] -- <command> [args...]");
  process.exit(2);
}
/** Frames of a site shown in its table (the hook records more, for the other tables). */
const SHOWN_FRAMES = 3;
const top = Number(flag("--top") ?? 20);
const out = flag("--out");

const dir = mkdtempSync(join(tmpdir(), "request-sites-"));
const hook = resolve(import.meta.dirname, "lib/request-sites-hook.ts");
const code = await new Promise<number>((done) => {
  const child = spawn(command[0] as string, command.slice(1), {
    stdio: "inherit",
    env: {
      ...process.env,
      FLOW_REQUEST_SITES_DIR: dir,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import ${hook}`.trim(),
    },
  });
  child.on("exit", (c, signal) => done(c ?? (signal === null ? 1 : 128)));
});

/** [operation, table, ...frames] → requests, over every process. */
const sites = new Map<string, number>();
for (const file of readdirSync(dir)) {
  const { counts } = JSON.parse(readFileSync(join(dir, file), "utf8")) as { counts: [string, number][] };
  for (const [key, n] of counts) sites.set(key, (sites.get(key) ?? 0) + n);
}
rmSync(dir, { recursive: true, force: true });
if (out !== undefined)
  writeFileSync(
    out,
    JSON.stringify(
      [...sites].sort((a, b) => b[1] - a[1]),
      null,
      1,
    ),
  );

const entries = [...sites].map(([key, n]) => ({ parts: JSON.parse(key) as string[], n }));
const total = entries.reduce((a, e) => a + e.n, 0);
const by = (of: (parts: string[]) => string) => {
  const m = new Map<string, number>();
  for (const e of entries) m.set(of(e.parts), (m.get(of(e.parts)) ?? 0) + e.n);
  return [...m].sort((a, b) => b[1] - a[1]);
};
const rows = (list: [string, number][], limit: number) => [
  ...list.slice(0, limit).map(([k, n]) => [k, String(n)]),
  ["total", String(total)],
];
const testFile = (parts: string[]) =>
  parts.slice(2).find((f) => f.startsWith("test/")) ?? parts.slice(2).at(-1) ?? "-";

/** The first frame outside src/adapters/ (the use case, poller or test that asked). */
const caller = (parts: string[]) =>
  `${parts[0]} ${parts[1]} <- ${parts.slice(2).find((f) => !f.startsWith("src/adapters/")) ?? "-"}`;

console.log(`\ncommand  ${command.join(" ")} (exit ${code})\n`);
printTable(
  ["operation", "requests"],
  rows(
    by((p) => p[0] as string),
    40,
  ),
);
console.log("");
printTable(
  ["operation table", "requests"],
  rows(
    by((p) => `${p[0]} ${p[1]}`),
    top,
  ),
);
console.log("");
printTable(
  ["site: operation table <- first frames", "requests"],
  rows(
    by((p) => p.slice(0, 2 + SHOWN_FRAMES).join(" <- ")),
    top,
  ),
);
console.log("");
printTable(["caller outside the adapters", "requests"], rows(by(caller), top));
console.log("");
printTable(["first test frame", "requests"], rows(by(testFile), top));
process.exit(code);
