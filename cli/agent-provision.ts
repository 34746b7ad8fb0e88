/**
 * `flowctl agent provision`: registers one rack's BMC agent with AWS IoT Core and writes what the
 * agent needs on the rack's management host (docs/agent.md, "Provisioning in AWS"):
 *
 *   1. checks everything local first (the rack id, an empty output directory, the BMC list) and
 *      that the agent policy exists, so a mistake creates nothing;
 *   2. the thing, named by the rack id (the policy's `${iot:Connection.Thing.ThingName}`, so the
 *      agent may use only `flow/rack/<rack id>/…`); an existing thing of that name is kept;
 *   3. an active certificate and its key pair, written as agent.crt and agent.key (mode 0600);
 *   4. the policy attached to the certificate, the certificate to the thing;
 *   5. agent.json: rackId, mqtt (the account's ATS data endpoint, client id = thing name, the
 *      two files), with `--role-alias` commandAuth (the credentials provider endpoint, the alias,
 *      the region: the agent opens update commands' credentials), with `--reports-rule` reportsRule
 *      (the agent's reports through IoT Basic Ingest), and the BMC entries given.
 * A failure after the certificate was made deactivates and deletes it again (best effort, said).
 *
 * It talks to IoT with the SDK's default credentials and region (AWS_REGION, else us-east-1);
 * AWS_ENDPOINT_URL points it at an AWS-compatible endpoint (the tests use moto's IoT).
 */
import { chmod, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  AttachPolicyCommand,
  AttachThingPrincipalCommand,
  CreateKeysAndCertificateCommand,
  CreateThingCommand,
  DeleteCertificateCommand,
  DescribeEndpointCommand,
  DetachPolicyCommand,
  DetachThingPrincipalCommand,
  GetPolicyCommand,
  IoTClient,
  UpdateCertificateCommand,
} from "@aws-sdk/client-iot";
import { awsClientConfig } from "../src/adapters/aws-config.js";
import { isIotRuleName } from "../src/domain/bmc-topics.js";
import { UsageError } from "./errors.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** What the agent's config file and key files are called in the output directory. */
export const PROVISIONED_FILES = { config: "agent.json", cert: "agent.crt", key: "agent.key" } as const;

export interface ProvisionRequest {
  rackId: string;
  outDir: string;
  policyName: string;
  bmcsFile: string;
  /** The stack's BmcAgentRoleAlias: the config then opens update commands' credentials (commandAuth). */
  roleAlias?: string;
  /** The stack's BmcReportsRuleName: the config then sends the reports through Basic Ingest (reportsRule). */
  reportsRule?: string;
  env: Readonly<Record<string, string | undefined>>;
}

export interface Provisioned {
  thingName: string;
  thingExisted: boolean;
  certificateArn: string;
  certificateId: string;
  policyName: string;
  endpoint: string;
  files: { config: string; cert: string; key: string };
}

/** An IoT call that failed: which step, and what AWS said. */
export class ProvisionError extends Error {
  constructor(step: string, cause: unknown, cleanup?: string) {
    const e = cause as { name?: string; message?: string };
    super(
      `${step}: ${e.name ?? "Error"}: ${e.message ?? String(cause)}${cleanup === undefined ? "" : ` (${cleanup})`}`,
    );
    this.name = "ProvisionError";
  }
}

/** `--reports-rule`: an AWS IoT rule name (the stack's BmcReportsRuleName); anything else is a usage error. */
export function reportsRuleOption(value: string): string {
  if (!isIotRuleName(value))
    throw new UsageError(
      `--reports-rule: must be an AWS IoT rule name: 1 to 128 letters, digits and underscores (got ${JSON.stringify(value)})`,
    );
  return value;
}

/** The rack id as the thing name: a UUID, lowercased; anything else is a usage error. */
export function rackIdOption(value: string): string {
  const id = value.toLowerCase();
  if (!UUID.test(id))
    throw new UsageError(`--rack: must be the inventory rack's id, a UUID (got ${JSON.stringify(value)})`);
  return id;
}

/** The `--bmcs` file: a non-empty JSON array of agent BMC entries, each with a distinct UUID componentId. */
export async function readBmcEntries(file: string): Promise<Record<string, unknown>[]> {
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(file, "utf8"));
  } catch (error) {
    throw new UsageError(`--bmcs: ${file}: ${(error as Error).message}`);
  }
  if (!Array.isArray(doc) || doc.length === 0)
    throw new UsageError(`--bmcs: ${file}: must be a non-empty JSON array of the agent's bmcs[] entries`);
  const problems: string[] = [];
  const seen = new Set<string>();
  doc.forEach((entry, i) => {
    const id = (entry as { componentId?: unknown } | null)?.componentId;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry))
      problems.push(`[${i}]: must be an object`);
    else if (typeof id !== "string" || !UUID.test(id.toLowerCase()))
      problems.push(`[${i}].componentId: must be the inventory component's id, a UUID`);
    else if (seen.has(id.toLowerCase())) problems.push(`[${i}].componentId: ${id} is listed twice`);
    else seen.add(id.toLowerCase());
  });
  if (problems.length > 0) throw new UsageError(`--bmcs: ${file}: ${problems.join("; ")}`);
  return doc as Record<string, unknown>[];
}

/** Refuses a directory that already holds an agent's files: keys are never overwritten. */
async function emptyOutDir(dir: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT")
      throw new UsageError(`--out: ${dir}: ${(error as Error).message}`);
    await mkdir(dir, { recursive: true });
    return;
  }
  const taken = Object.values(PROVISIONED_FILES).filter((f) => names.includes(f));
  if (taken.length > 0)
    throw new UsageError(
      `--out: ${dir} already holds ${taken.join(", ")}; give a new directory (keys are never overwritten)`,
    );
}

export function iotClient(env: ProvisionRequest["env"]): IoTClient {
  return new IoTClient(
    awsClientConfig({
      ...(env.AWS_ENDPOINT_URL ? { endpoint: env.AWS_ENDPOINT_URL } : {}),
      ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}),
      maxAttempts: 3,
    }),
  );
}

async function step<T>(name: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw new ProvisionError(name, error);
  }
}

export async function provisionAgent(request: ProvisionRequest, iot: IoTClient): Promise<Provisioned> {
  const outDir = resolve(request.outDir);
  const bmcs = await readBmcEntries(request.bmcsFile);
  await emptyOutDir(outDir);
  const thingName = request.rackId;
  await step(`the policy ${request.policyName}`, () =>
    iot.send(new GetPolicyCommand({ policyName: request.policyName })),
  );
  const endpoint = await step("the IoT data endpoint", () =>
    iot.send(new DescribeEndpointCommand({ endpointType: "iot:Data-ATS" })),
  );
  const credentialsEndpoint =
    request.roleAlias === undefined
      ? undefined
      : await step("the IoT credentials provider endpoint", () =>
          iot.send(new DescribeEndpointCommand({ endpointType: "iot:CredentialProvider" })),
        );
  const region = await iot.config.region();
  let thingExisted = false;
  try {
    await iot.send(
      new CreateThingCommand({ thingName, attributePayload: { attributes: { rackId: thingName } } }),
    );
  } catch (error) {
    if ((error as Error).name !== "ResourceAlreadyExistsException")
      throw new ProvisionError(`the thing ${thingName}`, error);
    thingExisted = true;
  }
  const cert = await step("a certificate", () =>
    iot.send(new CreateKeysAndCertificateCommand({ setAsActive: true })),
  );
  const certificateArn = cert.certificateArn ?? "";
  const certificateId = cert.certificateId ?? "";
  const files = {
    config: join(outDir, PROVISIONED_FILES.config),
    cert: join(outDir, PROVISIONED_FILES.cert),
    key: join(outDir, PROVISIONED_FILES.key),
  };
  const attached: ("policy" | "thing")[] = [];
  try {
    await writeFile(files.key, cert.keyPair?.PrivateKey ?? "", { mode: 0o600 });
    await chmod(files.key, 0o600);
    await writeFile(files.cert, cert.certificatePem ?? "");
    await iot.send(new AttachPolicyCommand({ policyName: request.policyName, target: certificateArn }));
    attached.push("policy");
    await iot.send(new AttachThingPrincipalCommand({ thingName, principal: certificateArn }));
    attached.push("thing");
    const config = {
      rackId: request.rackId,
      ...(request.reportsRule === undefined ? {} : { reportsRule: request.reportsRule }),
      mqtt: {
        url: `mqtts://${endpoint.endpointAddress}:8883`,
        clientId: thingName,
        certFile: PROVISIONED_FILES.cert,
        keyFile: PROVISIONED_FILES.key,
      },
      ...(request.roleAlias === undefined
        ? {}
        : {
            commandAuth: {
              credentials: "iot",
              region,
              credentialsEndpoint: credentialsEndpoint?.endpointAddress ?? "",
              roleAlias: request.roleAlias,
            },
          }),
      bmcs,
    };
    await writeFile(files.config, `${JSON.stringify(config, null, 2)}\n`);
  } catch (error) {
    const cleanup = await removeCertificate(
      iot,
      { thingName, policyName: request.policyName, certificateArn, certificateId },
      attached,
    );
    throw new ProvisionError("attaching the certificate", error, cleanup);
  }
  return {
    thingName,
    thingExisted,
    certificateArn,
    certificateId,
    policyName: request.policyName,
    endpoint: endpoint.endpointAddress ?? "",
    files,
  };
}

/** Undoes a half-made registration; says what it could not undo. */
async function removeCertificate(
  iot: IoTClient,
  made: { thingName: string; policyName: string; certificateArn: string; certificateId: string },
  attached: readonly ("policy" | "thing")[],
): Promise<string> {
  try {
    if (attached.includes("thing"))
      await iot.send(
        new DetachThingPrincipalCommand({ thingName: made.thingName, principal: made.certificateArn }),
      );
    if (attached.includes("policy"))
      await iot.send(new DetachPolicyCommand({ policyName: made.policyName, target: made.certificateArn }));
    await iot.send(
      new UpdateCertificateCommand({ certificateId: made.certificateId, newStatus: "INACTIVE" }),
    );
    await iot.send(new DeleteCertificateCommand({ certificateId: made.certificateId }));
    return `the certificate ${made.certificateId} was deactivated and deleted`;
  } catch (error) {
    return `the certificate ${made.certificateId} could not be removed (${(error as Error).name}): delete it by hand`;
  }
}
