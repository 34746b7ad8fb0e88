/**
 * The firmware image catalog on moto: the S3 adapter (presigned PUT of a fixed size, presigned
 * GET, streamed digest, copy, delete), the DynamoDB records (registered once per key, listed in
 * order), the upload use case on both (verify, register, immutability, the same bytes a no-op)
 * and what an update command carries (a presigned GET that really downloads the bytes, which hash
 * to the command's sha256, with the size).
 */

import { createHash, randomUUID } from "node:crypto";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBucket } from "../../local/image-catalog.js";
import { compareImages } from "../../src/adapters/dynamodb/image-store.js";
import type { DynamoStores } from "../../src/adapters/dynamodb/index.js";
import { createS3Client, S3ImageObjectStore } from "../../src/adapters/s3/image-bucket.js";
import { commandImages } from "../../src/app/child-task/images.js";
import { createImageService } from "../../src/app/firmware-images.js";
import type { Actor } from "../../src/domain/actor.js";
import { FailedPreconditionError, ValidationError } from "../../src/domain/errors.js";
import { StepError } from "../../src/domain/step-errors.js";
import { clockOf } from "../support/clock.js";
import { imageRecord } from "../support/memory-images.js";
import { freshStores, recordCommands } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

const ALICE: Actor = { name: "alice", source: "DECLARED", authenticated: false, subjectAltNames: [] };
const T0 = Date.UTC(2026, 11, 4, 12);

let drop: () => Promise<void>;
let stores: DynamoStores;
let client: DynamoDBClient;
let objects: S3ImageObjectStore;
const bucket = `it-images-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  ({ stores, client, drop } = await freshStores(testEndpoint(), "images"));
  const s3 = createS3Client({ endpoint: testEndpoint() });
  await ensureBucket(s3, bucket);
  objects = new S3ImageObjectStore(s3, bucket);
});
afterAll(() => drop());

const sha = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");
let ids = 0;
const service = () =>
  createImageService({
    images: stores.images,
    objects,
    users: { baselines: stores.policy, runs: stores.runs, tasks: stores.tasks },
    clock: clockOf(() => T0),
    newId: () => `00000000-0000-4000-8000-${String(++ids).padStart(12, "0")}`,
  });

/** Begin, PUT `bytes`, complete with `declared` (default: their own digest). */
async function upload(
  key: { componentType: string; version: string; subTarget?: string },
  bytes: Buffer,
  declared?: string,
) {
  const api = service();
  const input = { componentType: key.componentType, version: key.version, subTarget: key.subTarget ?? "" };
  const begun = await api.beginImageUpload({ ...input, sizeBytes: bytes.length });
  const put = await fetch(begun.url, { method: "PUT", body: bytes });
  expect(put.status).toBe(200);
  return api.completeImageUpload(
    { ...input, sizeBytes: bytes.length, uploadId: begun.uploadId, sha256: declared ?? sha(bytes) },
    ALICE,
  );
}

describe("S3 image bucket on moto", () => {
  it("a presigned PUT stores exactly the bytes; sizeOf, sha256Of (streamed), copy, a presigned GET and delete see them", async () => {
    const bytes = Buffer.alloc(3 * 1024 * 1024 + 17, "firmware");
    const url = await objects.presignPut("uploads/a", bytes.length, 60);
    expect(url).toMatch(/X-Amz-Expires=60/);
    expect((await fetch(url, { method: "PUT", body: bytes })).status).toBe(200);
    expect(await objects.sizeOf("uploads/a")).toBe(bytes.length);
    expect(await objects.sha256Of("uploads/a")).toBe(sha(bytes));
    await objects.copy("uploads/a", "images/COMPUTE/x");
    const got = await fetch(await objects.presignGet("images/COMPUTE/x", 60));
    expect(sha(Buffer.from(await got.arrayBuffer()))).toBe(sha(bytes));
    await objects.delete("uploads/a");
    await objects.delete("uploads/a");
    expect(await objects.sizeOf("uploads/a")).toBeUndefined();
  });
});

describe("firmware image store on moto", () => {
  it("registers once per key (a second image of the key reads the first), and lists by type, version, sub-target", async () => {
    const first = imageRecord({ componentType: "NVSWITCH", version: "2.0.0" }, "one");
    expect(await stores.images.registerImage(first)).toEqual({ kind: "registered" });
    const other = imageRecord({ componentType: "NVSWITCH", version: "2.0.0" }, "two");
    expect(await stores.images.registerImage(other)).toEqual({ kind: "exists", image: first });
    const bios = imageRecord({ componentType: "COMPUTE", version: "2.0.0", subTarget: "bios" });
    const whole = imageRecord({ componentType: "COMPUTE", version: "2.0.0" });
    await stores.images.registerImage(bios);
    await stores.images.registerImage(whole);
    expect(await stores.images.listImages({ page: { offset: 0, limit: 10 } })).toEqual({
      images: [whole, bios, first],
      total: 3,
    });
    expect(
      await stores.images.listImages({ componentType: "COMPUTE", page: { offset: 1, limit: 10 } }),
    ).toEqual({
      images: [bios],
      total: 2,
    });
    expect(await stores.images.getImages([whole, { componentType: "CDU", version: "9" }, whole])).toEqual([
      whole,
    ]);
  });

  it("registerImages: 30 images in two transactions, each image as registerImage would; a transaction a registered key cancels registers its images one by one", async () => {
    const images = Array.from({ length: 30 }, (_, i) =>
      imageRecord({ componentType: "UMS", version: `8.${i}.0` }),
    );
    // Registered already, with other bytes: the second transaction (images 25-29) is cancelled.
    const first = imageRecord({ componentType: "UMS", version: "8.27.0" }, "earlier bytes");
    expect(await stores.images.registerImage(first)).toEqual({ kind: "registered" });
    const commands = recordCommands(client);

    const outcomes = await stores.images.registerImages(images);

    expect(outcomes).toEqual(
      images.map((_, i) => (i === 27 ? { kind: "exists", image: first } : { kind: "registered" })),
    );
    expect(commands).toEqual([
      "PutItemCommand",
      "TransactWriteItemsCommand",
      "TransactWriteItemsCommand",
      ...[25, 26, 27, 28, 29].flatMap((i) => [
        "TransactWriteItemsCommand",
        ...(i === 27 ? ["BatchGetItemCommand"] : []),
      ]),
    ]);
    const listed = await stores.images.listImages({ componentType: "UMS", page: { offset: 0, limit: 100 } });
    const expected = [...images.slice(0, 27), first, ...images.slice(28)];
    expect(listed.images.filter((i) => i.version.startsWith("8."))).toEqual(
      [...expected].sort((a, b) => compareImages(a, b)),
    );
    expect(await stores.images.getImages(images)).toEqual(expect.arrayContaining(expected));
    expect(await stores.images.registerImages([])).toEqual([]);
    await expect(stores.images.registerImages([images[0]!, images[0]!])).rejects.toThrow(
      "registerImages needs distinct image keys",
    );
  });
});

describe("uploading an image (begin, PUT, complete)", () => {
  it("registers the verified bytes under their digest, uploaded by the caller; the same bytes again are a no-op", async () => {
    const bytes = Buffer.from("compute firmware 1.3.0");
    const done = await upload({ componentType: "COMPUTE", version: "1.3.0" }, bytes);
    expect(done).toEqual({
      alreadyRegistered: false,
      image: {
        componentType: "COMPUTE",
        version: "1.3.0",
        objectKey: `images/COMPUTE/${sha(bytes)}`,
        sizeBytes: bytes.length,
        sha256: sha(bytes),
        uploadedBy: { name: "alice", source: "DECLARED", authenticated: false },
        uploadedAt: T0,
      },
    });
    expect(await objects.sha256Of(done.image.objectKey)).toBe(sha(bytes));
    const again = await upload({ componentType: "COMPUTE", version: "1.3.0" }, bytes);
    expect(again).toEqual({ alreadyRegistered: true, image: done.image });
    // Every staged object is gone: only the content-addressed one stays.
    expect(await objects.sizeOf("uploads/00000000-0000-4000-8000-000000000001")).toBeUndefined();
  });

  it("refuses other bytes for a registered key: at begin when the size differs, at complete when the digest does", async () => {
    await upload({ componentType: "CDU", version: "5.0" }, Buffer.from("aaaa"));
    const api = service();
    const other = { componentType: "CDU", version: "5.0", subTarget: "", sizeBytes: 5 };
    await expect(api.beginImageUpload(other)).rejects.toThrow(
      new FailedPreconditionError(
        "firmware image CDU 5.0 is already registered with other bytes (4 bytes, not 5); an image never changes: upload it under a new version",
      ),
    );
    await expect(upload({ componentType: "CDU", version: "5.0" }, Buffer.from("bbbb"))).rejects.toThrow(
      new FailedPreconditionError(
        `firmware image CDU 5.0 is already registered with other bytes (sha256 ${sha("aaaa")}); an image never changes: upload it under a new version`,
      ),
    );
    expect((await stores.images.getImages([{ componentType: "CDU", version: "5.0" }]))[0]?.sha256).toBe(
      sha("aaaa"),
    );
  });

  it("refuses a complete whose stored bytes do not hash to the declared sha256, or that has no bytes", async () => {
    const bytes = Buffer.from("ums firmware");
    const wrong = "0".repeat(64);
    await expect(upload({ componentType: "UMS", version: "1.0.0" }, bytes, wrong)).rejects.toThrow(
      /^upload [0-9a-f-]{36}: the stored bytes hash to sha256 [0-9a-f]{64}, not the 0{64} declared \(corrupted in transit\?\)$/,
    );
    expect(await stores.images.getImages([{ componentType: "UMS", version: "1.0.0" }])).toEqual([]);
    const api = service();
    const begun = await api.beginImageUpload({
      componentType: "UMS",
      version: "1.0.0",
      subTarget: "",
      sizeBytes: 3,
    });
    await expect(
      api.completeImageUpload(
        {
          componentType: "UMS",
          version: "1.0.0",
          subTarget: "",
          sizeBytes: 3,
          uploadId: begun.uploadId,
          sha256: sha("abc"),
        },
        ALICE,
      ),
    ).rejects.toThrow(
      new FailedPreconditionError(
        `upload ${begun.uploadId} has no bytes: PUT the file to the URL BeginFirmwareImageUpload returned first`,
      ),
    );
  });

  it("binds the size: the PUT URL signs Content-Length (S3 refuses another), and complete refuses a staged object of another size", async () => {
    const api = service();
    const key = { componentType: "UMS", version: "2.0.0", subTarget: "" };
    const begun = await api.beginImageUpload({ ...key, sizeBytes: 10 });
    expect(new URL(begun.url).searchParams.get("X-Amz-SignedHeaders")).toBe("content-length;host");
    // moto does not check signatures, so the short body lands; the server's own check refuses it.
    await fetch(begun.url, { method: "PUT", body: Buffer.from("only nine") });
    await expect(
      api.completeImageUpload(
        { ...key, sizeBytes: 10, uploadId: begun.uploadId, sha256: sha("only nine") },
        ALICE,
      ),
    ).rejects.toThrow(
      new FailedPreconditionError(`upload ${begun.uploadId} holds 9 bytes, not the 10 declared`),
    );
  });

  it("validates every field at once, naming it", async () => {
    await expect(
      service().beginImageUpload({
        componentType: "COMPONENT_TYPE_UNKNOWN",
        version: " 1.0",
        subTarget: "bios",
        sizeBytes: 0,
      }),
    ).rejects.toThrow(
      new ValidationError([
        { field: "component_type", rule: "must be a known component type (got COMPONENT_TYPE_UNKNOWN)" },
        {
          field: "version",
          rule: `must be letters, digits, '.', '_', '+' and '-', starting with a letter or digit (got " 1.0")`,
        },
        {
          field: "size_bytes",
          rule: "must be an integer from 1 to 5368709120 bytes (5 GiB, one S3 PUT) (got 0)",
        },
      ]),
    );
  });
});

describe("the image an update command carries", () => {
  it("is a presigned GET valid for the wave that downloads the registered bytes, with their sha256 and size", async () => {
    const bytes = Buffer.alloc(100_000, "powershelf 3.1.0 ");
    const done = await upload({ componentType: "POWERSHELF", version: "3.1.0" }, bytes);
    const images = await commandImages(
      { images: stores.images, imageUrls: objects },
      [
        { id: "c-1", type: "POWERSHELF", version: "3.1.0" },
        { id: "c-2", type: "POWERSHELF", version: "3.1.0", subTargets: ["psu"] },
      ],
      900,
    );
    const one = images.get("c-1");
    expect(one).toEqual({
      uri: expect.stringMatching(/X-Amz-Expires=900/),
      sha256: sha(bytes),
      size: bytes.length,
    });
    // A one-part flash with no image of its own takes the whole-component image.
    expect(images.get("c-2")).toEqual(one);
    const fetched = Buffer.from(await (await fetch(one!.uri)).arrayBuffer());
    expect(fetched.length).toBe(done.image.sizeBytes);
    expect(sha(fetched)).toBe(one!.sha256);
  });

  it("fails the step (TaskMisconfigured) naming the type and version when the catalog has no image", async () => {
    await expect(
      commandImages(
        { images: stores.images, imageUrls: objects },
        [{ id: "c", type: "TORSWITCH", version: "7.7.7" }],
        60,
      ),
    ).rejects.toThrow(
      new StepError(
        "TaskMisconfigured",
        "no firmware image is registered for TORSWITCH 7.7.7; upload one with flowctl firmware upload",
      ),
    );
  });
});
