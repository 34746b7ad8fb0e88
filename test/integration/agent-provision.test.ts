/**
 * `flowctl agent provision` against moto's IoT (AWS_ENDPOINT_URL): the thing named by the rack id,
 * an active certificate with the agent policy attached and attached to the thing, the key pair
 * written (the key 0600), and a config the agent reads as is. Refusals create nothing.
 */
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CreatePolicyCommand,
  DescribeThingCommand,
  IoTClient,
  ListAttachedPoliciesCommand,
  ListCertificatesCommand,
  ListThingPrincipalsCommand,
} from "@aws-sdk/client-iot";
import { beforeAll, describe, expect, it } from "vitest";
import { parseAgentConfig } from "../../src/service/bmc-agent/config.js";
import { flowctlInProcess } from "../support/flowctl.js";
import { testEndpoint } from "../support/test-endpoint.js";

const endpoint = testEndpoint();
const env = { AWS_ENDPOINT_URL: endpoint, AWS_REGION: "us-east-1" };
const iot = new IoTClient({
  endpoint,
  region: "us-east-1",
  credentials: { accessKeyId: "t", secretAccessKey: "t" },
});
const dir = mkdtempSync(join(tmpdir(), "agent-provision-"));
const POLICY = `Flow_test_bmc_agent_${process.pid}`;
const C1 = "7d000000-0000-4000-8000-000000000001";
const C2 = "7d000000-0000-4000-8000-000000000002";
const bmcsFile = join(dir, "bmcs.json");

async function certificateCount(): Promise<number> {
  return (await iot.send(new ListCertificatesCommand({}))).certificates?.length ?? 0;
}

beforeAll(async () => {
  await iot.send(
    new CreatePolicyCommand({
      policyName: POLICY,
      policyDocument: JSON.stringify({
        Version: "2012-10-17",
        Statement: [
          { Effect: "Allow", Action: "iot:Connect", Resource: "arn:aws:iot:us-east-1:123456789012:client/x" },
        ],
      }),
    }),
  );
  writeFileSync(
    bmcsFile,
    JSON.stringify([
      { componentId: C1, url: "https://10.0.3.17", username: "flow", passwordFile: "/etc/flow/bmc.pw" },
      { componentId: C2, url: "https://10.0.3.18", username: "flow", passwordEnv: "BMC_PW" },
    ]),
  );
});

/** `flowctl agent provision` of `rack` into `out`, with the test's policy and BMC list unless given. */
const provision = (o: {
  rack: string;
  out: string;
  policy?: string;
  bmcs?: string;
  json?: boolean;
  roleAlias?: string;
  reportsRule?: string;
}) =>
  flowctlInProcess(
    [
      ...(o.json ? ["-o", "json"] : []),
      "agent",
      "provision",
      "--rack",
      o.rack,
      "--policy",
      o.policy ?? POLICY,
      "--bmcs",
      o.bmcs ?? bmcsFile,
      "--out",
      o.out,
      ...(o.roleAlias === undefined ? [] : ["--role-alias", o.roleAlias]),
      ...(o.reportsRule === undefined ? [] : ["--reports-rule", o.reportsRule]),
    ],
    env,
  );

describe("flowctl agent provision", () => {
  it("creates the thing, an active certificate with the policy, writes the keys and a config the agent reads", async () => {
    const rack = "7d000000-0000-4000-8000-0000000000A1";
    const out = join(dir, "rack-a1");
    const before = await certificateCount();
    const r = await provision({ rack, out, json: true });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const done = JSON.parse(r.stdout) as {
      thingName: string;
      certificateArn: string;
      certificateId: string;
      endpoint: string;
    };
    const thingName = rack.toLowerCase();
    expect(done).toMatchObject({ thingName, thingExisted: false, policyName: POLICY });

    const thing = await iot.send(new DescribeThingCommand({ thingName }));
    expect(thing.attributes).toEqual({ rackId: thingName });
    const principals = await iot.send(new ListThingPrincipalsCommand({ thingName }));
    expect(principals.principals).toEqual([done.certificateArn]);
    const policies = await iot.send(new ListAttachedPoliciesCommand({ target: done.certificateArn }));
    expect(policies.policies?.map((p) => p.policyName)).toEqual([POLICY]);
    const certs = (await iot.send(new ListCertificatesCommand({}))).certificates ?? [];
    expect(certs).toHaveLength(before + 1);
    expect(certs.find((c) => c.certificateId === done.certificateId)?.status).toBe("ACTIVE");

    expect(readFileSync(join(out, "agent.crt"), "utf8")).toContain("BEGIN CERTIFICATE");
    expect(readFileSync(join(out, "agent.key"), "utf8")).toContain("PRIVATE KEY");
    expect(statSync(join(out, "agent.key")).mode & 0o777).toBe(0o600);
    // moto names a new endpoint at each DescribeEndpoint: the one provisioned is the one it printed.
    const ats = done.endpoint;
    expect(ats).toMatch(/^[a-z0-9]+-ats\.iot\.us-east-1\.amazonaws\.com$/);
    const config = JSON.parse(readFileSync(join(out, "agent.json"), "utf8")) as Record<string, unknown>;
    expect(config).toEqual({
      rackId: thingName,
      mqtt: { url: `mqtts://${ats}:8883`, clientId: thingName, certFile: "agent.crt", keyFile: "agent.key" },
      bmcs: JSON.parse(readFileSync(bmcsFile, "utf8")),
    });
    // The agent takes it (the password file lives on the rack host; here an env var stands in).
    writeFileSync(join(out, "bmc.pw"), "pw\n");
    const entries = config.bmcs as Record<string, unknown>[];
    const parsed = parseAgentConfig(
      { ...config, bmcs: entries.map((b) => ({ ...b, passwordFile: undefined, passwordEnv: "BMC_PW" })) },
      { baseDir: out, env: { BMC_PW: "pw" } },
    );
    expect(parsed.rackId).toBe(thingName);
    expect(parsed.mqtt).toEqual({
      url: `mqtts://${ats}:8883`,
      clientId: thingName,
      certFile: join(out, "agent.crt"),
      keyFile: join(out, "agent.key"),
    });
    expect(parsed.warnings).toEqual([]);
  });

  it("with --role-alias the config opens update commands' credentials through the IoT credentials provider", async () => {
    const rack = "7d000000-0000-4000-8000-0000000000a5";
    const out = join(dir, "rack-a5");
    const r = await provision({ rack, out, roleAlias: "Flow_test_bmc_agent" });
    expect(r.code, r.stderr).toBe(0);
    const config = JSON.parse(readFileSync(join(out, "agent.json"), "utf8")) as {
      commandAuth: { credentialsEndpoint: string };
    };
    expect(config.commandAuth).toEqual({
      credentials: "iot",
      region: "us-east-1",
      credentialsEndpoint: expect.stringMatching(/\.credentials\.iot\.us-east-1\.amazonaws\.com$/),
      roleAlias: "Flow_test_bmc_agent",
    });
    const parsed = parseAgentConfig(
      {
        ...config,
        bmcs: [{ componentId: C1, url: "https://10.0.3.17", username: "flow", passwordEnv: "BMC_PW" }],
      },
      { baseDir: out, env: { BMC_PW: "pw" } },
    );
    expect(parsed.commandAuth).toMatchObject({ credentials: "iot", roleAlias: "Flow_test_bmc_agent" });
  });

  it("with --reports-rule the config sends the reports through IoT Basic Ingest to that rule", async () => {
    const rack = "7d000000-0000-4000-8000-0000000000a6";
    const out = join(dir, "rack-a6");
    const r = await provision({ rack, out, reportsRule: "Flow_test_rack_bmc_events" });
    expect(r.code, r.stderr).toBe(0);
    const config = JSON.parse(readFileSync(join(out, "agent.json"), "utf8")) as Record<string, unknown>;
    expect(config.reportsRule).toBe("Flow_test_rack_bmc_events");
    const parsed = parseAgentConfig(
      {
        ...config,
        bmcs: [{ componentId: C1, url: "https://10.0.3.17", username: "flow", passwordEnv: "BMC_PW" }],
      },
      { baseDir: out, env: { BMC_PW: "pw" } },
    );
    expect(parsed.reportsRule).toBe("Flow_test_rack_bmc_events");
  });

  it("an output directory that holds an agent's files is refused before anything is created", async () => {
    const out = join(dir, "taken");
    const first = await provision({ rack: "7d000000-0000-4000-8000-0000000000a2", out });
    expect(first.code).toBe(0);
    const before = await certificateCount();
    const again = await provision({ rack: "7d000000-0000-4000-8000-0000000000a2", out });
    expect(again).toMatchObject({
      code: 1,
      stderr: `error: --out: ${out} already holds agent.json, agent.crt, agent.key; give a new directory (keys are never overwritten)\n`,
    });
    expect(await certificateCount()).toBe(before);
  });

  it.each([
    [["--rack", "rack-t01"], 'error: --rack: must be the inventory rack\'s id, a UUID (got "rack-t01")\n'],
    [
      ["--rack", "7d000000-0000-4000-8000-0000000000a7", "--reports-rule", "Flow-test-rule"],
      'error: --reports-rule: must be an AWS IoT rule name: 1 to 128 letters, digits and underscores (got "Flow-test-rule")\n',
    ],
  ])("a bad flag %j is a usage error, nothing created", async (flags, message) => {
    const before = await certificateCount();
    const r = await flowctlInProcess(
      [
        "agent",
        "provision",
        ...flags,
        "--policy",
        POLICY,
        "--bmcs",
        bmcsFile,
        "--out",
        join(dir, "bad-flag"),
      ],
      env,
    );
    expect(r).toMatchObject({ code: 1, stderr: message });
    expect(await certificateCount()).toBe(before);
  });

  it("a BMC list that is not an array of entries with distinct component ids is refused, nothing created", async () => {
    const bad = join(dir, "bad-bmcs.json");
    writeFileSync(
      bad,
      JSON.stringify([{ componentId: C1 }, { componentId: C1.toUpperCase() }, { url: "x" }, 7]),
    );
    const before = await certificateCount();
    const r = await provision({
      rack: "7d000000-0000-4000-8000-0000000000a3",
      out: join(dir, "bad-bmcs"),
      bmcs: bad,
    });
    expect(r).toMatchObject({
      code: 1,
      stderr: `error: --bmcs: ${bad}: [1].componentId: ${C1.toUpperCase()} is listed twice; [2].componentId: must be the inventory component's id, a UUID; [3]: must be an object\n`,
    });
    expect(await certificateCount()).toBe(before);
  });

  it("a policy that does not exist: exit 4 naming the step, nothing created", async () => {
    const before = await certificateCount();
    const r = await provision({
      rack: "7d000000-0000-4000-8000-0000000000a4",
      out: join(dir, "no-policy"),
      policy: "no_such_policy",
    });
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(
      /^error: agent provision: the policy no_such_policy: ResourceNotFoundException: /,
    );
    expect(await certificateCount()).toBe(before);
    await expect(
      iot.send(new DescribeThingCommand({ thingName: "7d000000-0000-4000-8000-0000000000a4" })),
    ).rejects.toMatchObject({ name: "ResourceNotFoundException" });
  });
});
