/**
 * DynamoFirmwareRecorder (src/adapters/dynamodb/firmware-version-recorder.ts) reads the rack
 * eventually consistent first (half the read units) and strongly after a refused write: its write
 * is conditional on what it read, so a stale read costs one retry and never a wrong version. A
 * stale read is not something an emulator produces, so the client is mocked. Given where the task's
 * preflight saw every component (`at`), it writes there first with no read, under the same
 * condition; refused (an import moved them), it reads and writes as without.
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { DynamoFirmwareRecorder } from "../../src/adapters/dynamodb/firmware-version-recorder.js";

const doc = DynamoDBDocumentClient.from(new DynamoDBClient({ region: "us-east-1", maxAttempts: 1 }));
const ddb = mockClient(doc);
const rack = (ids: string[]) => ({
  Item: { rack: { components: ids.map((id) => ({ id, type: "COMPUTE", firmwareVersion: "1.0.0" })) } },
});

describe("DynamoFirmwareRecorder", () => {
  beforeEach(() => ddb.reset());

  it("reads eventually consistent first, and strongly once its write was refused (the read was stale)", async () => {
    // The stale copy has c1 at index 0; the rack as it is now has it at index 1.
    ddb
      .on(GetCommand)
      .resolvesOnce(rack(["c1", "c2"]))
      .resolves(rack(["c0", "c1", "c2"]));
    ddb
      .on(UpdateCommand)
      .rejectsOnce(Object.assign(new Error("condition"), { name: "ConditionalCheckFailedException" }))
      .resolves({});
    await new DynamoFirmwareRecorder(doc, "inv").record("r1", [{ componentId: "c1", version: "2.0.0" }]);
    expect(ddb.commandCalls(GetCommand).map((c) => c.args[0].input.ConsistentRead)).toEqual([false, true]);
    const updates = ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);
    expect(updates.map((u) => u.UpdateExpression)).toEqual([
      "SET #r.#c[0].firmwareVersion = :v0",
      "SET #r.#c[1].firmwareVersion = :v0",
    ]);
    expect(updates[1]).toMatchObject({
      ConditionExpression: "#r.#c[1].id = :id0",
      ExpressionAttributeValues: { ":v0": "2.0.0", ":id0": "c1" },
    });
  });

  it("given where every component is, one conditional write and no read", async () => {
    ddb.on(UpdateCommand).resolves({});
    await new DynamoFirmwareRecorder(doc, "inv").record(
      "r1",
      [
        { componentId: "c1", version: "2.0.0" },
        { componentId: "c2", version: "2.1.0" },
      ],
      { c1: 4, c2: 0 },
    );
    expect(ddb.commandCalls(GetCommand)).toEqual([]);
    expect(ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input)).toEqual([
      expect.objectContaining({
        Key: { pk: "rack#r1" },
        UpdateExpression: "SET #r.#c[4].firmwareVersion = :v0, #r.#c[0].firmwareVersion = :v1",
        ConditionExpression: "#r.#c[4].id = :id0 AND #r.#c[0].id = :id1",
        ExpressionAttributeValues: { ":v0": "2.0.0", ":id0": "c1", ":v1": "2.1.0", ":id1": "c2" },
      }),
    ]);
  });

  it("an index that no longer holds its component (refused), or a component it does not name: the rack is read and the write made where the read found it", async () => {
    ddb.on(GetCommand).resolves(rack(["c0", "c1"]));
    ddb
      .on(UpdateCommand)
      .rejectsOnce(Object.assign(new Error("condition"), { name: "ConditionalCheckFailedException" }))
      .resolves({});
    const recorder = new DynamoFirmwareRecorder(doc, "inv");
    await recorder.record("r1", [{ componentId: "c1", version: "2.0.0" }], { c1: 0 });
    expect(ddb.commandCalls(GetCommand).map((c) => c.args[0].input.ConsistentRead)).toEqual([false]);
    expect(ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input.UpdateExpression)).toEqual([
      "SET #r.#c[0].firmwareVersion = :v0",
      "SET #r.#c[1].firmwareVersion = :v0",
    ]);
    ddb.reset();
    ddb.on(GetCommand).resolves(rack(["c0", "c1"]));
    ddb.on(UpdateCommand).resolves({});
    await recorder.record("r1", [{ componentId: "c1", version: "2.0.0" }], { c0: 0 });
    expect(ddb.commandCalls(GetCommand)).toHaveLength(1);
    expect(ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input.UpdateExpression)).toEqual([
      "SET #r.#c[1].firmwareVersion = :v0",
    ]);
  });
});
