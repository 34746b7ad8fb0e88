/**
 * The idempotent create's retry on the AWS parts, against moto: credentials sealed by the KMS
 * envelope cipher (a symmetric key), remembered by KMS GenerateMac under an HMAC_256 key. A retry
 * is answered from the MAC alone: no kms:Decrypt (which the front's role does not have), the same
 * answer from another front instance, and another secret is InvalidArgument.
 */
import { CreateKeyCommand, KMSClient } from "@aws-sdk/client-kms";
import { GetCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { awsClientConfig } from "../../src/adapters/aws-config.js";
import { createDynamoStores, type DynamoStores } from "../../src/adapters/dynamodb/index.js";
import { KmsEnvelopeCipher } from "../../src/adapters/kms/kms-cipher.js";
import { KmsRequestMac } from "../../src/adapters/kms/request-mac.js";
import { systemClock } from "../../src/adapters/system-clock.js";
import { createRunService } from "../../src/app/runs.js";
import type { CreateRunInput } from "../../src/domain/create-run-input.js";
import { createRunInput } from "../support/domain-fixtures.js";
import { inventoryOf, rackGroup } from "../support/fixtures-inventory.js";
import { everyImage } from "../support/memory-images.js";
import { freshTables, TEST_CREDENTIALS, TEST_REGION, testClient } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

const REUSED = "client_request_id: was used for a different request; a retry must resend the same request";
const group = rackGroup(41, { name: "mac", count: 3 });

/** A KMS client that records the name of every command it sends. */
function recordingKms(endpoint: string): { kms: KMSClient; sent: string[] } {
  const kms = new KMSClient(
    awsClientConfig({ endpoint, region: TEST_REGION, credentials: TEST_CREDENTIALS }),
  );
  const sent: string[] = [];
  kms.middlewareStack.add(
    (next, context) => (args) => {
      sent.push(String(context.commandName));
      return next(args);
    },
    { step: "initialize" },
  );
  return { kms, sent };
}

/** The fixture's create request on the group's racks, with `secret` as their shared BMC credential. */
function request(secret: string): CreateRunInput {
  const input = createRunInput({ name: "mac-retry", maxConcurrentTargets: 1, phaseCount: 1 });
  const configuration = input.configuration!;
  return {
    ...input,
    configuration: {
      ...configuration,
      operation: {
        upgradeFirmware: {
          ...configuration.operation!.upgradeFirmware!,
          targetSpec: {
            kind: "racks",
            racks: group.ids.map((id) => ({ ref: { by: "id" as const, id }, componentTypes: [] })),
          },
          authentication: { kind: "shared", secret },
        },
      },
    },
  };
}

let drop: () => Promise<void>;
let stores: DynamoStores;
let tasksTable: string;
let kms: ReturnType<typeof recordingKms>;
let macKeyId: string;
const client = testClient(testEndpoint());

beforeAll(async () => {
  const endpoint = testEndpoint();
  kms = recordingKms(endpoint);
  const sealing = await kms.kms.send(new CreateKeyCommand({ Description: "flow secrets" }));
  const mac = await kms.kms.send(
    new CreateKeyCommand({
      Description: "flow request mac",
      KeySpec: "HMAC_256",
      KeyUsage: "GENERATE_VERIFY_MAC",
    }),
  );
  macKeyId = mac.KeyMetadata?.KeyId as string;
  const tables = await freshTables(client, "mac");
  drop = tables.drop;
  tasksTable = tables.names.tasks;
  stores = createDynamoStores(client, tables.names, {
    cipher: new KmsEnvelopeCipher(kms.kms, sealing.KeyMetadata?.KeyId as string),
  });
  await stores.inventory.upsertRacks(inventoryOf([group]));
});

afterAll(async () => {
  await drop();
  client.destroy();
  kms.kms.destroy();
});

/** One front instance: its own run service, the same stores and keys. */
const front = () =>
  createRunService({
    runs: stores.runs,
    inventory: stores.inventory,
    images: everyImage,
    clock: systemClock,
    newId: () => crypto.randomUUID(),
    requestMac: new KmsRequestMac(kms.kms, macKeyId),
  });

describe("idempotent create with credentials, on KMS (moto)", () => {
  it("a retry is answered by GenerateMac alone: same secret → the first run, another → InvalidArgument; never Decrypt", async () => {
    const first = await front().createRun(request("pw-1"), { clientRequestId: "mac-req-1" });
    expect(kms.sent).toEqual(expect.arrayContaining(["GenerateMacCommand", "GenerateDataKeyCommand"]));

    kms.sent.length = 0;
    // Another front task (another process, same key) gives the same answer.
    expect(await front().createRun(request("pw-1"), { clientRequestId: "mac-req-1" })).toEqual(first);
    await expect(front().createRun(request("pw-2"), { clientRequestId: "mac-req-1" })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: REUSED,
    });
    expect(await front().planRun(request("pw-1"), { clientRequestId: "mac-req-1" })).toHaveProperty("plan");
    expect(kms.sent).toEqual(["GenerateMacCommand", "GenerateMacCommand", "GenerateMacCommand"]);
  });

  it("the stored record holds the MAC, never the secret", async () => {
    await front().createRun(request("pw-secret-3"), { clientRequestId: "mac-req-3" });
    const item = (
      await stores.doc.send(new GetCommand({ TableName: tasksTable, Key: { id: "runRequest:mac-req-3" } }))
    ).Item;
    expect(item?.credentialsMac).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(JSON.stringify(item)).not.toContain("pw-secret-3");
  });
});
