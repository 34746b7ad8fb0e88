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
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";

export interface LocalMoto {
  endpoint: string;
  /** True when requests are serialized (transactions behave like DynamoDB's). */
  serialized: boolean;
  stop(): Promise<void>;
}

const SERIALIZED_LAUNCHER = `
import signal, sys, threading
from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

app = DomainDispatcherApplication(create_backend_app)
lock = threading.Lock()

def serialized(environ, start_response):
    with lock:
        body = app(environ, start_response)
        try:
            chunks = [bytes(c) for c in body]
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
    return chunks

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
run_simple(sys.argv[1], int(sys.argv[2]), serialized, threaded=True)
`;

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
        (port) => ["-c", SERIALIZED_LAUNCHER, "127.0.0.1", String(port)],
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
