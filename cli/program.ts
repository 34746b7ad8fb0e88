/**
 * flowctl: the operator's command line for Flow operation runs. Every command talks to the service
 * over gRPC with the generated client; docs/cli.md is the manual.
 *
 * `runCli(argv, io)` parses, runs and returns the exit code (see errors.ts for the table); it never
 * calls process.exit, so it can be driven from tests and from the bin shim alike.
 */
import { randomUUID } from "node:crypto";
import { userInfo } from "node:os";
import { Command, CommanderError, Option } from "commander";
import * as pb from "../src/gen/flow/v1/flow.js";
import { registerAgentCommands } from "./agent-commands.js";
import { actorHeaderValue, type Connection, connect, type TlsOptions } from "./client.js";
import type { Action, Context, Io } from "./context.js";
import { parseDurationNs } from "./durations.js";
import {
  describeServiceError,
  EXIT,
  ExitWith,
  exitCodeForStatus,
  isServiceError,
  UsageError,
} from "./errors.js";
import { registerFirmwareCommands } from "./firmware.js";
import { registerInventoryCommands } from "./inventory-commands.js";
import { OUTPUT_FORMATS, type OutputFormat, render, terminalSafe } from "./output.js";
import { registerPolicyCommands, whoAmITable } from "./policy.js";
import { DEFAULT_RETRY } from "./retry.js";
import { registerRunCommands } from "./run-commands.js";
import { RunFileError } from "./run-file/load.js";
import { registerTaskCommands } from "./task-commands.js";

export const DEFAULT_ENDPOINT = "127.0.0.1:50051";

interface GlobalOptions {
  endpoint: string;
  tls?: boolean;
  ca?: string;
  cert?: string;
  key?: string;
  output: string;
  timeout: string;
  color: boolean;
}

export async function runCli(argv: readonly string[], io: Io): Promise<number> {
  let endpoint = io.env.FLOW_ENDPOINT || DEFAULT_ENDPOINT;
  let usesTls = false;
  let connection: Connection | undefined;
  let exitCode: number = EXIT.OK;

  const program = new Command("flowctl")
    .description("Drive Flow operation runs: staged, gated firmware rollouts over GPU rack fleets.")
    .addOption(
      new Option("--endpoint <host:port>", "Flow gRPC service address (env FLOW_ENDPOINT)").default(
        io.env.FLOW_ENDPOINT || DEFAULT_ENDPOINT,
      ),
    )
    .option("--tls", "connect with TLS, verifying the server against the system's roots (or --ca)")
    .option("--ca <file>", "PEM CA bundle that signed the server certificate (implies --tls)")
    .option("--cert <file>", "PEM client certificate chain, for mutual TLS (implies --tls; needs --key)")
    .option("--key <file>", "PEM client private key, for mutual TLS (implies --tls; needs --cert)")
    .addOption(
      new Option("-o, --output <format>", "output format").choices([...OUTPUT_FORMATS]).default("table"),
    )
    .option("--timeout <duration>", "deadline of each call to the service", "30s")
    .option("--no-color", "no ANSI colours (also when NO_COLOR is set)")
    .showHelpAfterError("(add --help for usage)")
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
    })
    .addHelpText(
      "after",
      `
Exit codes: 0 ok · 1 usage or invalid file · 2 watched run ended FAILED/COMPLETED_WITH_FAILURES/CANCELLED
            3 watched run paused · 10+N the service answered gRPC status N (13 INVALID_ARGUMENT,
            15 NOT_FOUND, 19 FAILED_PRECONDITION, 23 INTERNAL, 24 UNAVAILABLE) · 130 interrupted
Docs: docs/cli.md`,
    );

  /** Wraps an action: global options → context, the result printed, the connection closed. */
  const act =
    <A extends unknown[]>(fn: Action<A>) =>
    async (...args: unknown[]) => {
      const cmd = args[args.length - 1] as Command;
      const g = cmd.optsWithGlobals<GlobalOptions>();
      endpoint = checkEndpoint(g.endpoint);
      const timeoutNs = parseDurationNs(g.timeout);
      if (timeoutNs === undefined || timeoutNs <= 0n) {
        throw new UsageError(
          `--timeout: expected a duration such as 30s or 2m (got ${JSON.stringify(g.timeout)})`,
        );
      }
      const tls: TlsOptions | undefined =
        g.tls === true || g.ca !== undefined || g.cert !== undefined || g.key !== undefined
          ? { ca: g.ca, cert: g.cert, key: g.key }
          : undefined;
      usesTls = tls !== undefined;
      const format = g.output as OutputFormat;
      const ctx: Context = {
        conn() {
          connection ??= connect({
            endpoint,
            tls,
            timeoutMs: Number(timeoutNs / 1_000_000n),
            ...withActor(actorHeaderValue(osUser(io.env))),
          });
          return connection;
        },
        format,
        io,
        color: g.color && io.env.NO_COLOR === undefined,
        print(result) {
          io.stdout.write(render(result, format));
        },
        retryPolicy: {
          ...DEFAULT_RETRY,
          random: io.random ?? Math.random,
          sleep: io.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
          onRetry: ({ attempt, attempts, delayMs, status }) =>
            io.stderr.write(
              `flowctl: the service answered ${status}; retrying in ${(delayMs / 1000).toFixed(1)} s (attempt ${attempt + 1} of ${attempts})\n`,
            ),
        },
        newRequestId: io.newRequestId ?? randomUUID,
      };
      // Commander passes (args..., options, command): the action takes the positional arguments and
      // the command's own options.
      const code = await fn(ctx, ...(args.slice(0, -1) as A));
      exitCode = code ?? EXIT.OK;
    };

  registerRunCommands(program, act);
  registerTaskCommands(program, act);
  registerInventoryCommands(program, act);
  registerPolicyCommands(program, act);
  registerFirmwareCommands(program, act);
  registerAgentCommands(program, act);
  program
    .command("version")
    .description("print the service's build information (a quick connectivity check)")
    .action(
      act(async (ctx) => {
        const info = await ctx.conn().flow.version({});
        ctx.print({
          data: info,
          table: () =>
            `service ${ctx.conn().endpoint}: version ${info.version || "?"}, commit ${info.gitCommit || "?"}, built ${info.buildTime || "?"}`,
        });
        return EXIT.OK;
      }),
    );

  program
    .command("whoami")
    .description("print who the service sees: the identity, how it was verified, its roles and rack scopes")
    .action(
      act(async (ctx) => {
        const me = await ctx.conn().flow.whoAmI({});
        ctx.print({ data: pb.WhoAmIResponse.toJSON(me), table: () => whoAmITable(me) });
        return EXIT.OK;
      }),
    );

  try {
    await program.parseAsync([...argv], { from: "user" });
    return exitCode;
  } catch (err) {
    return report(err, io, endpoint, usesTls);
  } finally {
    connection?.close();
  }
}

function report(err: unknown, io: Io, endpoint: string, tls: boolean): number {
  if (err instanceof CommanderError) {
    // Commander has printed the message (or the help) already.
    return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
  }
  if (err instanceof ExitWith) return err.exitCode;
  if (err instanceof RunFileError) {
    io.stderr.write(`error: ${err.file} is not a valid run file:\n${err.message}\n`);
    return EXIT.USAGE;
  }
  if (err instanceof UsageError || (err instanceof Error && err.name === "InventoryFileError")) {
    io.stderr.write(`error: ${err.message}\n`);
    return EXIT.USAGE;
  }
  if (isServiceError(err)) {
    const method = (err as { rpc?: string }).rpc;
    const lines = describeServiceError(err, { endpoint, method, tls });
    const outcomeHint = (err as { outcomeHint?: string }).outcomeHint;
    if (outcomeHint !== undefined) lines.push(`  ${outcomeHint}`);
    // The details are the service's text.
    io.stderr.write(`${terminalSafe(lines.join("\n"), "keep-newlines")}\n`);
    return exitCodeForStatus(err.code);
  }
  io.stderr.write(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  return EXIT.GRPC_BASE + 2; // as gRPC UNKNOWN: something failed that flowctl did not expect
}

/**
 * Who runs flowctl, as the OS knows it (the run history records it, unauthenticated); the
 * environment's USER / USERNAME / LOGNAME where the OS cannot say (a container without a passwd
 * entry for its uid).
 */
function osUser(env: Io["env"]): string | undefined {
  try {
    return userInfo().username;
  } catch {
    return env.USER ?? env.USERNAME ?? env.LOGNAME;
  }
}

const withActor = (actor: string | undefined) => (actor === undefined ? {} : { actor });

/** `host:port`, `[::1]:50051`; a scheme is tolerated (`grpc://`, `dns:///`) only if grpc-js knows it. */
function checkEndpoint(endpoint: string): string {
  const e = endpoint.trim();
  if (/^(dns:|unix:|ipv4:|ipv6:)/.test(e)) return e;
  if (!/^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]]+):\d{1,5}$/.test(e)) {
    throw new UsageError(
      `--endpoint: expected HOST:PORT, e.g. ${DEFAULT_ENDPOINT} (got ${JSON.stringify(endpoint)})`,
    );
  }
  return e;
}
