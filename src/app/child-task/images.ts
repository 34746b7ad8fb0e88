/**
 * The image each update command carries: the catalog's record for the component's type, version
 * and parts (the rule of src/domain/firmware-images.ts, the one the create paths checked), as a
 * presigned GET valid until the wave's deadline, with its sha256 and size, always. One batched
 * read of the catalog per wave; one URL per distinct image.
 */
import type { FirmwareImageRef } from "../../domain/bmc-protocol.js";
import {
  candidateKeys,
  distinctNeeds,
  type ImageNeed,
  imageFor,
  imageKeyId,
  missingImagesRule,
} from "../../domain/firmware-images.js";
import type { ComponentType } from "../../domain/model.js";
import { StepError } from "../../domain/step-errors.js";
import type { FirmwareImageStore, ImageObjectStore } from "../ports.js";

/** What an update command always carries of its image. */
export type SentImage = Required<FirmwareImageRef>;

export interface CommandImageDeps {
  images: Pick<FirmwareImageStore, "getImages">;
  imageUrls: Pick<ImageObjectStore, "presignGet">;
}

/**
 * Component id → its image. An image the catalog does not have (only possible for a task created
 * before the check existed) fails the step with TaskMisconfigured naming the type and version:
 * nothing is flashed without its image.
 */
export async function commandImages(
  deps: CommandImageDeps,
  components: readonly { id: string; type: ComponentType; version: string; subTargets?: string[] }[],
  validSeconds: number,
): Promise<Map<string, SentImage>> {
  const needs = new Map<string, ImageNeed>(
    components.map((c) => [
      c.id,
      { componentType: c.type, version: c.version, subTargets: c.subTargets ?? [] },
    ]),
  );
  const distinct = distinctNeeds(needs.values());
  if (distinct.length === 0) return new Map();
  const found = await deps.images.getImages(distinct.flatMap(candidateKeys));
  const byKey = new Map(found.map((i) => [imageKeyId(i), i] as const));
  const missing = missingImagesRule(distinct, byKey);
  if (missing !== undefined) throw new StepError("TaskMisconfigured", missing);
  const urls = new Map<string, Promise<string>>();
  const out = new Map<string, SentImage>();
  for (const [id, need] of needs) {
    // missingImagesRule found every need served.
    const image = imageFor(need, byKey)!;
    const url = urls.get(image.objectKey) ?? deps.imageUrls.presignGet(image.objectKey, validSeconds);
    urls.set(image.objectKey, url);
    out.set(id, { uri: await url, sha256: image.sha256, size: image.sizeBytes });
  }
  return out;
}
