/**
 * Loaded into every Node process of a measured command (`node --import`, through NODE_OPTIONS: see
 * bench/request-sites.ts): records each AWS request the process makes by operation, table and call
 * site, and writes the counts to `$FLOW_REQUEST_SITES_DIR/<pid>.json` every few seconds and at exit.
 *
 * What it sees: every SDK v3 command (one record per `send`, before retries: the SDK's base
 * client's `send`, which every service client and the DynamoDB document client inherit), and every
 * DynamoDB Streams call and presigned S3 request made with the platform's `fetch` (the local stream
 * pollers', the image catalog's seed). A call site is
 * the first frames of the caller's stack outside node_modules and this file: the adapter that sent
 * it, then what called that, then the test (or the code a spawned process runs) that led to it.
 *
 * Runs without a build step, on Node's own TypeScript type stripping: plain erasable TypeScript,
 * and only `node:` imports.
 */
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";

/** How many of the caller's own frames a site holds. */
const SITE_FRAMES = 8;
const FLUSH_EVERY_MS = 3_000;

const dir = process.env.FLOW_REQUEST_SITES_DIR;
/** The repository (this file is bench/lib/ in it), whatever the process's working directory. */
const root = join(import.meta.dirname, "..", "..");
const counts = new Map<string, number>();
let dirty = false;

function frames(): string[] {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 60;
  const stack = new Error().stack ?? "";
  Error.stackTraceLimit = limit;
  const out: string[] = [];
  for (const line of stack.split("\n").slice(1)) {
    const m = /at (?:async )?(?:(.*?) \()?(?:file:\/\/)?(\/[^():]+):(\d+):\d+\)?$/.exec(line.trim());
    if (m === null) continue;
    const file = m[2] as string;
    // The test bundles (the programs the e2e tests start) live in node_modules/.cache: theirs count.
    const library = file.includes("/node_modules/") && !file.includes("/node_modules/.cache/");
    if (library || file.includes("request-sites-hook")) continue;
    const where = `${relative(root, file)}:${m[3]}`;
    const name = m[1] === undefined ? "" : ` ${m[1].replace(/^(?:async )?/, "")}`;
    const frame = `${where}${name}`;
    if (out[out.length - 1] !== frame) out.push(frame);
    if (out.length >= SITE_FRAMES) break;
  }
  return out;
}

/** The table's role: what follows the last `-` of its name (`e2e-x-1a2b3c4d-Runs` → `Runs`). */
function role(table: unknown): string {
  if (typeof table !== "string") return "-";
  return table.slice(table.lastIndexOf("-") + 1) || table;
}

function tablesOf(input: Record<string, unknown> | undefined): string {
  if (input === undefined) return "-";
  if (input.TableName !== undefined) return role(input.TableName);
  if (typeof input.Bucket === "string") return "s3";
  const items = input.RequestItems as Record<string, unknown> | undefined;
  if (items !== undefined) return [...new Set(Object.keys(items).map(role))].sort().join("+");
  const transact = input.TransactItems as Record<string, { TableName?: string }>[] | undefined;
  if (transact !== undefined) {
    const names = transact.flatMap((t) => Object.values(t).map((op) => role(op?.TableName)));
    return [...new Set(names)].sort().join("+");
  }
  return "-";
}

function record(operation: string, table: string): void {
  const key = JSON.stringify([operation, table, ...frames()]);
  counts.set(key, (counts.get(key) ?? 0) + 1);
  dirty = true;
}

function flush(): void {
  if (!dirty || dir === undefined) return;
  dirty = false;
  const file = join(dir, `${process.pid}.json`);
  writeFileSync(file, JSON.stringify({ argv: process.argv.slice(1, 3), counts: [...counts] }));
}

if (dir !== undefined) {
  const require = createRequire(join(root, "package.json"));
  const { Client } = require("@smithy/core/client") as {
    Client: { prototype: { send: (command: unknown, ...rest: unknown[]) => unknown } };
  };
  const send = Client.prototype.send;
  Client.prototype.send = function (this: unknown, command: unknown, ...rest: unknown[]) {
    const c = command as { constructor: { name: string }; input?: Record<string, unknown> };
    const operation = c.constructor.name.replace(/Command$/, "");
    record(operation, tablesOf(c.input));
    return send.call(this, command, ...rest);
  };
  const platformFetch = globalThis.fetch;
  globalThis.fetch = ((input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    if (typeof input === "string" && input.includes("X-Amz-Signature=")) {
      // A presigned S3 URL (the image catalog's seed PUTs its objects through them).
      record(`s3 presigned ${init?.method ?? "GET"}`, "s3");
      return platformFetch(input, init);
    }
    const headers = new Headers(init?.headers);
    const target = headers.get("x-amz-target");
    if (target?.startsWith("DynamoDBStreams")) {
      let table = "-";
      try {
        // moto's shard iterators hold the stream's ARN, and so the table's name.
        const body = JSON.parse(String(init?.body)) as { StreamArn?: string; ShardIterator?: string };
        const arn = body.StreamArn ?? body.ShardIterator ?? "";
        table = role(/table\/([^/]+)/.exec(arn)?.[1]);
      } catch {}
      record(`streams ${target.split(".")[1]}`, table);
    }
    return platformFetch(input, init);
  }) as typeof fetch;
  setInterval(flush, FLUSH_EVERY_MS).unref();
  process.on("exit", flush);
}
