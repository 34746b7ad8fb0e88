/**
 * The local stack's configuration reader (local/config.ts): the flag wins over its variable, a
 * problem names the flag or the variable it came from, every problem at once, the documented
 * defaults, and every FLOW_* variable the local stack reads, each documented in docs/local-stack.md.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LOCAL_ENV, readLocalStackConfig } from "../../local/config.js";
import { ConfigError } from "../../src/service/env-reader.js";

type Source = Record<string, string | undefined>;
/** Flags first, as on the command line: `npm start -- --port 0` beside `FLOW_PORT=…`. */
const read = (flags: Source, env: Source) => readLocalStackConfig(env, flags);

function problems(read: () => unknown): readonly string[] {
  try {
    read();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error("the reading succeeded");
}

const NOT_A_DURATION = "is not a duration: write a number and a unit (ms, s, m, h), e.g. 200ms, 2s, 10s, 1m";

describe("local config: defaults (docs/local-stack.md)", () => {
  it("nothing given: port 50051, tick 10s, child-task wait 500ms, readiness timeout 10m, version 0.1.0-local, spawn moto", () => {
    expect(read({}, {})).toEqual({
      port: 50_051,
      bmc: "simulated",
      tickMs: 10_000,
      childTaskWaitMs: 500,
      readinessTimeoutMs: 600_000,
      buildInfo: { version: "0.1.0-local", gitCommit: "", buildTime: "" },
      admission: { maxInFlightCalls: 16, maxConcurrentCreates: 4 },
    });
  });
});

describe("local config: flags and variables", () => {
  const env = {
    FLOW_PORT: "6000",
    FLOW_INVENTORY: "env-inventory.json",
    FLOW_FLEET: "env-fleet.json",
    FLOW_TICK: "2s",
    FLOW_DATA_DIR: "/var/env",
    AWS_ENDPOINT_URL: "http://127.0.0.1:4566",
    FLOW_CHILD_TASK_WAIT: "1s",
    FLOW_READINESS_TIMEOUT: "30s",
    FLOW_LOCAL_SECRETS_KEY: "ab".repeat(32),
    FLOW_VERSION: "1.2.3",
    FLOW_MAX_IN_FLIGHT_CALLS: "32",
    FLOW_MAX_CONCURRENT_CREATES: "4",
    FLOW_GIT_COMMIT: "abc1234",
  };

  it("every variable is read", () => {
    expect(read({}, env)).toEqual({
      port: 6000,
      inventoryFile: "env-inventory.json",
      fleetFile: "env-fleet.json",
      bmc: "simulated",
      tickMs: 2000,
      dataDir: "/var/env",
      awsEndpoint: "http://127.0.0.1:4566",
      childTaskWaitMs: 1000,
      readinessTimeoutMs: 30_000,
      secretsKeyHex: "ab".repeat(32),
      buildInfo: { version: "1.2.3", gitCommit: "abc1234", buildTime: "" },
      admission: { maxInFlightCalls: 32, maxConcurrentCreates: 4 },
    });
  });

  it("a flag wins over its variable", () => {
    const flags = {
      port: "0",
      inventory: "flag-inventory.json",
      fleet: "flag-fleet.json",
      tick: "200ms",
      "data-dir": "/var/flag",
      "aws-endpoint": "http://127.0.0.1:5000",
      "child-task-wait": "100ms",
    };
    expect(read(flags, env)).toMatchObject({
      port: 0,
      inventoryFile: "flag-inventory.json",
      fleetFile: "flag-fleet.json",
      tickMs: 200,
      dataDir: "/var/flag",
      awsEndpoint: "http://127.0.0.1:5000",
      childTaskWaitMs: 100,
    });
  });

  it("a problem names the flag when the value came from it, the variable otherwise", () => {
    expect(problems(() => read({ port: "abc" }, {}))).toEqual([
      '--port: must be an integer from 0 to 65535 (got "abc")',
    ]);
    expect(problems(() => read({}, { FLOW_PORT: "abc" }))).toEqual([
      'FLOW_PORT: must be an integer from 0 to 65535 (got "abc")',
    ]);
    expect(problems(() => read({ tick: "10" }, {}))).toEqual([`--tick: "10" ${NOT_A_DURATION}`]);
    expect(problems(() => read({}, { FLOW_TICK: "10" }))).toEqual([`FLOW_TICK: "10" ${NOT_A_DURATION}`]);
    expect(problems(() => read({ "child-task-wait": "0s" }, {}))).toEqual([
      '--child-task-wait: "0s" must be greater than zero',
    ]);
    expect(problems(() => read({}, { FLOW_CHILD_TASK_WAIT: "1.5ms" }))).toEqual([
      'FLOW_CHILD_TASK_WAIT: "1.5ms" is not a whole number of milliseconds',
    ]);
    expect(problems(() => read({ "aws-endpoint": "localhost:4566" }, {}))).toEqual([
      '--aws-endpoint: must be an http:// or https:// URL (got "localhost:4566")',
    ]);
    expect(problems(() => read({}, { FLOW_LOCAL_SECRETS_KEY: "secret" }))).toEqual([
      "FLOW_LOCAL_SECRETS_KEY: must be 64 hexadecimal digits",
    ]);
  });

  it("a valid flag hides an invalid variable (the variable is not read)", () => {
    expect(read({ port: "7000" }, { FLOW_PORT: "abc" }).port).toBe(7000);
  });

  it("a flag given empty is refused; a variable set empty is unset", () => {
    expect(problems(() => read({ port: "", inventory: "", "data-dir": "" }, {}))).toEqual([
      '--port: must be an integer from 0 to 65535 (got "")',
      "--inventory: must not be empty",
      "--data-dir: must not be empty",
    ]);
    expect(read({}, { FLOW_PORT: "", FLOW_INVENTORY: "", FLOW_TICK: " " })).toMatchObject({
      port: 50_051,
      tickMs: 10_000,
    });
    expect(read({}, { FLOW_INVENTORY: "" }).inventoryFile).toBeUndefined();
  });

  it("every problem at once, joined with '; '", () => {
    let error: unknown;
    try {
      read({ port: "abc", tick: "10" }, { FLOW_CHILD_TASK_WAIT: "-1s", AWS_ENDPOINT_URL: "moto" });
    } catch (caught) {
      error = caught;
    }
    expect((error as Error).message).toBe(
      [
        '--port: must be an integer from 0 to 65535 (got "abc")',
        `--tick: "10" ${NOT_A_DURATION}`,
        'AWS_ENDPOINT_URL: must be an http:// or https:// URL (got "moto")',
        `FLOW_CHILD_TASK_WAIT: "-1s" ${NOT_A_DURATION}`,
      ].join("; "),
    );
  });

  it("the configuration is frozen", () => {
    const config = read({}, {});
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.buildInfo)).toBe(true);
  });

  it("reads every variable of LOCAL_ENV, and only those", () => {
    expect([...readLocalStackConfig.names].sort()).toEqual(Object.values(LOCAL_ENV).sort());
    expect(readLocalStackConfig.required).toEqual([]);
  });

  it("docs/local-stack.md, the local stack's public interface, names every variable it reads", () => {
    const doc = readFileSync(fileURLToPath(new URL("../../docs/local-stack.md", import.meta.url)), "utf8");
    expect(readLocalStackConfig.names.filter((name) => !doc.includes(`\`${name}\``))).toEqual([]);
  });

  it("--no-fleet and --mqtt-port (for BMC agents started by hand); a fleet file beside --no-fleet is refused", () => {
    expect(read({ "no-fleet": "true", "mqtt-port": "1883" }, {})).toMatchObject({
      noFleet: true,
      mqttPort: 1883,
    });
    expect(read({}, { FLOW_NO_FLEET: "true", FLOW_MQTT_PORT: "0" })).toMatchObject({
      noFleet: true,
      mqttPort: 0,
    });
    expect(problems(() => read({ "no-fleet": "true", fleet: "f.json", "mqtt-port": "x" }, {}))).toEqual([
      '--mqtt-port: must be an integer from 0 to 65535 (got "x")',
      "--no-fleet: starts no simulated BMCs, so a fleet file has nothing to configure",
    ]);
    expect(problems(() => read({}, { FLOW_NO_FLEET: "yes" }))).toEqual([
      'FLOW_NO_FLEET: must be "true" or "false" (got "yes")',
    ]);
  });
  it("--bmc simulated (the default) or redfish; redfish beside --no-fleet or a fleet file is refused", () => {
    expect(read({}, {})).toMatchObject({ bmc: "simulated" });
    expect(read({ bmc: "redfish" }, {})).toMatchObject({ bmc: "redfish" });
    expect(read({}, { FLOW_BMC: "redfish" })).toMatchObject({ bmc: "redfish" });
    expect(problems(() => read({ bmc: "ipmi" }, {}))).toEqual([
      '--bmc: must be "simulated" or "redfish" (got "ipmi")',
    ]);
    expect(problems(() => read({ bmc: "redfish", "no-fleet": "true", fleet: "f.json" }, {}))).toEqual([
      "--no-fleet: starts no simulated BMCs, so a fleet file has nothing to configure",
      "--bmc redfish: starts BMCs and agents of its own, which --no-fleet leaves to others",
      "--bmc redfish: the fleet file configures the simulated BMCs, which Redfish BMCs replace",
    ]);
  });
});

describe("local config: TLS and the access policy", () => {
  it("--tls-cert, --tls-key, --client-ca and --authz-policy, or the variables beside them", () => {
    expect(
      read({ "tls-cert": "s.crt", "tls-key": "s.key", "client-ca": "ca.crt", "authz-policy": "p.yaml" }, {}),
    ).toMatchObject({
      tls: { certFile: "s.crt", keyFile: "s.key", clientCaFile: "ca.crt" },
      authzPolicyFile: "p.yaml",
    });
    expect(
      read({}, { FLOW_TLS_CERT: "e.crt", FLOW_TLS_KEY: "e.key", FLOW_AUTHZ_POLICY: "e.yaml" }),
    ).toMatchObject({ tls: { certFile: "e.crt", keyFile: "e.key" }, authzPolicyFile: "e.yaml" });
    expect(read({}, {})).not.toHaveProperty("tls");
  });

  it("a certificate without its key, a key without its certificate, a client CA without TLS: each named", () => {
    expect(problems(() => read({ "tls-cert": "s.crt" }, {}))).toEqual([
      "--tls-key (FLOW_TLS_KEY): is required with --tls-cert (FLOW_TLS_CERT)",
    ]);
    expect(problems(() => read({ "tls-key": "s.key", "client-ca": "ca.crt" }, {}))).toEqual([
      "--tls-cert (FLOW_TLS_CERT): is required with --tls-key (FLOW_TLS_KEY)",
      "--client-ca (FLOW_TLS_CLIENT_CA): needs --tls-cert (FLOW_TLS_CERT) and --tls-key (FLOW_TLS_KEY) (mutual TLS is TLS first)",
    ]);
  });
});
