/**
 * The image each update command carries: the catalog's record for the component's type, version
 * and parts (the rule of src/domain/firmware-images.ts, the one the create paths checked), as a
 * presigned GET valid until the wave's deadline, with its sha256 and size, always.
 *
 * The catalog is read once per task: the preflight looks up the images of every component it is
 * about to flash (in the same read as its task and the rack's readiness, with the keys AcquireLock
 * worked out, preflight-read.ts `readPreflight`; else with the rack's readiness, `readRackAndImages`;
 * or one batched read of its own, `planImages`) and freezes them into each group's facts, so a
 * flash step only presigns (no request). A plan made before they were frozen reads the catalog
 * at each flash step, as it did then. Freezing is safe because an image is never changed in
 * place (registered once per key) and its deletion is refused while a task that has not ended
 * could flash it (src/domain/image-use.ts counts every image that could serve a task's need).
 */
import type { FirmwareImageRef } from "../../domain/bmc-protocol.js";
import {
  candidateKeys,
  distinctNeeds,
  type FirmwareImage,
  type ImageKey,
  type ImageNeed,
  imageFor,
  imageKeyId,
  missingImagesRule,
  type PlannedImage,
  plannedImage,
} from "../../domain/firmware-images.js";
import type { InventoryComponent } from "../../domain/inventory.js";
import type { ComponentType } from "../../domain/model.js";
import { StepError } from "../../domain/step-errors.js";
import { type TaskReport, targetOf } from "../../domain/task-report.js";
import type { FirmwareImageStore, ImageObjectStore } from "../ports.js";
import type { StepDeps } from "./deps.js";

/** What an update command always carries of its image. */
export type SentImage = Required<FirmwareImageRef>;

export interface CommandImageDeps {
  images: Pick<FirmwareImageStore, "getImages" | "getImagesWithRack">;
  imageUrls: Pick<ImageObjectStore, "presignGet">;
}

/** A component to flash, as the plan knows it. */
export interface FlashedComponent {
  id: string;
  type: ComponentType;
  version: string;
  subTargets?: string[];
}

const needOf = (c: FlashedComponent): ImageNeed => ({
  componentType: c.type,
  version: c.version,
  subTargets: c.subTargets ?? [],
});

/**
 * The images serving every need, by imageKeyId: from `known` when given (the plan's), else one
 * batched read of the catalog. A need no image serves (a task created before the catalog check,
 * or an image deleted in the moment between a deletion's check and its write) fails the step with
 * TaskMisconfigured naming the type and version: nothing is flashed without its image.
 */
async function servingImages(
  deps: Pick<CommandImageDeps, "images">,
  needs: readonly ImageNeed[],
  known: readonly PlannedImage[] | undefined,
): Promise<Map<string, PlannedImage>> {
  const distinct = distinctNeeds(needs);
  const found: readonly PlannedImage[] =
    known ?? (distinct.length === 0 ? [] : await deps.images.getImages(distinct.flatMap(candidateKeys)));
  const byKey = new Map(found.map((i) => [imageKeyId(i), i] as const));
  const missing = missingImagesRule(distinct, byKey);
  if (missing !== undefined) throw new StepError("TaskMisconfigured", missing);
  return byKey;
}

/** What a read of the catalog asked for (by imageKeyId) and found. */
export interface ImagesRead {
  keys: ReadonlySet<string>;
  images: readonly FirmwareImage[];
}

/**
 * The rack's components (the preflight's readiness) and, where the catalog reads both at once
 * (FirmwareImageStore.getImagesWithRack: one request), the images serving `components` (those
 * the task may flash: a superset of what its plan flashes is harmless, a key with no image is
 * simply not found). Without it, the rack alone: planImages reads the catalog itself.
 */
export async function readRackAndImages(
  deps: Pick<StepDeps, "readiness" | "images">,
  rackId: string,
  components: readonly FlashedComponent[],
): Promise<{ rack: InventoryComponent[]; read?: ImagesRead }> {
  const both = deps.images.getImagesWithRack;
  if (both === undefined || components.length === 0)
    return { rack: await deps.readiness.rackComponents(rackId) };
  const keys = imageKeysOf(components);
  const { components: rack, images } = await both.call(deps.images, [...keys.values()], rackId);
  return { rack, read: { keys: new Set(keys.keys()), images } };
}

/** A component of the report as a flash of it needs its image: its target version and parts. */
export const toFlash = (report: TaskReport, c: TaskReport["components"][number]): FlashedComponent => ({
  id: c.id,
  type: c.type,
  version: targetOf(report, c),
  ...(c.subTargets === undefined ? {} : { subTargets: c.subTargets }),
});

/**
 * Every key an image serving these components could have (each need's candidates, the sub-target's
 * before the whole component's), by imageKeyId, each once: what readRackAndImages asks for, and
 * what AcquireLock carries for the preflight's one read (preflight-read.ts `carriedImageKeys`).
 */
export function imageKeysOf(components: readonly FlashedComponent[]): Map<string, ImageKey> {
  return new Map(
    distinctNeeds(components.map(needOf))
      .flatMap(candidateKeys)
      .map((k) => [imageKeyId(k), k] as const),
  );
}

/**
 * The preflight's one lookup: for each group (its components to flash; empty for a group with no
 * update step), the images that serve them, as the plan keeps them. From `read` when it asked for
 * every key these need (readRackAndImages: no request here), else one batched read.
 */
export async function planImages(
  deps: Pick<CommandImageDeps, "images">,
  groups: readonly (readonly FlashedComponent[])[],
  read?: ImagesRead,
): Promise<PlannedImage[][]> {
  const all = groups.flat();
  if (all.length === 0) return groups.map(() => []);
  const needs = all.map(needOf);
  const covered =
    read !== undefined &&
    distinctNeeds(needs)
      .flatMap(candidateKeys)
      .every((k) => read.keys.has(imageKeyId(k)));
  const byKey = await servingImages(deps, needs, covered ? read.images : undefined);
  return groups.map((components) => {
    const used = new Map<string, PlannedImage>();
    for (const c of components) {
      // servingImages found every need served.
      const image = imageFor(needOf(c), byKey)!;
      used.set(imageKeyId(image), plannedImage(image));
    }
    return [...used.values()];
  });
}

/**
 * Component id → its image, presigned for `validSeconds`; the records from `planned` (the
 * group's frozen images) when the plan has them, else from one read of the catalog. One URL per
 * distinct image.
 */
export async function commandImages(
  deps: CommandImageDeps,
  components: readonly FlashedComponent[],
  validSeconds: number,
  planned?: readonly PlannedImage[],
): Promise<Map<string, SentImage>> {
  if (components.length === 0) return new Map();
  const byKey = await servingImages(deps, components.map(needOf), planned);
  const urls = new Map<string, Promise<string>>();
  const out = new Map<string, SentImage>();
  for (const c of components) {
    // servingImages found every need served.
    const image = imageFor(needOf(c), byKey)!;
    const url = urls.get(image.objectKey) ?? deps.imageUrls.presignGet(image.objectKey, validSeconds);
    urls.set(image.objectKey, url);
    out.set(c.id, { uri: await url, sha256: image.sha256, size: image.sizeBytes });
  }
  return out;
}
