/**
 * The local stack's image seed on moto (local/image-catalog.ts `seedImages`): it leaves what an
 * upload through the admin service (begin, PUT, complete) leaves, in two requests an image:
 *   - the same record (key, content-addressed object key, size, sha256) as the upload of the same
 *     bytes, uploaded by `local-stack`, and the object's bytes at that key;
 *   - seeding again registers nothing and puts back bytes the bucket lost;
 *   - a version registered with other bytes, or a version an upload would refuse, fails the seed,
 *     naming the type and version.
 */
import { createHash, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBucket, SEEDER, seedBytes, seedImages } from "../../local/image-catalog.js";
import type { DynamoStores } from "../../src/adapters/dynamodb/index.js";
import { createS3Client, S3ImageObjectStore } from "../../src/adapters/s3/image-bucket.js";
import { createImageService } from "../../src/app/firmware-images.js";
import { clockOf } from "../support/clock.js";
import { imageRecord } from "../support/memory-images.js";
import { freshStores } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

const T0 = Date.UTC(2026, 11, 5, 8);

let drop: () => Promise<void>;
let stores: DynamoStores;
let objects: S3ImageObjectStore;
const bucket = `it-seed-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  ({ stores, drop } = await freshStores(testEndpoint(), "seed"));
  const s3 = createS3Client({ endpoint: testEndpoint() });
  await ensureBucket(s3, bucket);
  objects = new S3ImageObjectStore(s3, bucket);
});
afterAll(() => drop());

const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
const seed = (images: { componentType: "COMPUTE" | "CDU" | "UMS"; version: string }[]) =>
  seedImages({ images: stores.images, objects, clock: clockOf(() => T0) }, images);

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

  it("seeding again registers nothing and puts back the bytes a bucket lost", async () => {
    const images = [
      { componentType: "CDU" as const, version: "7.1.0" },
      { componentType: "UMS" as const, version: "7.1.0" },
    ];
    expect(await seed(images)).toBe(2);
    const objectKey = `images/CDU/${sha(seedBytes("CDU", "7.1.0"))}`;
    await objects.delete(objectKey);
    expect(await objects.sizeOf(objectKey)).toBeUndefined();
    expect(await seed(images)).toBe(0);
    expect(await objects.sha256Of(objectKey)).toBe(sha(seedBytes("CDU", "7.1.0")));
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
