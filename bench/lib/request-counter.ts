/**
 * A counting proxy in front of a moto: every request is forwarded unchanged and counted by what it
 * asks for (`dynamodb PutItem`, `streams GetRecords`, `s3 PUT object`, ...), and moto's own CPU
 * time is read from /proc, so a benchmark can say what a piece of work costs the stand-in.
 */
import { readFileSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface RequestCounter {
  /** `http://127.0.0.1:<port>`: give this to whatever should be counted. */
  endpoint: string;
  /** Requests by kind since the start (or the last `reset`). */
  counts(): Map<string, number>;
  reset(): void;
  close(): Promise<void>;
}

/** Starts the proxy forwarding to `target` (`http://127.0.0.1:<port>`). */
export async function startRequestCounter(target: string): Promise<RequestCounter> {
  const to = new URL(target);
  let counts = new Map<string, number>();
  const server: Server = createServer((incoming, outgoing) => {
    const kind = requestKind(incoming.method ?? "GET", incoming.url ?? "/", incoming.headers);
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
    const forward = httpRequest(
      {
        host: to.hostname,
        port: to.port,
        method: incoming.method,
        path: incoming.url,
        headers: incoming.headers,
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forward.on("error", () => outgoing.destroy());
    incoming.pipe(forward);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts: () => new Map(counts),
    reset() {
      counts = new Map();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What a request asks for: the JSON protocols' target, or S3's method and resource. */
export function requestKind(
  method: string,
  url: string,
  headers: Record<string, string | string[] | undefined>,
): string {
  const target = headers["x-amz-target"];
  if (typeof target === "string") {
    const [service = "", operation = ""] = target.split(".");
    if (service.startsWith("DynamoDBStreams")) return `streams ${operation}`;
    if (service.startsWith("DynamoDB")) return `dynamodb ${operation}`;
    if (service === "AWSEvents") return `events ${operation}`;
    return `${service} ${operation}`;
  }
  const { pathname, searchParams } = new URL(url, "http://local");
  const parts = pathname.split("/").filter((p) => p !== "");
  if (parts.length <= 1) {
    if (method === "GET" && searchParams.has("list-type")) return "s3 ListObjectsV2";
    if (method === "GET" && searchParams.has("versions")) return "s3 ListObjectVersions";
    return `s3 ${method} bucket`;
  }
  return `s3 ${method} object`;
}

/** User + system CPU seconds a process has used so far (Linux /proc), undefined if it cannot say. */
export function processCpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command (which may hold spaces): utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** Linux's USER_HZ: /proc times are in hundredths of a second. */
const CLOCK_TICKS = 100;

/** Rows of `kind, count` sorted by count, then a total. */
export function countRows(counts: Map<string, number>, divideBy = 1): string[][] {
  const rows = [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([kind, n]) => [kind, formatCount(n / divideBy)]);
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  return [...rows, ["total", formatCount(total / divideBy)]];
}

function formatCount(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}
