/**
 * The firmware image catalog on the local stack: its bucket on moto (moto serves S3 on the same
 * endpoint as DynamoDB) and the images the stack seeds at start, so the demo fleet and the
 * examples/ can be flashed: for every component type, every version the demo fleet runs, every
 * version examples/ names (EXAMPLE_VERSIONS, kept true by test/unit/local-image-catalog.test.ts),
 * every baseline's version and whatever the caller adds. The bytes are small and deterministic
 * (`flow local firmware COMPUTE 2.0.0`, repeated to 4 KiB), and a seeded image is what an upload
 * would have left (`seedImages`: the same record and content-addressed object, the key checked
 * as the admin service checks it). Seeding again writes nothing (one listing and one batched read
 * find it all there), and re-creates the objects of a moto that lost them (restarted on a data
 * dir: its S3 is in memory).
 */

import { createHash } from "node:crypto";
import { CreateBucketCommand, type S3Client } from "@aws-sdk/client-s3";
import { isNamed } from "../src/adapters/dynamodb/db.js";
import type { DynamoFirmwareImageStore } from "../src/adapters/dynamodb/image-store.js";
import type { S3ImageObjectStore } from "../src/adapters/s3/image-bucket.js";
import type { Clock } from "../src/app/ports.js";
import type { Actor } from "../src/domain/actor.js";
import {
  type FirmwareImage,
  imageKeyId,
  imageObjectKey,
  validateBeginUpload,
} from "../src/domain/firmware-images.js";
import { COMPONENT_TYPES, type ComponentType } from "../src/domain/model.js";
import { DEMO_FIRMWARE } from "./demo-fleet.js";
import { firmwareImageHeader } from "./redfish-images.js";

/** Every `targetVersion` examples/ names. */
export const EXAMPLE_VERSIONS = ["1.3.0", "2.0.0", "3.1.4"] as const;

/** Who the seeded images were uploaded by. */
export const SEEDER: Actor = {
  name: "local-stack",
  source: "DECLARED",
  authenticated: false,
  subjectAltNames: [],
};

const IMAGE_BYTES = 4096;

/** A bucket name from the table prefix: `flow-` → `flow-images`; lowercase, S3's characters only. */
export function localImageBucket(tablePrefix: string): string {
  const cleaned = `${tablePrefix}images`.toLowerCase().replace(/[^a-z0-9.-]/g, "-");
  return cleaned.slice(-63).replace(/^[^a-z0-9]+/, "");
}

export async function ensureBucket(s3: S3Client, bucket: string): Promise<void> {
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (error) {
    if (!isNamed(error, "BucketAlreadyOwnedByYou") && !isNamed(error, "BucketAlreadyExists")) throw error;
  }
}

/**
 * The deterministic bytes of a seeded image: the package header the Redfish emulator reads the
 * version from (`FLOWFW <version>`, as a real BMC reads its package's), then a line naming the type
 * and version, repeated.
 */
export function seedBytes(type: ComponentType, version: string): Buffer {
  const bytes = Buffer.alloc(IMAGE_BYTES, Buffer.from(`flow local firmware ${type} ${version}\n`));
  firmwareImageHeader(version).copy(bytes);
  return bytes;
}

/** Every type × (demo fleet versions, example versions, `more`), each once. */
export function seedVersions(
  more: readonly string[] = [],
): { componentType: ComponentType; version: string }[] {
  const out: { componentType: ComponentType; version: string }[] = [];
  for (const componentType of COMPONENT_TYPES) {
    const versions = new Set([...DEMO_FIRMWARE[componentType], ...EXAMPLE_VERSIONS, ...more]);
    for (const version of versions) out.push({ componentType, version });
  }
  return out;
}

/**
 * Puts each image's bytes at their content-addressed key and registers its record: the record and
 * the object an upload through the admin service (begin, PUT, complete) leaves, as every e2e stack
 * and every life of a restarted one seeds its catalog, in a few requests for the whole catalog
 * rather than that path's eight an image: one listing of the bucket, a PUT for each object it
 * lacks, one batched read of the records and a transaction per 25 new ones (`registerImages`:
 * each record conditional on its key being free, as an upload's). The key is checked as
 * BeginFirmwareImageUpload checks it; a version registered with other bytes fails the start, as
 * the upload would. Returns how many were new.
 */
export async function seedImages(
  deps: {
    images: Pick<DynamoFirmwareImageStore, "getImages" | "registerImages">;
    objects: Pick<S3ImageObjectStore, "presignPut" | "sizesUnder">;
    clock: Clock;
  },
  images: readonly { componentType: ComponentType; version: string }[],
): Promise<number> {
  const uploadedAt = deps.clock.now();
  const seeds = images.map((next) => {
    const bytes = seedBytes(next.componentType, next.version);
    const checked = validateBeginUpload({ ...next, subTarget: "", sizeBytes: bytes.length });
    if (!checked.ok)
      throw new Error(
        `seeding image ${next.componentType} ${next.version}: ${checked.violations.map((v) => `${v.field}: ${v.rule}`).join("; ")}`,
      );
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    const image: FirmwareImage = {
      ...checked.value.key,
      objectKey: imageObjectKey(next.componentType, sha256),
      sizeBytes: bytes.length,
      sha256,
      uploadedBy: { name: SEEDER.name, source: SEEDER.source, authenticated: SEEDER.authenticated },
      uploadedAt,
    };
    return { image, bytes };
  });
  if (seeds.length === 0) return 0;

  // The bytes first, so a record never names an object that is not there (a bucket that lost
  // them, a restarted moto's, gets them back: the same key, the same bytes). The key is the
  // bytes' sha256, so an object there of the right size is these bytes.
  const stored = await deps.objects.sizesUnder(commonPrefix(seeds.map((s) => s.image.objectKey)));
  const missing = seeds.filter((s) => stored.get(s.image.objectKey) !== s.bytes.length);
  const put = async () => {
    for (let next = missing.shift(); next !== undefined; next = missing.shift()) {
      const url = await deps.objects.presignPut(next.image.objectKey, next.bytes.length, 300);
      const answer = await fetch(url, { method: "PUT", body: next.bytes });
      if (!answer.ok)
        throw new Error(
          `seeding image ${next.image.componentType} ${next.image.version}: PUT answered HTTP ${answer.status}`,
        );
    }
  };
  // A few at a time: moto serves one request at a time anyway.
  await Promise.all([put(), put(), put()]);

  const registered = new Map(
    (await deps.images.getImages(seeds.map((s) => s.image))).map((i) => [imageKeyId(i), i]),
  );
  const fresh = seeds.map((s) => s.image).filter((image) => !registered.has(imageKeyId(image)));
  const outcomes = await deps.images.registerImages(fresh);
  for (const outcome of outcomes)
    if (outcome.kind === "exists") registered.set(imageKeyId(outcome.image), outcome.image);
  for (const { image } of seeds) {
    const there = registered.get(imageKeyId(image));
    if (there !== undefined && there.sha256 !== image.sha256)
      throw new Error(
        `seeding image ${image.componentType} ${image.version}: already registered with other bytes (sha256 ${there.sha256})`,
      );
  }
  return outcomes.filter((o) => o.kind === "registered").length;
}

/** The longest prefix every key starts with. */
function commonPrefix(keys: readonly string[]): string {
  let prefix = keys[0] ?? "";
  for (const key of keys) while (!key.startsWith(prefix)) prefix = prefix.slice(0, -1);
  return prefix;
}
