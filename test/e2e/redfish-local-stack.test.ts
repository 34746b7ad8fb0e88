/**
 * The local stack on Redfish (`npm start -- --bmc redfish`): every component an emulated Redfish
 * BMC, each rack its own BMC agent on the stack's broker. The quick start's path, image catalog →
 * child task → MQTT → agent → Redfish → inventory read back, with the stack's own wiring: nothing
 * started by the test but the stack.
 */
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RedfishFleet } from "../../local/redfish-fleet.js";
import { createS3Client } from "../../src/adapters/s3/image-bucket.js";
import { OperationRunStatus, OperationRunTargetStatus } from "../../src/gen/flow/v1/flow.js";
import { rackGroup } from "../support/fixtures-inventory.js";
import {
  createRun,
  failure,
  listTargets,
  runRequest,
  startTestStack,
  type TestStack,
  targetReport,
  waitForTerminal,
} from "../support/stack.js";

const group = rackGroup(62, { name: "redfish-stack", count: 2, types: ["COMPUTE", "NVSWITCH"] });
const [first, second] = group.racks as [(typeof group.racks)[0], (typeof group.racks)[0]];

let s: TestStack;
let redfish: RedfishFleet;

beforeAll(async () => {
  // Its own image bucket: a test here replaces a seeded object's bytes.
  s = await startTestStack({ label: "redfish-stack", groups: [group], bmc: "redfish", ownImageBucket: true });
  if (s.local.redfish === undefined) throw new Error("the stack started no Redfish BMCs");
  redfish = s.local.redfish;
});

afterAll(async () => {
  await s?.stop();
});

const emulated = (componentId: string) => {
  const emulator = redfish.emulatorOf(componentId);
  if (emulator === undefined) throw new Error(`no emulated BMC for ${componentId}`);
  return {
    record: emulator.record(componentId),
    version: emulator.versionOf(componentId, "BMC"),
  };
};

describe("local stack with --bmc redfish", () => {
  it("starts no simulated fleet: an emulated BMC for every component, at its inventory version, and an agent per rack", () => {
    expect(s.local.fleet).toBeUndefined();
    for (const rack of group.racks) {
      expect(redfish.agentOf(rack.id), rack.name).toBeDefined();
      for (const c of rack.components) expect(emulated(c.id).version, c.id).toBe(c.firmwareVersion);
    }
  });

  it("a run completes through the rack's agent: one push per BMC, activated by its reset, the version read back, one download per image", async () => {
    const id = await createRun(s.flow, runRequest({ rackIds: [first.id] }));
    const run = await waitForTerminal(s.flow, id);
    const report = await targetReport(s.flow, id);
    expect(run.summary?.state?.status, report).toBe(OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED);
    for (const c of first.components) {
      // One session for the preflight and the flash; the activation's reset ends it, so one more
      // for the read-back after it. The image is pushed once.
      expect(emulated(c.id).record, c.id).toMatchObject({ sessionsCreated: 2, pushes: { BMC: 1 } });
      expect(emulated(c.id).version, c.id).toBe("2.0.0");
    }
    // Two images (COMPUTE 2.0.0 and NVSWITCH 2.0.0), each fetched once for the rack.
    expect(redfish.agentOf(first.id)?.downloads().count).toBe(2);
    // The other rack's BMCs were not touched.
    for (const c of second.components) expect(emulated(c.id).record.pushes, c.id).toEqual({});
  });

  it("an image whose bytes no longer match the catalog's digest fails its component with IMAGE_DIGEST_MISMATCH, and its BMC receives nothing", async () => {
    const compute = second.components.find((c) => c.type === "COMPUTE");
    if (compute === undefined) throw new Error("the fixture has a COMPUTE component");
    const [image] = await s.local.stores.images.getImages([{ componentType: "COMPUTE", version: "3.0.0" }]);
    if (image === undefined) throw new Error("the stack seeds COMPUTE 3.0.0");
    const s3 = createS3Client({ endpoint: s.local.awsEndpoint });
    try {
      await s3.send(
        new PutObjectCommand({
          Bucket: s.local.imageBucket,
          Key: image.objectKey,
          Body: Buffer.from("FLOWFW 3.0.0\nnot the bytes the catalog registered\n"),
        }),
      );
    } finally {
      s3.destroy();
    }
    const id = await createRun(
      s.flow,
      runRequest({ rackIds: [second.id], firmware: { targetVersion: "3.0.0" } }),
    );
    await waitForTerminal(s.flow, id);
    const [target] = await listTargets(s.flow, id);
    expect(target?.status, await targetReport(s.flow, id)).toBe(
      OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_FAILED,
    );
    expect(target?.message).toContain("IMAGE_DIGEST_MISMATCH");
    expect(emulated(compute.id).record.pushes).toEqual({});
    expect(emulated(compute.id).record.imageBytes).toBe(0);
    expect(emulated(compute.id).version).toBe("1.0.0");
  });

  it("a version with no image in the catalog is refused at create, before any BMC is asked", async () => {
    const refused = await failure(
      createRun(s.flow, runRequest({ rackIds: [second.id], firmware: { targetVersion: "7.7.7" } })),
    );
    expect(refused.code).toBe("INVALID_ARGUMENT");
    expect(refused.details).toMatch(/COMPUTE 7\.7\.7/);
    for (const c of second.components) expect(emulated(c.id).version, c.id).not.toBe("7.7.7");
  });
});
