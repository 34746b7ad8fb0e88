/**
 * The BMC agent's configuration (src/service/bmc-agent/config.ts): defaults, paths relative to the
 * config file, secrets kept out of the value's JSON and out of every problem, warnings for inline
 * passwords and insecure TLS, and the rules a bad file breaks, all reported at once.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  DEFAULT_REPORT_FLUSH_MS,
  DEFAULT_TIMINGS,
  parseAgentConfig,
} from "../../src/service/bmc-agent/config.js";
import { ConfigError } from "../../src/service/env-reader.js";

const dir = mkdtempSync(join(tmpdir(), "agent-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(join(dir, "bmc.pw"), "from-a-file\n");

const C1 = "7e000000-0000-4000-8000-000000000001";
const RACK = "7e000000-0000-4000-8000-0000000000a1";
const NO_RACK =
  "no rackId: listening on each BMC's per-component topic (protocol v1-v3), which the product publishes on only when its deployment keeps the legacy topics; set rackId";
const parse = (doc: unknown, env: Record<string, string> = {}) =>
  parseAgentConfig(doc, { baseDir: dir, env });
const problems = (doc: unknown, env: Record<string, string> = {}): readonly string[] => {
  try {
    parse(doc, env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

describe("bmc agent config: the issue's minimal form", () => {
  it("defaults: state beside the config, cache under it, image server on loopback, Immediate, no Basic, the default timings", () => {
    const config = parse({
      mqtt: { url: "mqtt://127.0.0.1:1883" },
      bmcs: [
        {
          componentId: C1.toUpperCase(),
          url: "https://10.0.3.17/",
          username: "flow",
          passwordFile: "bmc.pw",
        },
      ],
    });
    expect(config).toMatchObject({
      mqtt: { url: "mqtt://127.0.0.1:1883" },
      stateDir: join(dir, ".flow-bmc-agent"),
      cacheDir: join(dir, ".flow-bmc-agent", "images"),
      imageServer: { host: "127.0.0.1", port: 0 },
      timings: DEFAULT_TIMINGS,
      requestTimeoutMs: 120_000,
      shutdownGraceMs: 10_000,
      warnings: [NO_RACK],
    });
    expect(config.rackId).toBeUndefined();
    const [bmc] = config.bmcs;
    expect(bmc).toMatchObject({
      componentId: C1,
      url: "https://10.0.3.17",
      username: "flow",
      tls: {},
      allowBasicAuth: false,
      subTargets: {},
      applyTime: "Immediate",
    });
    expect(bmc!.password()).toBe("from-a-file");
    expect(JSON.stringify(config)).not.toContain("from-a-file");
  });

  it("passwordEnv reads the variable; inline password and insecure TLS are accepted with a warning each", () => {
    const config = parse(
      {
        rackId: RACK,
        mqtt: { url: "mqtts://x-ats.iot.us-east-1.amazonaws.com:8883" },
        bmcs: [
          { componentId: C1, url: "https://10.0.3.17", username: "flow", passwordEnv: "BMC_PW" },
          {
            componentId: "7e000000-0000-4000-8000-000000000002",
            url: "https://10.0.3.18",
            username: "flow",
            password: "inline-secret",
            insecure: true,
          },
        ],
      },
      { BMC_PW: "from-env" },
    );
    expect(config.bmcs.map((b) => b.password())).toEqual(["from-env", "inline-secret"]);
    expect(config.warnings).toEqual([
      "bmcs[1]: password given inline; use passwordFile or passwordEnv outside local tests",
      "bmcs[1] (7e000000-0000-4000-8000-000000000002): insecure: true, the BMC's certificate is NOT verified; pin it with fingerprint or give its caFile",
    ]);
  });
});

describe("bmc agent config: the rack (protocol v4 topics)", () => {
  const bmcs = [{ componentId: C1, url: "https://10.0.3.17", username: "flow", passwordFile: "bmc.pw" }];

  it("rackId is kept lowercased, with no warning", () => {
    const config = parse({ rackId: RACK.toUpperCase(), mqtt: { url: "mqtt://127.0.0.1:1883" }, bmcs });
    expect(config.rackId).toBe(RACK);
    expect(config.warnings).toEqual([]);
  });

  it("a rackId that is not a UUID is a problem naming it", () => {
    expect(problems({ rackId: "rack-t01", mqtt: { url: "mqtt://127.0.0.1:1883" }, bmcs })).toEqual([
      'rackId: must be the inventory rack\'s id, a UUID (got "rack-t01")',
    ]);
  });
});

describe("bmc agent config: reportsRule (reports through AWS IoT Basic Ingest)", () => {
  const bmcs = [{ componentId: C1, url: "https://10.0.3.17", username: "flow", passwordFile: "bmc.pw" }];
  const mqtt = { url: "mqtt://127.0.0.1:1883" };

  it("absent by default: the plain evt topics", () => {
    expect(parse({ rackId: RACK, mqtt, bmcs }).reportsRule).toBeUndefined();
  });

  it("a rule name is kept as given", () => {
    const config = parse({ rackId: RACK, reportsRule: "Flow_prod_rack_bmc_events", mqtt, bmcs });
    expect(config.reportsRule).toBe("Flow_prod_rack_bmc_events");
    expect(config.warnings).toEqual([]);
  });

  it.each([
    ["Flow-prod_rack_bmc_events", '"Flow-prod_rack_bmc_events"'],
    ["x".repeat(129), JSON.stringify("x".repeat(129))],
    ["rules/x", '"rules/x"'],
  ])("%s is no IoT rule name: a problem naming the field and the rule", (name, shown) => {
    expect(problems({ rackId: RACK, reportsRule: name, mqtt, bmcs })).toEqual([
      `reportsRule: must be an AWS IoT rule name: 1 to 128 letters, digits and underscores (got ${shown})`,
    ]);
  });

  it("not a string, or empty: must be a non-empty string", () => {
    expect(problems({ rackId: RACK, reportsRule: 7, mqtt, bmcs })).toEqual([
      "reportsRule: must be a non-empty string",
    ]);
    expect(problems({ rackId: RACK, reportsRule: "", mqtt, bmcs })).toEqual([
      "reportsRule: must be a non-empty string",
    ]);
  });

  it("without rackId: a problem, Basic Ingest carries the rack-scoped reports only", () => {
    expect(problems({ reportsRule: "Flow_prod_rack_bmc_events", mqtt, bmcs })).toEqual([
      "reportsRule: needs rackId: Basic Ingest carries the rack-scoped reports (flow/rack/<rackId>/...)",
    ]);
  });
});

describe("bmc agent config: commandAuth (opening update commands' credentials)", () => {
  const bmcs = [{ componentId: C1, url: "https://10.0.3.17", username: "flow", passwordFile: "bmc.pw" }];
  const mqtt = { url: "mqtt://127.0.0.1:1883" };

  it("environment credentials: KMS in the region, at the endpoint given", () => {
    const config = parse({
      rackId: RACK,
      mqtt,
      bmcs,
      commandAuth: { credentials: "environment", region: "eu-west-1", kmsEndpoint: "http://127.0.0.1:5000" },
    });
    expect(config.commandAuth).toEqual({
      credentials: "environment",
      region: "eu-west-1",
      kmsEndpoint: "http://127.0.0.1:5000",
    });
  });

  it("iot credentials need the endpoint, the role alias, the agent's certificate and a rackId; each problem named", () => {
    expect(problems({ mqtt, bmcs, commandAuth: { region: "eu-west-1" } })).toEqual([
      "commandAuth: needs rackId: the blobs are sealed for the rack (bmc:<rackId>:<component>:<request>)",
      "commandAuth.credentialsEndpoint: is required",
      "commandAuth.roleAlias: is required",
      'commandAuth.credentials: "iot" needs mqtt.certFile and mqtt.keyFile (the agent\'s certificate)',
    ]);
    expect(
      problems({
        rackId: RACK,
        mqtt,
        bmcs,
        commandAuth: { credentials: "vault", region: "x", roleAlias: "r" },
      }),
    ).toEqual(['commandAuth.credentials: must be "iot" or "environment" (got "vault")']);
    expect(
      problems({
        rackId: RACK,
        mqtt,
        bmcs,
        commandAuth: { credentials: "environment", region: "x", roleAlias: "r" },
      }),
    ).toEqual(['commandAuth.roleAlias: is for credentials "iot" only']);
  });
});

describe("bmc agent config: timings.progressIntervalMs (progress paced per update)", () => {
  const base = {
    mqtt: { url: "mqtt://127.0.0.1:1883" },
    bmcs: [{ componentId: C1, url: "https://10.0.3.17", username: "flow", passwordFile: "bmc.pw" }],
  };
  const interval = (value: unknown) => parse({ ...base, timings: { progressIntervalMs: value } });

  it("defaults to one progress a minute; 0 (every rise) and the longest, 150000, are taken as given", () => {
    expect(parse(base).timings.progressIntervalMs).toBe(60_000);
    expect(interval(0).timings.progressIntervalMs).toBe(0);
    expect(interval(150_000).timings).toEqual({ ...DEFAULT_TIMINGS, progressIntervalMs: 150_000 });
  });

  it("longer than 150000 ms is refused with why: the child task's wait for a wave would lapse", () => {
    expect(problems({ ...base, timings: { progressIntervalMs: 150_001 } })).toEqual([
      "timings.progressIntervalMs: must be at most 150000 (got 150001): the child task's wait for a wave lapses after 300000 ms without a report",
    ]);
  });

  it("not a whole number of milliseconds from 0 is refused naming the field", () => {
    for (const value of [-1, 1.5, "60000"]) {
      expect(problems({ ...base, timings: { progressIntervalMs: value } })).toEqual([
        `timings.progressIntervalMs: must be an integer from 0 to 150000 (got ${JSON.stringify(value)})`,
      ]);
    }
  });
});

describe("bmc agent config: reportFlushMs (one message per rack per moment)", () => {
  const bmcs = [{ componentId: C1, url: "https://10.0.3.17", username: "flow", passwordFile: "bmc.pw" }];
  const mqtt = { url: "mqtt://127.0.0.1:1883" };

  it("with rackId: 1000 ms by default; 0 (each report alone) and the longest, 10000, taken as given", () => {
    expect(DEFAULT_REPORT_FLUSH_MS).toBe(1_000);
    expect(parse({ rackId: RACK, mqtt, bmcs }).reportFlushMs).toBe(1_000);
    expect(parse({ rackId: RACK, reportFlushMs: 0, mqtt, bmcs }).reportFlushMs).toBe(0);
    expect(parse({ rackId: RACK, reportFlushMs: 10_000, mqtt, bmcs }).reportFlushMs).toBe(10_000);
  });

  it("without rackId: 0 (no rack topic to batch on); a window asked for is a problem", () => {
    expect(parse({ mqtt, bmcs }).reportFlushMs).toBe(0);
    expect(parse({ reportFlushMs: 0, mqtt, bmcs }).reportFlushMs).toBe(0);
    expect(problems({ reportFlushMs: 500, mqtt, bmcs })).toEqual([
      "reportFlushMs: needs rackId: a rack's reports travel on its rack topic (flow/rack/<rackId>/reports); 0 or absent without it",
    ]);
  });

  it("not a whole number of milliseconds from 0 to 10000 is refused naming the field", () => {
    for (const value of [-1, 1.5, 10_001, "1000"]) {
      expect(problems({ rackId: RACK, reportFlushMs: value, mqtt, bmcs })).toEqual([
        `reportFlushMs: must be an integer from 0 to 10000 (got ${JSON.stringify(value)})`,
      ]);
    }
  });
});

describe("bmc agent config: problems, all at once, naming the field", () => {
  it("a document that is not an object, and missing required parts", () => {
    expect(problems([])).toEqual([
      "(root): must be a JSON object",
      "mqtt: is required",
      "bmcs: must be a non-empty array",
    ]);
  });

  it("each BMC's rules, never echoing a secret", () => {
    expect(
      problems({
        mqtt: { url: "mqtt://127.0.0.1:1883", certFile: "absent.crt" },
        timings: { pollIntervalMs: 0 },
        bmcs: [
          {
            componentId: C1,
            url: "https://user:pw@10.0.3.17/redfish/v1",
            username: "flow",
            password: "do-not-echo",
            fingerprint: "12:34",
            caFile: "bmc.pw",
            applyTime: "Later",
          },
          {
            componentId: C1,
            url: "ftp://10.0.3.17",
            username: "",
            passwordFile: "absent.pw",
            subTargets: { bios: 7 },
          },
        ],
      }),
    ).toEqual([
      "mqtt.certFile: cannot be read (ENOENT)",
      "mqtt.keyFile: mqtt.certFile and mqtt.keyFile go together",
      "timings.pollIntervalMs: must be an integer from 1 to 86400000 (got 0)",
      "bmcs[0].url: must be the BMC's origin only (scheme, host, port): no path, query or credentials",
      "bmcs[0].fingerprint: must be a SHA-256 fingerprint: 64 hex digits, with or without colons",
      'bmcs[0].applyTime: must be one of Immediate, OnReset, AtMaintenanceWindowStart, InMaintenanceWindowOnReset, OnStartUpdateRequest (got "Later")',
      `bmcs[1].componentId: ${C1} is listed twice`,
      'bmcs[1].url: must be an https:// URL (got "ftp://10.0.3.17")',
      "bmcs[1].username: must be a non-empty string",
      "bmcs[1].passwordFile: cannot be read (ENOENT)",
      "bmcs[1].subTargets.bios: must be a firmware inventory member's Id",
    ]);
  });

  it("http:// only to loopback; at most one of caFile, fingerprint and insecure", () => {
    expect(
      problems({
        mqtt: { url: "mqtt://127.0.0.1:1883" },
        bmcs: [
          { componentId: C1, url: "http://127.0.0.1:8443", username: "flow", passwordFile: "bmc.pw" },
          {
            componentId: "7e000000-0000-4000-8000-000000000002",
            url: "http://[::1]:8443",
            username: "flow",
            passwordFile: "bmc.pw",
            caFile: "bmc.pw",
            insecure: true,
          },
          {
            componentId: "7e000000-0000-4000-8000-000000000003",
            url: "http://bmc.local",
            username: "flow",
            passwordFile: "bmc.pw",
          },
        ],
      }),
    ).toEqual([
      "bmcs[1]: give at most one of caFile, fingerprint and insecure",
      'bmcs[2].url: plain http:// is allowed only to a loopback address (got "http://bmc.local")',
    ]);
  });
});
