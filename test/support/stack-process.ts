/**
 * The local stack as a child process, for the tests that kill it (test/support/restart-lives.ts):
 * served by local/process.ts exactly as `npm start` is, on the options of local/config.ts
 * (FLOW_DATA_DIR, FLOW_INVENTORY, FLOW_TICK, FLOW_CHILD_TASK_WAIT, …), plus what only tests need:
 *
 *   FLOW_TEST_BMC_BROKER  the MQTT broker of the BMCs, which live in the test process (so a kill
 *                         here does not reset them, and the test counts their flashes across lives)
 *   FLOW_TEST_LEASE_MS    the dispatcher's claim lease
 *   FLOW_TEST_KILL        `<write>:<n>:<signal>`: right after the store acknowledged the n-th such
 *                         write in this life, the process sends itself the signal. Writes:
 *                         claim (a target → CLAIMED), submitted (CLAIMED → SUBMITTED),
 *                         outcome (a target → COMPLETED).
 */
import { readFile } from "node:fs/promises";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { readLocalStackConfig } from "../../local/config.js";
import { serveLocalStack } from "../../local/process.js";
import { parseInventory } from "../../src/domain/inventory-document.js";

/** How each write kind shows in a DynamoDB request (the run store's update expressions). */
const WRITES: Record<string, (input: string) => boolean> = {
  claim: (input) => input.includes("SET #s = :claimed"),
  submitted: (input) => input.includes("SET #s = :submitted"),
  // Marshalled or not, depending on where the document client's middleware sits.
  outcome: (input) => input.includes("SET #s = :status") && /":status":(\{"S":)?"COMPLETED"/.test(input),
};

function killSwitch(spec: string | undefined): ((client: DynamoDBClient) => void) | undefined {
  if (spec === undefined || spec === "") return undefined;
  const [write, count, signal] = spec.split(":");
  const matches = WRITES[write ?? ""];
  if (matches === undefined || signal === undefined) throw new Error(`FLOW_TEST_KILL: cannot read ${spec}`);
  let seen = 0;
  return (client) => {
    client.middlewareStack.add(
      (next) => async (args) => {
        const result = await next(args);
        if (matches(JSON.stringify(args.input)) && ++seen === Number(count)) {
          console.log(`flow local stack: test kill switch: ${signal} after ${write} #${seen}`);
          process.kill(process.pid, signal as NodeJS.Signals);
        }
        return result;
      },
      { step: "initialize", name: "restartTestKillSwitch" },
    );
  };
}

const config = readLocalStackConfig(process.env, {});
const onDynamoDbClient = killSwitch(process.env.FLOW_TEST_KILL);
await serveLocalStack({
  port: config.port,
  tickMs: config.tickMs,
  childTaskWaitMs: config.childTaskWaitMs,
  buildInfo: config.buildInfo,
  ...(config.inventoryFile
    ? { inventory: parseInventory(await readFile(config.inventoryFile, "utf8"), config.inventoryFile) }
    : {}),
  ...(config.dataDir ? { dataDir: config.dataDir } : {}),
  ...(process.env.FLOW_TEST_BMC_BROKER ? { bmcBroker: process.env.FLOW_TEST_BMC_BROKER } : {}),
  ...(process.env.FLOW_TEST_LEASE_MS ? { claimLeaseMs: Number(process.env.FLOW_TEST_LEASE_MS) } : {}),
  ...(onDynamoDbClient ? { onDynamoDbClient } : {}),
  log: (line) => console.log(line),
});
