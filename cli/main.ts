/**
 * flowctl's entry: `node --import tsx cli/main.ts …`, or through the `flowctl` bin shim.
 * Exits with runCli's code (the table is in errors.ts and docs/cli.md).
 */
import { runCli } from "./program.js";

// grpc-js warns (DEP0123) when TLS meets an IP address endpoint; operators cannot act on it.
process.noDeprecation = true;

// `flowctl run list | head`: a reader that went away is not an error worth a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  });
}

let onInterrupt: () => void = () => {};
const interrupted = new Promise<void>((resolve) => {
  onInterrupt = resolve;
});
process.once("SIGINT", () => {
  onInterrupt();
  // A second Ctrl-C, or one outside `run watch`, ends at once.
  process.once("SIGINT", () => process.exit(130));
  setTimeout(() => process.exit(130), 2000).unref();
});

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  interrupted,
});
// Let buffered output drain to a pipe before the exit code is reported.
process.exitCode = code;
