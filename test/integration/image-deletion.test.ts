/**
 * DeleteFirmwareImage on moto (DynamoDB records, a versioned S3 bucket): refused while a baseline
 * or a task that has not ended needs the image, naming it; then the record and every version of
 * the object go; an object another record shares is kept; an unknown key is NotFound. (Which runs
 * and tasks need an image, case by case, is test/unit/image-use.test.ts.)
 */
import { createHash, randomUUID } from "node:crypto";
import { ListObjectVersionsCommand, PutBucketVersioningCommand, type S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBucket } from "../../local/image-catalog.js";
import type { DynamoStores } from "../../src/adapters/dynamodb/index.js";
import { createS3Client, S3ImageObjectStore } from "../../src/adapters/s3/image-bucket.js";
import { createImageService } from "../../src/app/firmware-images.js";
import type { Actor } from "../../src/domain/actor.js";
import { FailedPreconditionError, NotFoundError, ValidationError } from "../../src/domain/errors.js";
import { initialReport, serializeReport } from "../../src/domain/task-report.js";
import { clockOf } from "../support/clock.js";
import { runningTask } from "../support/domain-fixtures.js";
import { freshStores } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

const ALICE: Actor = { name: "alice", source: "DECLARED", authenticated: false, subjectAltNames: [] };
const T0 = Date.UTC(2026, 11, 5, 3);

let drop: () => Promise<void>;
let stores: DynamoStores;
let s3: S3Client;
let objects: S3ImageObjectStore;
const bucket = `it-image-del-${randomUUID().slice(0, 8)}`;
const lines: string[] = [];

beforeAll(async () => {
  ({ stores, drop } = await freshStores(testEndpoint(), "imgdel"));
  s3 = createS3Client({ endpoint: testEndpoint() });
  await ensureBucket(s3, bucket);
  await s3.send(
    new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: "Enabled" } }),
  );
  objects = new S3ImageObjectStore(s3, bucket);
});
afterAll(() => drop());

const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
const api = () =>
  createImageService({
    images: stores.images,
    objects,
    users: { baselines: stores.policy, runs: stores.runs, tasks: stores.tasks },
    clock: clockOf(() => T0),
    newId: randomUUID,
    log: (line) => lines.push(line),
  });

async function upload(componentType: string, version: string, bytes: Buffer): Promise<void> {
  const key = { componentType, version, subTarget: "" };
  const begun = await api().beginImageUpload({ ...key, sizeBytes: bytes.length });
  expect((await fetch(begun.url, { method: "PUT", body: bytes })).status).toBe(200);
  await api().completeImageUpload(
    { ...key, sizeBytes: bytes.length, uploadId: begun.uploadId, sha256: sha(bytes) },
    ALICE,
  );
}

async function versionsOf(key: string): Promise<number> {
  const out = await s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: key }));
  return [...(out.Versions ?? []), ...(out.DeleteMarkers ?? [])].filter((v) => v.Key === key).length;
}

const key = (version: string) => ({ componentType: "COMPUTE", version, subTarget: "" });

describe("DeleteFirmwareImage", () => {
  it("refused while a baseline has its type and version; then the record and every object version go", async () => {
    const bytes = Buffer.from("COMPUTE 4.0.0 firmware");
    await upload("COMPUTE", "4.0.0", bytes);
    await upload("COMPUTE", "4.0.0", bytes); // the same bytes again: a second object version
    const objectKey = `images/COMPUTE/${sha(bytes)}`;
    expect(await versionsOf(objectKey)).toBe(2);
    await stores.policy.putBaselines([{ componentType: "COMPUTE", version: "4.0.0" }]);

    const refused = await api()
      .deleteImage(key("4.0.0"), ALICE)
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(FailedPreconditionError);
    expect((refused as Error).message).toBe(
      "firmware image COMPUTE 4.0.0 is in use: baseline COMPUTE 4.0.0 (model *, vendor *); change the baseline or let the runs and tasks end first",
    );
    expect(await stores.images.getImages([{ componentType: "COMPUTE", version: "4.0.0" }])).toHaveLength(1);
    expect(await versionsOf(objectKey)).toBe(2);

    await stores.policy.deleteBaseline({ componentType: "COMPUTE" });
    const done = await api().deleteImage(key("4.0.0"), ALICE);
    expect(done).toMatchObject({
      image: { componentType: "COMPUTE", version: "4.0.0", sha256: sha(bytes) },
      objectVersionsDeleted: 2,
    });
    expect(await stores.images.getImages([{ componentType: "COMPUTE", version: "4.0.0" }])).toEqual([]);
    expect(
      (await stores.images.listImages({ page: { offset: 0, limit: 100 } })).images.map((i) => i.version),
    ).not.toContain("4.0.0");
    expect(await versionsOf(objectKey)).toBe(0);
    expect(lines).toContain(
      `firmware: image COMPUTE 4.0.0 (sha256 ${sha(bytes)}) deleted by alice; 2 object version(s) of ${objectKey} deleted`,
    );

    const again = await api()
      .deleteImage(key("4.0.0"), ALICE)
      .catch((e: unknown) => e);
    expect(again).toBeInstanceOf(NotFoundError);
    expect((again as Error).message).toBe("no firmware image is registered for COMPUTE 4.0.0");
  });

  it("refused while a task that has not ended will flash it, naming the task; allowed once it ended", async () => {
    await upload("COMPUTE", "5.0.0", Buffer.from("COMPUTE 5.0.0 firmware"));
    const report = initialReport([{ id: "c-1", type: "COMPUTE" }], "5.0.0", false);
    const task = runningTask({
      id: randomUUID(),
      rackId: randomUUID(),
      componentIds: ["c-1"],
      report: serializeReport(report),
      createdAt: T0,
      updatedAt: T0,
    });
    await stores.tasks.createTask(task);
    const refused = await api()
      .deleteImage(key("5.0.0"), ALICE)
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(FailedPreconditionError);
    expect((refused as Error).message).toBe(
      `firmware image COMPUTE 5.0.0 is in use: task ${task.id} (RUNNING); change the baseline or let the runs and tasks end first`,
    );
    expect(
      await stores.tasks.saveTask(
        { ...task, status: "COMPLETED", updatedAt: T0 + 1, finishedAt: T0 + 1 },
        T0,
      ),
    ).toBe("saved");
    expect((await api().deleteImage(key("5.0.0"), ALICE)).objectVersionsDeleted).toBe(1);
  });

  it("an object another image record shares is kept for it, and still downloads", async () => {
    const bytes = Buffer.from("one file registered twice");
    await upload("COMPUTE", "6.0.0", bytes);
    await upload("COMPUTE", "6.0.0-b", bytes);
    const done = await api().deleteImage(key("6.0.0"), ALICE);
    expect(done.objectVersionsDeleted).toBe(0);
    const [kept] = await stores.images.getImages([{ componentType: "COMPUTE", version: "6.0.0-b" }]);
    const got = await fetch(await objects.presignGet(kept!.objectKey, 60));
    expect(sha(Buffer.from(await got.arrayBuffer()))).toBe(sha(bytes));
    expect(lines).toContain(
      `firmware: image COMPUTE 6.0.0 (sha256 ${sha(bytes)}) deleted by alice; its object ${kept!.objectKey} kept for COMPUTE 6.0.0-b`,
    );
  });

  it("an invalid key is InvalidArgument naming the fields", async () => {
    const err = await api()
      .deleteImage({ componentType: "COMPUTE", version: "", subTarget: "nvos" }, ALICE)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).violations.map((v) => v.field)).toEqual(["version", "sub_target"]);
  });
});
