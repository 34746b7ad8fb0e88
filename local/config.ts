/**
 * The local stack's configuration (`npm start`, local/main.ts): every option of
 * docs/local-stack.md as a flag or the environment variable beside it, the flag winning,
 * read once and validated with the deployables' rules (src/service/env-reader.ts). A problem names
 * the flag when the value came from it and the variable otherwise, and every problem is reported
 * at once:
 *
 *   --port abc, FLOW_TICK=10 →
 *   --port: must be an integer from 0 to 65535 (got "abc"); FLOW_TICK: "10" is not a duration: …
 *
 * `LOCAL_ENV` lists every variable the local stack reads; the ones it shares with the deployables
 * are taken from their list (src/service/config.ts ENV), so the two cannot drift.
 */
import type { AdmissionLimits } from "../src/adapters/grpc/admission.js";
import type { BuildInfo } from "../src/app/api.js";
import { ENV } from "../src/service/config.js";
import { admissionLimits, admissionSettings } from "../src/service/config-front.js";
import {
  boolean,
  configReader,
  hexKey,
  httpUrl,
  matching,
  optional,
  port,
  type Rule,
  text,
  withDefault,
  withFlag,
} from "../src/service/env-reader.js";
import { checkDuration } from "./duration-flag.js";

export const LOCAL_ENV = {
  port: ENV.port,
  inventory: "FLOW_INVENTORY",
  fleet: "FLOW_FLEET",
  /** `true`: no simulated BMCs (agents started by hand serve the broker's BMC topics). */
  noFleet: "FLOW_NO_FLEET",
  /** What answers on the BMC topics: `simulated` (default) or `redfish` (emulated BMCs + agents). */
  bmc: "FLOW_BMC",
  /** The local MQTT broker's port on 127.0.0.1 (default: any free one). */
  mqttPort: "FLOW_MQTT_PORT",
  tick: "FLOW_TICK",
  dataDir: "FLOW_DATA_DIR",
  awsEndpoint: ENV.awsEndpoint,
  childTaskWait: "FLOW_CHILD_TASK_WAIT",
  /** How long a child task's preflight waits for components that are not ready. */
  readinessTimeout: "FLOW_READINESS_TIMEOUT",
  /** The AES key of firmware credentials; absent: the data dir's `secrets.key`, else a fresh one. */
  secretsKeyHex: ENV.localSecretsKeyHex,
  version: ENV.version,
  gitCommit: ENV.gitCommit,
  maxInFlightCalls: ENV.maxInFlightCalls,
  maxConcurrentCreates: ENV.maxConcurrentCreates,
  tlsCert: ENV.tlsCert,
  tlsKey: ENV.tlsKey,
  clientCa: ENV.tlsClientCa,
  authzPolicy: ENV.authzPolicy,
  /** A JSON file of the external health checks a rule may name (src/domain/external-check.ts). */
  externalChecks: "FLOW_EXTERNAL_CHECKS_FILE",
} as const;

/**
 * Lower than the front's (64 calls, 8 creates): the local store is one moto process serving one
 * request at a time, some 15 to 150 a second depending on the machine. By Little's law 64 calls in
 * flight there wait seconds each, and on a busy 2-core machine some outlived a 10 s deadline in the
 * load benchmark; 16 keep the wait near a second and refuse the rest at once (RESOURCE_EXHAUSTED).
 */
export const LOCAL_ADMISSION_LIMITS = { maxInFlightCalls: 16, maxConcurrentCreates: 4 } as const;

export interface LocalStackConfig {
  port: number;
  inventoryFile?: string;
  fleetFile?: string;
  noFleet?: boolean;
  bmc: BmcKind;
  mqttPort?: number;
  tickMs: number;
  dataDir?: string;
  /** An AWS-compatible endpoint already running; absent: spawn moto. */
  awsEndpoint?: string;
  childTaskWaitMs: number;
  readinessTimeoutMs: number;
  secretsKeyHex?: string;
  buildInfo: BuildInfo;
  /** The gRPC server's admission limits (FLOW_MAX_IN_FLIGHT_CALLS, FLOW_MAX_CONCURRENT_CREATES). */
  admission: AdmissionLimits;
  /** TLS on the gRPC server (--tls-cert/--tls-key); with a client CA (--client-ca), mutual TLS. */
  tls?: { certFile: string; keyFile: string; clientCaFile?: string };
  /** The access policy file (--authz-policy); absent: the stack runs open. */
  authzPolicyFile?: string;
  /** The external health checks file (--external-checks); absent: none. */
  externalChecksFile?: string;
}

type BmcKind = "simulated" | "redfish";
const bmcKind = matching(/^(simulated|redfish)$/, '"simulated" or "redfish"') as Rule<BmcKind>;

export const readLocalStackConfig = configReader(
  {
    port: withFlag("port", withDefault(LOCAL_ENV.port, port, 50_051)),
    inventoryFile: withFlag("inventory", optional(LOCAL_ENV.inventory, text)),
    fleetFile: withFlag("fleet", optional(LOCAL_ENV.fleet, text)),
    noFleet: withFlag("no-fleet", optional(LOCAL_ENV.noFleet, boolean)),
    bmc: withFlag("bmc", withDefault<BmcKind>(LOCAL_ENV.bmc, bmcKind, "simulated")),
    mqttPort: withFlag("mqtt-port", optional(LOCAL_ENV.mqttPort, port)),
    tickMs: withFlag("tick", withDefault(LOCAL_ENV.tick, checkDuration, 10_000)),
    dataDir: withFlag("data-dir", optional(LOCAL_ENV.dataDir, text)),
    awsEndpoint: withFlag("aws-endpoint", optional(LOCAL_ENV.awsEndpoint, httpUrl)),
    childTaskWaitMs: withFlag("child-task-wait", withDefault(LOCAL_ENV.childTaskWait, checkDuration, 500)),
    readinessTimeoutMs: withFlag(
      "readiness-timeout",
      withDefault(LOCAL_ENV.readinessTimeout, checkDuration, 600_000),
    ),
    secretsKeyHex: optional(LOCAL_ENV.secretsKeyHex, hexKey(32)),
    version: withDefault(LOCAL_ENV.version, text, "0.1.0-local"),
    gitCommit: withDefault(LOCAL_ENV.gitCommit, text, ""),
    ...admissionSettings(LOCAL_ADMISSION_LIMITS),
    tlsCert: withFlag("tls-cert", optional(LOCAL_ENV.tlsCert, text)),
    tlsKey: withFlag("tls-key", optional(LOCAL_ENV.tlsKey, text)),
    clientCa: withFlag("client-ca", optional(LOCAL_ENV.clientCa, text)),
    authzPolicyFile: withFlag("authz-policy", optional(LOCAL_ENV.authzPolicy, text)),
    externalChecksFile: withFlag("external-checks", optional(LOCAL_ENV.externalChecks, text)),
  },
  (
    { version, gitCommit, maxInFlightCalls, maxConcurrentCreates, tlsCert, tlsKey, clientCa, ...options },
    report,
  ): LocalStackConfig => {
    if (options.noFleet === true && options.fleetFile !== undefined) {
      report("--no-fleet", "starts no simulated BMCs, so a fleet file has nothing to configure");
    }
    if (options.bmc === "redfish" && options.noFleet === true) {
      report("--bmc redfish", "starts BMCs and agents of its own, which --no-fleet leaves to others");
    }
    if (options.bmc === "redfish" && options.fleetFile !== undefined) {
      report("--bmc redfish", "the fleet file configures the simulated BMCs, which Redfish BMCs replace");
    }
    // A certificate without its key (or the reverse) must not fall back to plaintext.
    const [cert, key, ca] = [
      `--tls-cert (${ENV.tlsCert})`,
      `--tls-key (${ENV.tlsKey})`,
      `--client-ca (${ENV.tlsClientCa})`,
    ];
    if (tlsCert !== undefined && tlsKey === undefined) report(key, `is required with ${cert}`);
    if (tlsKey !== undefined && tlsCert === undefined) report(cert, `is required with ${key}`);
    if (clientCa !== undefined && (tlsCert === undefined || tlsKey === undefined)) {
      report(ca, `needs ${cert} and ${key} (mutual TLS is TLS first)`);
    }
    const tls =
      tlsCert === undefined || tlsKey === undefined
        ? undefined
        : {
            certFile: tlsCert,
            keyFile: tlsKey,
            ...(clientCa === undefined ? {} : { clientCaFile: clientCa }),
          };
    return {
      ...options,
      buildInfo: { version, gitCommit, buildTime: "" },
      admission: admissionLimits({ maxInFlightCalls, maxConcurrentCreates }, report),
      ...(tls === undefined ? {} : { tls }),
    };
  },
);
