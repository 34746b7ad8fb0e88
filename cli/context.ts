/**
 * What every flowctl command is given: the process's streams and hooks (`Io`) and, per command, the
 * connection, the output format and the terminal (`Context`). Its own module so that the program
 * and the command modules it registers all depend on it and never on each other.
 */
import type { Connection } from "./client.js";
import type { OutputFormat, Result, Writer } from "./output.js";
import type { RetryPolicy } from "./retry.js";

export interface Io {
  stdout: Writer & { isTTY?: boolean; columns?: number };
  stderr: Writer;
  env: Readonly<Record<string, string | undefined>>;
  /** Resolves on Ctrl-C; only `run watch` waits for it. */
  interrupted: Promise<void>;
  /** Retry jitter, a float in [0, 1) (default Math.random; tests pass a seeded one). */
  random?: () => number;
  /** Waits between retries (default a timer; tests record them instead). */
  sleep?: (ms: number) => Promise<void>;
  /** A fresh client request id per create (default a random UUID). */
  newRequestId?: () => string;
}

/** What an action gets: the connection (opened on first use), the output format and the terminal. */
export interface Context {
  conn(): Connection;
  format: OutputFormat;
  io: Io;
  color: boolean;
  print(result: Result): void;
  /** How calls that are safe to repeat retry RESOURCE_EXHAUSTED and UNAVAILABLE (retry.ts). */
  retryPolicy: RetryPolicy;
  newRequestId(): string;
}

export type Action<A extends unknown[]> = (ctx: Context, ...args: A) => Promise<number | undefined>;
