/**
 * Spawns moto (the local stand-in for DynamoDB and Streams) on a loopback port, for the local
 * stack and the test suites, through the launcher local/moto-launcher.py (its docstring has the
 * details):
 *   - one request at a time, because moto 5's TransactWriteItems is not isolated (real DynamoDB
 *     transactions are serializable), and a TransactWriteItems that copies no table;
 *   - with `dataDir`, durable: every write moto acknowledges is in a write-ahead log on disk before
 *     its answer leaves, snapshots are one moment across tables, and a start restores both.
 * Throughput is moto's single-request speed, which is all a laptop needs. `MOTO_PYTHON` names the
 * interpreter that has moto (default python3); if the launcher cannot start, plain `moto_server`
 * is used and `serialized` is false (never with `dataDir`: that needs the launcher).
 *
 * moto runs in its own process group, so a Ctrl-C in the terminal reaches the stack only, which
 * stops its writers first and moto last (the final snapshot). It watches its stdin, which this
 * process holds open: if this process dies, even by SIGKILL, moto exits at once.
 *
 * When FLOW_MOTO_FORKSERVER names the socket of a moto fork server (local/moto-forkserver.py; the
 * test suites start one, test/support/global-setup.ts), the launcher is forked by it instead of
 * spawned, without Python's second of imports, and behaves the same (local/moto-fork.ts): its
 * lifeline is its connection to the server instead of its stdin. If the server cannot be reached
 * or refuses, the launcher is spawned, with one line said.
 */
import { spawn } from "node:child_process";
import { openSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { ForkedMoto, forkMoto, type MotoProcess } from "./moto-fork.js";

export interface LocalMotoOptions {
  python?: string;
  timeoutMs?: number;
  serialized?: boolean;
  /** Keep the tables in this directory (write-ahead log and snapshots): see the module comment. */
  dataDir?: string;
  /** Logged writes between two snapshots (default 5000; tests make it small). */
  compactEvery?: number;
  /** The loopback port; default a free one. */
  port?: number;
  /**
   * Called once when moto exits although `stop()` was not called, with what happened
   * (`signal SIGKILL`, `code 1: <its last stderr line>`).
   */
  onUnexpectedExit?: (why: string) => void;
  /** The launcher's own lines (what a start restored). */
  log?: (line: string) => void;
  /** Added to this process's environment, e.g. `{ MOTO_ACCOUNT_ID: "000000000000" }`. */
  env?: Record<string, string>;
  /**
   * Outlive this process (deploy/local.ts: `deploy:local` leaves the endpoint up for
   * `destroy:local`): moto's output is appended to this file instead of a pipe, which would break
   * when this process exits, its stdin is not this process's (so it does not exit with it), and it
   * is stopped later by its pid.
   */
  detachedLog?: string;
}

export interface LocalMoto {
  endpoint: string;
  port: number;
  /** True when requests are serialized (transactions behave like DynamoDB's). */
  serialized: boolean;
  /** The directory the tables are kept in, when durable. */
  dataDir?: string;
  /** moto's process id (tests kill it). */
  pid(): number | undefined;
  /** After an unexpected exit: moto again, on the same port, restored from `dataDir`. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const LAUNCHER = fileURLToPath(new URL("./moto-launcher.py", import.meta.url));

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

export async function startLocalMoto(options: LocalMotoOptions = {}): Promise<LocalMoto> {
  const port = options.port ?? (await freePort());
  if (options.serialized !== false || options.dataDir !== undefined) {
    const python = options.python ?? process.env.MOTO_PYTHON ?? "python3";
    const args = [LAUNCHER, "127.0.0.1", String(port)];
    if (options.dataDir !== undefined) args.push(options.dataDir, String(options.compactEvery ?? 5000));
    try {
      return await supervise(python, args, port, true, {
        ...options,
        forkable: options.python === undefined,
      });
    } catch (error) {
      // Durability needs the launcher: no silent fallback to a moto that forgets.
      if (options.dataDir !== undefined) throw error;
    }
  }
  return supervise("moto_server", ["-H", "127.0.0.1", "-p", String(port)], port, false, options);
}

async function supervise(
  command: string,
  args: string[],
  port: number,
  serialized: boolean,
  options: LocalMotoOptions & { forkable?: boolean },
): Promise<LocalMoto> {
  const endpoint = `http://127.0.0.1:${port}`;
  let child = await launch(command, args, endpoint, options);
  let stopping = false;
  const watch = (c: MotoProcess) => {
    c.once("exit", (code, signal) => {
      if (stopping || c !== child) return;
      const last = stderrTail.get(c)?.trim().split("\n").pop() ?? "";
      options.onUnexpectedExit?.(
        signal !== null ? `signal ${signal}` : `code ${code}${last ? `: ${last}` : ""}`,
      );
    });
  };
  watch(child);
  return {
    endpoint,
    port,
    serialized,
    ...(options.dataDir !== undefined ? { dataDir: options.dataDir } : {}),
    pid: () => child.pid,
    async restart() {
      if (child.exitCode === null && child.signalCode === null) {
        if (!(child instanceof ForkedMoto && child.gone())) return;
        // The server reaped it, and its exit is on its way here.
        await new Promise((resolve) => child.once("exit", resolve));
      }
      child = await launch(command, args, endpoint, options);
      watch(child);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        stopping = true;
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        // The final snapshot of a large data dir takes a while; a plain moto stops at once.
        setTimeout(() => child.kill("SIGKILL"), options.dataDir === undefined ? 3000 : 60_000).unref();
      }),
  };
}

const stderrTail = new WeakMap<MotoProcess, string>();

/** Fork servers this process could not use, each said once. */
const unusable = new Set<string>();

/** The launcher forked by the fork server FLOW_MOTO_FORKSERVER names, if it can be. */
async function forked(args: string[], env: NodeJS.ProcessEnv, options: LocalMotoOptions) {
  const socketPath = env.FLOW_MOTO_FORKSERVER;
  if (socketPath === undefined || socketPath === "") return undefined;
  try {
    return await forkMoto(socketPath, args.slice(1), env, process.cwd());
  } catch (error) {
    if (!unusable.has(socketPath)) {
      unusable.add(socketPath);
      const line = `moto fork server ${socketPath} not used (${(error as Error).message}): spawning moto`;
      (options.log ?? ((l: string) => process.stderr.write(`${l}\n`)))(line);
    }
    return undefined;
  }
}

async function launch(
  command: string,
  args: string[],
  endpoint: string,
  options: LocalMotoOptions & { forkable?: boolean },
): Promise<MotoProcess> {
  // A restore replays the log before moto listens: give it time.
  const timeoutMs = options.timeoutMs ?? (options.dataDir === undefined ? 20_000 : 120_000);
  const file = options.detachedLog;
  const env = { ...process.env, ...options.env, ...(file === undefined ? {} : { FLOW_MOTO_DETACHED: "1" }) };
  const child: MotoProcess =
    (options.forkable === true && file === undefined ? await forked(args, env, options) : undefined) ??
    (file === undefined
      ? spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], detached: true, env })
      : spawn(command, args, {
          stdio: ["ignore", openSync(file, "a"), openSync(file, "a")],
          detached: true,
          env,
        }));
  stderrTail.set(child, "");
  child.stderr?.on("data", (d: Buffer) => {
    stderrTail.set(child, ((stderrTail.get(child) ?? "") + d.toString()).slice(-4000));
  });
  let pending = "";
  child.stdout?.on("data", (d: Buffer) => {
    pending += d.toString();
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) if (line.trim() !== "") options.log?.(line);
  });
  // Our end of its stdin (or of its connection) stays open for as long as we live (see the module comment).
  child.stdin?.on("error", () => {});
  const output = () => (file === undefined ? stderrTail.get(child) : readFileSync(file, "utf8").slice(-4000));
  let exited: string | undefined;
  child.on("exit", (code, signal) => {
    exited = `${command} exited (code ${code}, signal ${signal}): ${output()}`;
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
      // Detached: nothing of this process keeps it waiting for moto (no pipe, no handle).
      if (file !== undefined) child.unref();
      return child;
    } catch {
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error(`${command} did not answer on ${endpoint} within ${timeoutMs} ms: ${output()}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
