/**
 * The local stack's image seed on moto (local/image-catalog.ts `seedImages`): it leaves what an
 * upload through the admin service (begin, PUT, complete) leaves, in a few requests for the whole
 * catalog:
 *   - the same record (key, content-addressed object key, size, sha256) as the upload of the same
 *     bytes, uploaded by `local-stack`, and the object's bytes at that key;
 *   - seeding again registers nothing and puts back bytes the bucket lost, and only those;
 *   - the whole catalog costs one listing, a PUT per missing object, one batched read and a
 *     transaction per 25 new records; seeding it again, one listing and one read;
 *   - a version registered with other bytes, or a version an upload would refuse, fails the seed,
 *     naming the type and version.
 */
import { createHash, randomUUID } from "node:crypto";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBucket, SEEDER, seedBytes, seedImages, seedVersions } from "../../local/image-catalog.js";
import type { DynamoStores } from "../../src/adapters/dynamodb/index.js";
import { createS3Client, S3ImageObjectStore } from "../../src/adapters/s3/image-bucket.js";
import { createImageService } from "../../src/app/firmware-images.js";
import type { ComponentType } from "../../src/domain/model.js";
import { clockOf } from "../support/clock.js";
import { imageRecord } from "../support/memory-images.js";
import { freshStores, recordCommands } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

const T0 = Date.UTC(2026, 11, 5, 8);

let drop: () => Promise<void>;
let stores: DynamoStores;
let client: DynamoDBClient;
let s3: S3Client;
let objects: S3ImageObjectStore;
const bucket = `it-seed-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  ({ stores, client, drop } = await freshStores(testEndpoint(), "seed"));
  s3 = createS3Client({ endpoint: testEndpoint() });
  await ensureBucket(s3, bucket);
  objects = new S3ImageObjectStore(s3, bucket);
});
afterAll(() => drop());

const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
/** The object PUTs a seed made (presigned, so not S3 client commands). */
let puts: string[] = [];
const seed = (images: readonly { componentType: ComponentType; version: string }[]) =>
  seedImages(
    {
      images: stores.images,
      objects: {
        sizesUnder: (prefix) => objects.sizesUnder(prefix),
        presignPut: (key, size, seconds) => {
          puts.push(key);
          return objects.presignPut(key, size, seconds);
        },
      },
      clock: clockOf(() => T0),
    },
    images,
  );

describe("seedImages on moto", () => {
  it("registers what the admin service's upload of the same bytes registers, uploaded by local-stack, the bytes at its object key", async () => {
    expect(await seed([{ componentType: "COMPUTE", version: "7.0.0" }])).toBe(1);
    const [seeded] = await stores.images.getImages([
      { componentType: "COMPUTE", version: "7.0.0", subTarget: "" },
    ]);

    // The same bytes uploaded under another version, through the admin service.
    const bytes = seedBytes("COMPUTE", "7.0.0");
    const api = createImageService({
      images: stores.images,
      objects,
      users: { baselines: stores.policy, runs: stores.runs, tasks: stores.tasks },
      clock: clockOf(() => T0),
      newId: randomUUID,
    });
    const key = { componentType: "COMPUTE", version: "7.0.1", subTarget: "" };
    const begun = await api.beginImageUpload({ ...key, sizeBytes: bytes.length });
    expect((await fetch(begun.url, { method: "PUT", body: bytes })).status).toBe(200);
    const uploaded = await api.completeImageUpload(
      { ...key, sizeBytes: bytes.length, uploadId: begun.uploadId, sha256: sha(bytes) },
      SEEDER,
    );

    expect(seeded).toEqual({ ...uploaded.image, version: "7.0.0" });
    expect(seeded).toEqual({
      componentType: "COMPUTE",
      version: "7.0.0",
      objectKey: `images/COMPUTE/${sha(bytes)}`,
      sizeBytes: 4096,
      sha256: sha(bytes),
      uploadedBy: { name: "local-stack", source: "DECLARED", authenticated: false },
      uploadedAt: T0,
    });
    expect(await objects.sha256Of(`images/COMPUTE/${sha(bytes)}`)).toBe(sha(bytes));
  });

  it("seeding again registers nothing and puts back the bytes a bucket lost, and only those", async () => {
    const images = [
      { componentType: "CDU" as const, version: "7.1.0" },
      { componentType: "UMS" as const, version: "7.1.0" },
    ];
    expect(await seed(images)).toBe(2);
    const objectKey = `images/CDU/${sha(seedBytes("CDU", "7.1.0"))}`;
    await objects.delete(objectKey);
    expect(await objects.sizeOf(objectKey)).toBeUndefined();
    puts = [];
    expect(await seed(images)).toBe(0);
    expect(puts).toEqual([objectKey]);
    expect(await objects.sha256Of(objectKey)).toBe(sha(seedBytes("CDU", "7.1.0")));
  });

  it("the whole catalog in a few requests: one listing, a PUT per missing object, one batched read, a transaction per 25 new records; seeding again only reads", async () => {
    const images = seedVersions(["7.5.0", "7.6.0"]);
    // More than one transaction's worth.
    expect(images.length).toBeGreaterThan(25);
    const dynamo = recordCommands(client);
    const s3Commands = recordCommands(s3);
    puts = [];

    expect(await seed(images)).toBe(images.length);

    expect(puts).toHaveLength(images.length);
    // Presigning runs the client's middleware too (sending nothing): the PUTs are `puts`.
    const sent = () => s3Commands.filter((c) => c !== "PutObjectCommand");
    expect(sent()).toEqual(["ListObjectsV2Command"]);
    expect(dynamo).toEqual([
      "BatchGetItemCommand",
      "PutItemCommand",
      ...Array(Math.ceil(images.length / 25)).fill("TransactWriteItemsCommand"),
    ]);
    const registered = await stores.images.getImages(images.map((i) => ({ ...i, subTarget: "" })));
    expect(registered).toHaveLength(images.length);
    for (const image of registered) {
      const bytes = seedBytes(image.componentType, image.version);
      expect(image).toMatchObject({
        sha256: sha(bytes),
        objectKey: `images/${image.componentType}/${sha(bytes)}`,
      });
      expect(await objects.sizeOf(image.objectKey)).toBe(bytes.length);
    }

    dynamo.length = 0;
    s3Commands.length = 0;
    puts = [];
    expect(await seed(images)).toBe(0);
    expect({ puts, s3Commands: sent(), dynamo }).toEqual({
      puts: [],
      s3Commands: ["ListObjectsV2Command"],
      dynamo: ["BatchGetItemCommand"],
    });
  });

  it("a version registered with other bytes fails the seed, naming it; so does a version an upload would refuse", async () => {
    const other = imageRecord({ componentType: "UMS", version: "7.2.0", subTarget: "" }, "other bytes");
    expect(await stores.images.registerImage(other)).toEqual({ kind: "registered" });
    await expect(seed([{ componentType: "UMS", version: "7.2.0" }])).rejects.toThrow(
      `seeding image UMS 7.2.0: already registered with other bytes (sha256 ${other.sha256})`,
    );
    await expect(seed([{ componentType: "UMS", version: "" }])).rejects.toThrow(
      /^seeding image UMS : version: /,
    );
  });
});
