/**
 * In-memory firmware image catalogs (src/app/ports/images.ts):
 *   - `MemoryFirmwareImageStore`: the records, with the DynamoDB adapter's observable behaviour
 *     (registered once per key, listed in type, version, sub-target order);
 *   - `everyImage`: a catalog that has an image for every key asked, for the use-case tables
 *     whose subject is not the catalog (the rule itself is tested against the real store and
 *     the memory one).
 */
import { createHash } from "node:crypto";
import { compareImages } from "../../src/adapters/dynamodb/image-store.js";
import type { FirmwareImageStore } from "../../src/app/ports.js";
import {
  type FirmwareImage,
  type ImageKey,
  imageKeyId,
  imageObjectKey,
} from "../../src/domain/firmware-images.js";
import type { Page } from "../../src/domain/list-queries.js";
import type { ComponentType } from "../../src/domain/model.js";

/** A record for `key` as if `bytes` had been uploaded (default: the key's own text). */
export function imageRecord(key: ImageKey, bytes: string = imageKeyId(key), at = 0): FirmwareImage {
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  return {
    ...key,
    objectKey: imageObjectKey(key.componentType, sha256),
    sizeBytes: Buffer.byteLength(bytes),
    sha256,
    uploadedBy: { name: "test", source: "DECLARED", authenticated: false },
    uploadedAt: at,
  };
}

export class MemoryFirmwareImageStore implements FirmwareImageStore {
  private readonly images = new Map<string, FirmwareImage>();
  /** Reads of `getImages`, so a test can say how many lookups a create made. */
  getCalls = 0;

  constructor(initial: readonly FirmwareImage[] = []) {
    for (const i of initial) this.images.set(imageKeyId(i), structuredClone(i));
  }

  async getImages(keys: readonly ImageKey[]): Promise<FirmwareImage[]> {
    this.getCalls++;
    const ids = [...new Set(keys.map(imageKeyId))];
    return ids.flatMap((id) => {
      const image = this.images.get(id);
      return image === undefined ? [] : [structuredClone(image)];
    });
  }

  async registerImage(
    image: FirmwareImage,
  ): Promise<{ kind: "registered" } | { kind: "exists"; image: FirmwareImage }> {
    const id = imageKeyId(image);
    const existing = this.images.get(id);
    if (existing !== undefined) return { kind: "exists", image: structuredClone(existing) };
    this.images.set(id, structuredClone(image));
    return { kind: "registered" };
  }

  async deleteImage(key: ImageKey, sha256: string): Promise<FirmwareImage | undefined> {
    const id = imageKeyId(key);
    const image = this.images.get(id);
    if (image === undefined || image.sha256 !== sha256) return undefined;
    this.images.delete(id);
    return structuredClone(image);
  }

  async listImages(query: { componentType?: ComponentType; page: Page }) {
    const all = [...this.images.values()]
      .filter((i) => query.componentType === undefined || i.componentType === query.componentType)
      .sort(compareImages);
    return {
      images: all
        .slice(query.page.offset, query.page.offset + query.page.limit)
        .map((i) => structuredClone(i)),
      total: all.length,
    };
  }
}

/** A catalog with an image for every key: for tables about something else than images. */
export const everyImage: Pick<FirmwareImageStore, "getImages"> = {
  getImages: async (keys) => keys.map((k) => imageRecord(k)),
};
