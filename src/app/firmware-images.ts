/**
 * The firmware image catalog's use cases (the admin service's BeginFirmwareImageUpload,
 * CompleteFirmwareImageUpload, ListFirmwareImages, and DeleteFirmwareImage in image-deletion.ts) and the one check every create path and
 * every baseline change makes: `requireImages`, nothing is flashed without its image.
 *
 * An upload, step by step:
 *   1. begin: the request is validated; an image already registered for the key with another
 *      size is refused at once (other bytes); else a presigned PUT of exactly that size to a
 *      fresh staging key `uploads/<upload id>` is returned;
 *   2. the client PUTs the bytes, hashing them as they stream;
 *   3. complete: the staged object must have the size, and its bytes (read back, streamed) the
 *      sha256, the client declares; then it is copied to its content-addressed key and the record
 *      is written with one conditional write: an image already registered for the key with the
 *      same sha256 makes the upload a no-op, with another one it is refused. The staged object is
 *      deleted either way (the bucket's lifecycle rule removes abandoned ones).
 */
import { FailedPreconditionError, ValidationError } from "../domain/errors.js";
import {
  candidateKeys,
  describeImageKey,
  distinctNeeds,
  type FirmwareImage,
  type ImageKey,
  type ImageNeed,
  imageKeyId,
  imageObjectKey,
  missingImagesRule,
  stagingObjectKey,
  validateBeginUpload,
  validateCompleteUpload,
} from "../domain/firmware-images.js";
import type { ImagesApi } from "./api.js";
import { deleteImage, type ImageUsersSource } from "./image-deletion.js";
import type { Clock, FirmwareImageStore, ImageObjectStore } from "./ports.js";

/** How long a begin's PUT URL stays valid: long enough for 5 GiB over a slow link. */
export const UPLOAD_URL_SECONDS = 3600;

export interface ImagesDeps {
  images: FirmwareImageStore;
  objects: ImageObjectStore;
  /** What could still need an image (DeleteFirmwareImage refuses while anything does). */
  users: ImageUsersSource;
  clock: Clock;
  newId: () => string;
  log?: (line: string) => void;
}

const otherBytes = (image: FirmwareImage, what: string): FailedPreconditionError =>
  new FailedPreconditionError(
    `firmware image ${describeImageKey(image)} is already registered with other bytes (${what}); an image never changes: upload it under a new version`,
  );

export function createImageService(deps: ImagesDeps): ImagesApi {
  const { images, objects } = deps;
  const registered = async (key: ImageKey) => (await images.getImages([key]))[0];

  return {
    async beginImageUpload(input) {
      const checked = validateBeginUpload(input);
      if (!checked.ok) throw new ValidationError(checked.violations);
      const { key, sizeBytes } = checked.value;
      const existing = await registered(key);
      if (existing !== undefined && existing.sizeBytes !== sizeBytes) {
        throw otherBytes(existing, `${existing.sizeBytes} bytes, not ${sizeBytes}`);
      }
      const uploadId = deps.newId();
      const url = await objects.presignPut(stagingObjectKey(uploadId), sizeBytes, UPLOAD_URL_SECONDS);
      return {
        uploadId,
        url,
        expiresAt: deps.clock.now() + UPLOAD_URL_SECONDS * 1000,
        ...(existing === undefined ? {} : { existing }),
      };
    },

    async completeImageUpload(input, actor) {
      const checked = validateCompleteUpload(input);
      if (!checked.ok) throw new ValidationError(checked.violations);
      const { key, sizeBytes, uploadId, sha256 } = checked.value;
      const staged = stagingObjectKey(uploadId);
      try {
        const size = await objects.sizeOf(staged);
        if (size === undefined) {
          throw new FailedPreconditionError(
            `upload ${uploadId} has no bytes: PUT the file to the URL BeginFirmwareImageUpload returned first`,
          );
        }
        if (size !== sizeBytes) {
          throw new FailedPreconditionError(
            `upload ${uploadId} holds ${size} bytes, not the ${sizeBytes} declared`,
          );
        }
        const stored = await objects.sha256Of(staged);
        if (stored !== sha256) {
          throw new FailedPreconditionError(
            `upload ${uploadId}: the stored bytes hash to sha256 ${stored}, not the ${sha256} declared (corrupted in transit?)`,
          );
        }
        const existing = await registered(key);
        if (existing !== undefined) {
          const same = sameOrRefused(existing, sha256);
          // The same bytes again: put back where the record says (a bucket that lost them heals).
          await objects.copy(staged, existing.objectKey);
          return same;
        }
        const image: FirmwareImage = {
          ...key,
          objectKey: imageObjectKey(key.componentType, sha256),
          sizeBytes,
          sha256,
          uploadedBy: { name: actor.name, source: actor.source, authenticated: actor.authenticated },
          uploadedAt: deps.clock.now(),
        };
        await objects.copy(staged, image.objectKey);
        const written = await images.registerImage(image);
        if (written.kind === "exists") return sameOrRefused(written.image, sha256);
        deps.log?.(
          `firmware: image ${describeImageKey(image)} registered (${sizeBytes} bytes, sha256 ${sha256}) by ${actor.name || "anonymous"}`,
        );
        return { image, alreadyRegistered: false };
      } finally {
        await objects.delete(staged);
      }
    },

    listImages: (query) => images.listImages(query),

    deleteImage: (input, actor) => deleteImage(deps, input, actor),
  };
}

function sameOrRefused(
  existing: FirmwareImage,
  sha256: string,
): { image: FirmwareImage; alreadyRegistered: boolean } {
  if (existing.sha256 !== sha256) throw otherBytes(existing, `sha256 ${existing.sha256}`);
  return { image: existing, alreadyRegistered: true };
}

/**
 * Nothing is flashed without its image: every need must be served by a registered image
 * (src/domain/firmware-images.ts), else InvalidArgument at `field` naming each missing type and
 * version. One batched read of the candidate keys; returns the images that serve the needs.
 */
export async function requireImages(
  store: Pick<FirmwareImageStore, "getImages">,
  needs: Iterable<ImageNeed>,
  field: string,
): Promise<Map<string, FirmwareImage>> {
  const distinct = distinctNeeds(needs);
  if (distinct.length === 0) return new Map();
  const keys = new Map(distinct.flatMap(candidateKeys).map((k) => [imageKeyId(k), k] as const));
  const found = await store.getImages([...keys.values()]);
  const byKey = new Map(found.map((i) => [imageKeyId(i), i] as const));
  const rule = missingImagesRule(distinct, byKey);
  if (rule !== undefined) throw new ValidationError([{ field, rule }]);
  return byKey;
}
