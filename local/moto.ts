/**
 * Spawns moto (the local stand-in for DynamoDB and Streams) on a free loopback port, for the local
 * stack and the test suites.
 *
 * Why not plain `moto_server`: it serves requests on many threads, and moto 5's TransactWriteItems
 * is not isolated. Each transaction deep-copies the tables it touches at its start and, when
 * cancelled, restores those copies: a concurrent transaction that committed in between is silently
 * erased. Under 16 concurrent claimers that let 4 claims through a limit of 3. Real DynamoDB
 * transactions are serializable, so the launcher below runs moto's own WSGI app with ONE lock
 * around each request (connections stay threaded). Throughput is moto's single-request speed,
 * which is all a laptop needs. `MOTO_PYTHON` names the interpreter that has moto (default python3);
 * if it cannot start, plain `moto_server` is used and `serialized` is false.
 *
 * The launcher also replaces moto's TransactWriteItems with one that needs no table copy. moto
 * deep-copies every table a transaction touches before it starts (O(table size): 177 ms per claim
 * once a table holds a few thousand items) and, on cancellation, swaps the copies in, which leaves
 * open stream readers on a dead table. Under the lock no other request runs, so the replacement
 * checks every condition against the state before the transaction (as DynamoDB does), cancels
 * with moto's own per-item reasons if any fails, and only then applies the writes; a write that
 * still fails (a malformed update expression) is undone from copies of the touched items only.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

export interface LocalMoto {
  endpoint: string;
  /** True when requests are serialized (transactions behave like DynamoDB's). */
  serialized: boolean;
  stop(): Promise<void>;
}

/** The launcher (see the module comment): moto's WSGI app behind one lock. */
const SERIALIZED_LAUNCHER = fileURLToPath(new URL("./moto-launcher.py", import.meta.url));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function startLocalMoto(
  options: { python?: string; timeoutMs?: number; serialized?: boolean } = {},
): Promise<LocalMoto> {
  if (options.serialized !== false) {
    try {
      return await launch(
        options.python ?? process.env.MOTO_PYTHON ?? "python3",
        (port) => [SERIALIZED_LAUNCHER, "127.0.0.1", String(port)],
        true,
        options.timeoutMs,
      );
    } catch {
      // fall through to the stock server
    }
  }
  return launch("moto_server", (port) => ["-H", "127.0.0.1", "-p", String(port)], false, options.timeoutMs);
}

async function launch(
  command: string,
  args: (port: number) => string[],
  serialized: boolean,
  timeoutMs = 20_000,
): Promise<LocalMoto> {
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(command, args(port), { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  let exited: string | undefined;
  child.on("exit", (code, signal) => {
    exited = `${command} exited (code ${code}, signal ${signal}): ${stderr}`;
  });
  child.on("error", (error) => {
    exited = `${command} failed to start: ${error.message}`;
  });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited !== undefined) throw new Error(exited);
    try {
      const res = await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error(`${command} did not answer on ${endpoint} within ${timeoutMs} ms: ${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    endpoint,
    serialized,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 3000).unref();
      }),
  };
}
