/**
 * The local stack as a process, once its options are read: what `npm start` (local/main.ts) runs,
 * and the restart tests' child process too (test/support/stack-process.ts), so both stop the same
 * way. Prints `flow local stack: listening on 127.0.0.1:<port> (…)` when ready; SIGINT or SIGTERM
 * stops it cleanly with every process it started (exit 0, or 1 when the stop failed); SIGHUP
 * reloads the access policy file (when it runs with one); when the
 * stack ends itself (its moto died with no data directory to restart it from) it exits 1.
 */
import { type LocalStackOptions, startLocalStack } from "./stack.js";

export async function serveLocalStack(options: Omit<LocalStackOptions, "onFatal">): Promise<void> {
  let stopping = false;
  const stack = await startLocalStack({
    ...options,
    // The stack already said why in one line, and stopped.
    onFatal: () => process.exit(1),
  });
  console.log(`flow local stack: listening on 127.0.0.1:${stack.port} (DynamoDB at ${stack.awsEndpoint})`);
  if (options.noFleet || options.bmc === "redfish" || options.mqttPort !== undefined) {
    const bmcs =
      stack.redfish !== undefined
        ? "emulated Redfish BMCs, one flow-bmc-agent per rack"
        : stack.fleet === undefined
          ? "no simulated BMCs: start flow-bmc-agent for them"
          : "simulated BMCs";
    console.log(`flow local stack: MQTT broker at ${stack.mqttUrl ?? "(external)"} (${bmcs})`);
  }
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`flow local stack: ${signal}, stopping`);
    stack.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(`flow local stack: shutdown failed: ${(error as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
  // Reads the access policy file again: a good one is in force for the next call, a bad one is
  // refused in one line and the previous one stays.
  process.on("SIGHUP", () => stack.accessPolicy?.reload());
}
