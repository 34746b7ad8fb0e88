/**
 * `flow-bmc-agent --config FILE`: reads and validates the config (every problem on its own line,
 * exit 2), starts the agent, and stops it cleanly on SIGTERM or SIGINT (exit 0; 1 when stopping
 * failed).
 */
import { parseArgs } from "node:util";
import { ConfigError } from "../env-reader.js";
import { startBmcAgent } from "./agent.js";
import { readAgentConfig } from "./config.js";

const USAGE = "usage: flow-bmc-agent --config FILE";

async function main(): Promise<void> {
  let file: string | undefined;
  try {
    file = parseArgs({ options: { config: { type: "string" } }, strict: true }).values.config;
  } catch (err) {
    console.error(`flow-bmc-agent: ${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  if (file === undefined) {
    console.error(`flow-bmc-agent: --config: is required\n${USAGE}`);
    process.exit(2);
  }
  let config: ReturnType<typeof readAgentConfig>;
  try {
    config = readAgentConfig(file);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    for (const problem of err.problems) console.error(`flow-bmc-agent: ${problem}`);
    process.exit(2);
  }
  const agent = await startBmcAgent(config);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.error(`flow-bmc-agent: ${signal}, stopping`);
    agent.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(`flow-bmc-agent: stopping failed: ${(err as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

await main();
