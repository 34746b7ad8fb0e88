/**
 * A moto launcher forked by the moto fork server (local/moto-forkserver.py: its docstring has the
 * protocol), seen as local/moto.ts sees a spawned one: a pid that signals reach, its stdout and
 * stderr, and its exit (code or signal) once the server has reaped it. The connection to the server
 * is the moto's lifeline, as a spawned launcher's stdin is: it stays open for as long as this
 * process lives, and when this process dies, even by SIGKILL, the moto exits at once.
 */
import { spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** What local/moto.ts uses of a moto process: a spawned ChildProcess or a ForkedMoto. */
export interface MotoProcess {
  readonly pid?: number | undefined;
  readonly exitCode: number | null;
  readonly signalCode: NodeJS.Signals | null;
  readonly stdout: EventEmitter | null;
  readonly stderr: EventEmitter | null;
  /** A spawned launcher's: held open, its lifeline. */
  readonly stdin?: EventEmitter | null;
  kill(signal: NodeJS.Signals): boolean;
  unref(): void;
  on(event: "exit", listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
  once(event: "exit", listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown;
}

/** The server answered, but with no moto: the caller spawns one instead. */
export class ForkRefused extends Error {}

interface Frame {
  pid?: number;
  out?: string;
  err?: string;
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  refused?: string;
}

export class ForkedMoto extends EventEmitter implements MotoProcess {
  readonly stdout = new EventEmitter();
  readonly stderr = new EventEmitter();
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  private readonly unrefSocket: () => void;

  constructor(
    readonly pid: number,
    unrefSocket: () => void,
  ) {
    super();
    this.unrefSocket = unrefSocket;
  }

  kill(signal: NodeJS.Signals): boolean {
    if (this.exitCode !== null || this.signalCode !== null) return false;
    try {
      process.kill(this.pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  unref(): void {
    this.unrefSocket();
  }

  /** Whether the process is gone (reaped by the server), though its exit may not have arrived yet. */
  gone(): boolean {
    try {
      process.kill(this.pid, 0);
      return false;
    } catch {
      return true;
    }
  }

  exited(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exitCode !== null || this.signalCode !== null) return;
    this.exitCode = code;
    this.signalCode = signal;
    this.emit("exit", code, signal);
  }
}

/**
 * Asks the fork server on `socketPath` for a launcher run with `args` (HOST PORT [DATA_DIR
 * [COMPACT_EVERY]]) in `env` and `cwd`. Rejects with ForkRefused when the server answers with no
 * moto, and with the connection's error when there is no server to answer.
 */
export function forkMoto(
  socketPath: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<ForkedMoto> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(socketPath);
    let moto: ForkedMoto | undefined;
    let pending = "";
    // What follows the pid waits until the caller, resumed by the promise, has its listeners on.
    let backlog: Frame[] | undefined = [];
    const deliver = (frame: Frame) => {
      if (moto === undefined) return;
      if (backlog !== undefined) backlog.push(frame);
      else if (frame.out !== undefined) moto.stdout.emit("data", Buffer.from(frame.out));
      else if (frame.err !== undefined) moto.stderr.emit("data", Buffer.from(frame.err));
      else if (frame.exit !== undefined) moto.exited(frame.exit.code, frame.exit.signal);
    };
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.setEncoding("utf8"); // a character split between two reads is put together
    socket.on("connect", () => {
      socket.write(`${JSON.stringify({ args, env, cwd })}\n`);
    });
    socket.on("data", (data: string) => {
      pending += data;
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        if (line === "") continue;
        let frame: Frame;
        try {
          frame = JSON.parse(line) as Frame;
        } catch {
          continue; // a line the child left half-written when it was killed
        }
        if (moto === undefined) {
          if (frame.pid !== undefined) {
            moto = new ForkedMoto(frame.pid, () => socket.unref());
            resolve(moto);
            setImmediate(() => {
              const waiting = backlog ?? [];
              backlog = undefined;
              for (const f of waiting) deliver(f);
            });
          } else {
            fail(new ForkRefused(frame.refused ?? `unexpected answer ${line}`));
            return;
          }
        } else deliver(frame);
      }
    });
    socket.on("error", (error) => {
      if (moto === undefined) fail(error);
    });
    socket.on("close", () => {
      if (moto === undefined) return reject(new ForkRefused("the fork server closed the connection"));
      // No exit reported: the server died, and its children with it (they are SIGKILLed then).
      deliver({ exit: { code: null, signal: "SIGKILL" } });
    });
  });
}

const FORK_SERVER = fileURLToPath(new URL("./moto-forkserver.py", import.meta.url));

export interface MotoForkServer {
  /** Its unix socket: the value for FLOW_MOTO_FORKSERVER. */
  socketPath: string;
  pid: number | undefined;
  /** Closes its stdin: it exits, and the motos it forked with it. */
  stop(): Promise<void>;
}

/**
 * Starts a moto fork server with `python` (which must have moto), on a socket in a directory of
 * its own; resolves once it listens. It lives until stop() or until this process ends (its stdin
 * is its lifeline).
 */
export async function startMotoForkServer(python: string, timeoutMs = 60_000): Promise<MotoForkServer> {
  const dir = mkdtempSync(join(tmpdir(), "flow-moto-fork-"));
  const socketPath = join(dir, "socket");
  const server = spawn(python, [FORK_SERVER, socketPath], {
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  });
  server.stdin.on("error", () => {});
  let errors = "";
  server.stderr.on("data", (d: Buffer) => {
    errors = (errors + d.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => server.once("exit", () => resolve()));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      server.stdout.on("data", (d: Buffer) => {
        if (d.toString().includes("ready")) {
          clearTimeout(timer);
          resolve();
        }
      });
      server.once("error", (error) => reject(error));
      void exited.then(() => reject(new Error(`it exited (code ${server.exitCode}): ${errors.trim()}`)));
    });
  } catch (error) {
    server.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`the moto fork server did not start: ${(error as Error).message}`);
  }
  return {
    socketPath,
    pid: server.pid,
    async stop() {
      if (server.exitCode === null && server.signalCode === null) {
        server.stdin.end();
        const timer = setTimeout(() => server.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
