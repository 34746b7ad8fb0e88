/**
 * `npm start`: the local stack, with the options of docs/local-stack.md (flags, or the
 * environment variables beside them, read and validated once by local/config.ts), served by
 * local/process.ts: prints `listening on 127.0.0.1:<port>` when ready; stops cleanly on SIGINT or
 * SIGTERM, ending every process it started.
 */

import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { type ExternalCheckConfig, parseExternalChecks } from "../src/domain/external-check.js";
import { unreadable } from "../src/domain/input-file.js";
import {
  type InventoryDocument,
  InventoryFileError,
  parseInventoryDocument,
} from "../src/domain/inventory-document.js";
import { readLocalStackConfig } from "./config.js";
import { loadFleetFile } from "./fleet-file.js";
import { serveLocalStack } from "./process.js";

const USAGE = `usage: npm start -- [--port N] [--inventory FILE] [--fleet FILE] [--tick DURATION]
                       [--data-dir DIR] [--aws-endpoint URL] [--child-task-wait DURATION]
                       [--readiness-timeout DURATION] [--no-fleet] [--bmc KIND] [--mqtt-port P]
                       [--tls-cert FILE --tls-key FILE [--client-ca FILE]] [--authz-policy FILE]
  --port N             gRPC port on 127.0.0.1 (env FLOW_PORT, default 50051; 0 = any free port)
  --inventory FILE     rack inventory JSON (env FLOW_INVENTORY; default: a demo fleet of 120 racks)
  --fleet FILE         simulated BMC behaviour JSON (env FLOW_FLEET; default: every update succeeds)
  --no-fleet           start no simulated BMCs: BMC agents started by hand answer instead
                       (env FLOW_NO_FLEET=true; docs/agent.md)
  --bmc KIND           simulated: the simulated fleet answers (default); redfish: every component
                       is an emulated Redfish BMC and each rack has a BMC agent (env FLOW_BMC)
  --mqtt-port P        the MQTT broker's port on 127.0.0.1 (env FLOW_MQTT_PORT; default: any free port)
  --tick DURATION      dispatcher tick, e.g. 200ms, 2s, 10s (env FLOW_TICK, default 10s)
  --data-dir DIR       keep state across restarts and kills; a restart resumes every run
                       (env FLOW_DATA_DIR)
  --aws-endpoint URL   use a running AWS-compatible endpoint (env AWS_ENDPOINT_URL; default: spawn moto)
  --child-task-wait DURATION
                       how long each Wait state of the child task lasts locally
                       (env FLOW_CHILD_TASK_WAIT, default 500ms; AWS uses the state machine's own)
  --readiness-timeout DURATION
                       how long a child task waits for components that are not ready before it
                       fails the target (env FLOW_READINESS_TIMEOUT, default 10m)
  --tls-cert FILE, --tls-key FILE
                       serve gRPC over TLS with this PEM certificate and key (env FLOW_TLS_CERT,
                       FLOW_TLS_KEY; default plaintext on 127.0.0.1)
  --client-ca FILE     mutual TLS: clients must present a certificate this PEM CA signed
                       (env FLOW_TLS_CLIENT_CA)
  --authz-policy FILE  who may do what (YAML or JSON, docs/security.md; env FLOW_AUTHZ_POLICY);
                       kill -HUP reloads it. Default: none, every caller may make every call
  --external-checks FILE
                       the external health checks a rule's CHECK_HEALTH may name: JSON, by name,
                       each a "command" (argv) or an "https" endpoint, with "timeoutSeconds"
                       (docs/local-stack.md; env FLOW_EXTERNAL_CHECKS_FILE). Default: none`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: "string" },
      inventory: { type: "string" },
      fleet: { type: "string" },
      "no-fleet": { type: "boolean" },
      bmc: { type: "string" },
      "mqtt-port": { type: "string" },
      tick: { type: "string" },
      "data-dir": { type: "string" },
      "aws-endpoint": { type: "string" },
      "child-task-wait": { type: "string" },
      "readiness-timeout": { type: "string" },
      "tls-cert": { type: "string" },
      "tls-key": { type: "string" },
      "client-ca": { type: "string" },
      "authz-policy": { type: "string" },
      "external-checks": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  const { help, "no-fleet": noFleet, ...flags } = values;
  if (help) {
    console.log(USAGE);
    return;
  }
  const config = readLocalStackConfig(process.env, { ...flags, ...(noFleet ? { "no-fleet": "true" } : {}) });
  const document = config.inventoryFile ? await loadInventoryFile(config.inventoryFile) : undefined;
  await serveLocalStack({
    port: config.port,
    tickMs: config.tickMs,
    childTaskWaitMs: config.childTaskWaitMs,
    buildInfo: config.buildInfo,
    admission: config.admission,
    readinessTimeoutMs: config.readinessTimeoutMs,
    noFleet: config.noFleet === true,
    bmc: config.bmc,
    ...(config.mqttPort === undefined ? {} : { mqttPort: config.mqttPort }),
    ...(document ? { inventory: document.racks, baselines: document.baselines } : {}),
    ...(config.fleetFile ? { fleet: await loadFleetFile(config.fleetFile) } : {}),
    ...(config.dataDir ? { dataDir: config.dataDir } : {}),
    ...(config.awsEndpoint ? { awsEndpoint: config.awsEndpoint } : {}),
    ...(config.secretsKeyHex ? { secretsKey: Buffer.from(config.secretsKeyHex, "hex") } : {}),
    ...(config.tls ? { tls: config.tls } : {}),
    ...(config.authzPolicyFile ? { authzPolicyFile: config.authzPolicyFile } : {}),
    ...(config.externalChecksFile
      ? { externalChecks: await loadExternalChecks(config.externalChecksFile) }
      : {}),
  });
}

/** The checks file, every problem at once; a Lambda check needs AWS. */
async function loadExternalChecks(path: string): Promise<ExternalCheckConfig[]> {
  const text = await readFile(path, "utf8");
  const parsed = parseExternalChecks(text, true);
  if ("problem" in parsed) throw new Error(`--external-checks ${path}: ${parsed.problem}`);
  const lambdas = parsed.value.filter((c) => c.target.kind === "lambda").map((c) => c.name);
  if (lambdas.length > 0)
    throw new Error(`--external-checks ${path}: ${lambdas.join(", ")}: a Lambda check runs only in AWS`);
  return parsed.value;
}

async function loadInventoryFile(path: string): Promise<InventoryDocument> {
  const text = await readFile(path, "utf8").catch((error: unknown) => {
    throw new InventoryFileError(path, [unreadable(error)]);
  });
  return parseInventoryDocument(text, path);
}

main().catch((error: unknown) => {
  console.error(`flow local stack: ${(error as Error).message}`);
  console.error(USAGE);
  process.exit(1);
});
