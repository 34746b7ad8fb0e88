/**
 * The firmware image catalog on the local stack: its bucket on moto (moto serves S3 on the same
 * endpoint as DynamoDB) and the images the stack seeds at start, so the demo fleet and the
 * examples/ can be flashed: for every component type, every version the demo fleet runs, every
 * version examples/ names (EXAMPLE_VERSIONS, kept true by test/unit/local-image-catalog.test.ts),
 * every baseline's version and whatever the caller adds. The bytes are small and deterministic
 * (`flow local firmware COMPUTE 2.0.0`, repeated to 4 KiB), and they go in as a user's would:
 * through the admin service's upload (begin, PUT to the presigned URL, complete), so a seeded
 * image is exactly an uploaded one. Seeding again is a no-op (the same bytes), and re-creates
 * the objects of a moto that lost them (restarted on a data dir: its S3 is in memory).
 */

import { createHash } from "node:crypto";
import { CreateBucketCommand, type S3Client } from "@aws-sdk/client-s3";
import { isNamed } from "../src/adapters/dynamodb/db.js";
import type { ImagesApi } from "../src/app/api.js";
import type { Actor } from "../src/domain/actor.js";
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

/** Uploads each image through the admin service's API; returns how many were new. */
export async function seedImages(
  api: Pick<ImagesApi, "beginImageUpload" | "completeImageUpload">,
  images: readonly { componentType: ComponentType; version: string }[],
): Promise<number> {
  let registered = 0;
  // A few at a time: moto serves one request at a time anyway.
  const queue = [...images];
  const worker = async () => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      const bytes = seedBytes(next.componentType, next.version);
      const key = { componentType: next.componentType, version: next.version, subTarget: "" };
      const begun = await api.beginImageUpload({ ...key, sizeBytes: bytes.length });
      const put = await fetch(begun.url, { method: "PUT", body: bytes });
      if (!put.ok)
        throw new Error(
          `seeding image ${next.componentType} ${next.version}: PUT answered HTTP ${put.status}`,
        );
      const sha256 = createHash("sha256").update(bytes).digest("hex");
      const done = await api.completeImageUpload(
        { ...key, sizeBytes: bytes.length, uploadId: begun.uploadId, sha256 },
        SEEDER,
      );
      if (!done.alreadyRegistered) registered += 1;
    }
  };
  await Promise.all([worker(), worker(), worker()]);
  return registered;
}
