/**
 * The firmware image catalog's pure rules: what an image record is, how an upload request is
 * validated, where its bytes live in the bucket, and which image a flash needs.
 *
 * An image is registered once per (component type, version, sub-target) and never changes: the
 * same bytes again are a no-op, other bytes are refused. Its object key is content-addressed
 * (`images/COMPUTE/<sha256>`), so the version text (any text a baseline or a run may name) never
 * has to be safe in a key, and two uploads of the same bytes land on the same object.
 *
 * Which image a flash needs (one rule for every entry point: runs, tasks, baselines):
 *   - a flash of the whole component needs the whole-component image of its type and version;
 *   - a flash narrowed to exactly one part (sub-target `bios`) takes that part's image when one
 *     is registered, else the whole-component image (the BMC takes the part from the bundle);
 *   - a flash of several parts needs the whole-component image.
 *
 *   needed: COMPUTE 1.3.0 [bios], catalog: COMPUTE 1.3.0 (whole) → served by the whole image
 *   needed: NVSWITCH 2.0.0,        catalog: NVSWITCH 2.0.0 [nvos] only → missing
 */
import type { Actor } from "./actor.js";
import type { FieldViolation } from "./errors.js";
import type { PlannedRow } from "./firmware-baselines.js";
import { FIRMWARE_VERSION_MAX, firmwareVersionRule } from "./firmware-version.js";
import { COMPONENT_TYPES, type ComponentType, type VersionGroup } from "./model.js";
import { SUB_TARGETS, subTargetsOf } from "./sub-targets.js";

/** S3's limit for one PUT: what a presigned single-part upload can carry. */
export const MAX_IMAGE_BYTES = 5 * 1024 ** 3;
/** The longest version text: every version's limit (firmware-version.ts). */
export const MAX_IMAGE_VERSION = FIRMWARE_VERSION_MAX;

export const SHA256_HEX = /^[0-9a-f]{64}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The identity of an image: `subTarget` absent = the whole component. */
export interface ImageKey {
  componentType: ComponentType;
  version: string;
  subTarget?: string;
}

/** Who uploaded an image: the caller as the server identified it (src/domain/actor.ts). */
export type ImageUploader = Pick<Actor, "name" | "source" | "authenticated">;

export interface FirmwareImage extends ImageKey {
  /** Where the bytes are in the catalog's bucket (content-addressed). */
  objectKey: string;
  sizeBytes: number;
  /** 64 lowercase hex digits. */
  sha256: string;
  uploadedBy: ImageUploader;
  /** Epoch ms. */
  uploadedAt: number;
}

/**
 * What a task's plan keeps of an image it will flash (the preflight looks its images up once):
 * the key and the bytes' place, digest and size, not who uploaded it or when.
 */
export type PlannedImage = Pick<FirmwareImage, keyof ImageKey | "objectKey" | "sizeBytes" | "sha256">;

export function plannedImage(image: PlannedImage): PlannedImage {
  const { componentType, version, subTarget, objectKey, sizeBytes, sha256 } = image;
  return {
    componentType,
    version,
    ...(subTarget === undefined ? {} : { subTarget }),
    objectKey,
    sizeBytes,
    sha256,
  };
}

/** What a flash of one component asks of the catalog. */
export interface ImageNeed {
  componentType: ComponentType;
  version: string;
  /** The parts flashed; empty = the whole component. */
  subTargets: readonly string[];
}

/** `COMPUTE 1.3.0`, `COMPUTE 1.3.0 (bios)`: how messages name an image. */
export function describeImageKey(key: ImageKey): string {
  return `${key.componentType} ${key.version}${key.subTarget === undefined ? "" : ` (${key.subTarget})`}`;
}

/** A stable string for maps and store keys: `COMPUTE#1.3.0#` (whole) or `COMPUTE#1.3.0#bios`. */
export function imageKeyId(key: ImageKey): string {
  return `${key.componentType}#${key.version}#${key.subTarget ?? ""}`;
}

export function sameImageKey(a: ImageKey, b: ImageKey): boolean {
  return imageKeyId(a) === imageKeyId(b);
}

/** Where a registered image's bytes live: `images/COMPUTE/<sha256>`. */
export function imageObjectKey(componentType: ComponentType, sha256: string): string {
  return `images/${componentType}/${sha256}`;
}

/** Where an upload's bytes land before they are verified: `uploads/<upload id>`. */
export function stagingObjectKey(uploadId: string): string {
  return `uploads/${uploadId}`;
}

/** The catalog keys that could serve `need`, best first (see the file comment). */
export function candidateKeys(need: ImageNeed): ImageKey[] {
  const whole: ImageKey = { componentType: need.componentType, version: need.version };
  const [only, ...more] = need.subTargets;
  return only !== undefined && more.length === 0 ? [{ ...whole, subTarget: only }, whole] : [whole];
}

/** The registered image that serves `need`, or undefined. */
export function imageFor<T extends ImageKey = FirmwareImage>(
  need: ImageNeed,
  images: ReadonlyMap<string, T>,
): T | undefined {
  for (const key of candidateKeys(need)) {
    const image = images.get(imageKeyId(key));
    if (image !== undefined) return image;
  }
  return undefined;
}

/**
 * The rule of the create-time violation for the needs no image serves, each named once in the
 * order given: `no firmware image is registered for COMPUTE 1.3.0, NVSWITCH 2.0.0 (bios, or the
 * whole component); upload one with flowctl firmware upload`. Undefined when every need is served.
 */
export function missingImagesRule(
  needs: readonly ImageNeed[],
  images: ReadonlyMap<string, ImageKey>,
): string | undefined {
  const missing: string[] = [];
  for (const need of needs) {
    if (imageFor(need, images) !== undefined) continue;
    const [first] = candidateKeys(need);
    const text =
      first?.subTarget === undefined
        ? `${need.componentType} ${need.version}`
        : `${need.componentType} ${need.version} (${first.subTarget}, or the whole component)`;
    if (!missing.includes(text)) missing.push(text);
  }
  if (missing.length === 0) return undefined;
  return `no firmware image is registered for ${missing.join(", ")}; upload one with flowctl firmware upload`;
}

/** Needs deduplicated (same type, version and parts), in first-seen order. */
export function distinctNeeds(needs: Iterable<ImageNeed>): ImageNeed[] {
  const seen = new Map<string, ImageNeed>();
  for (const n of needs) {
    const id = `${n.componentType}#${n.version}#${n.subTargets.join(",")}`;
    if (!seen.has(id)) seen.set(id, n);
  }
  return [...seen.values()];
}

/**
 * What a plan's rows flash: each component at the request's `targetVersion`, else at the version
 * frozen for it from the baselines (`versions`, rack id → groups), narrowed to the request's
 * sub-targets its type has; a component whose type has none of them is not flashed, and one with
 * no version (a violation reported elsewhere) asks for nothing.
 */
export function flashNeeds(
  rows: readonly PlannedRow[],
  firmware: { targetVersion?: string; subTargets: readonly string[] },
  versions?: ReadonlyMap<string, readonly VersionGroup[]>,
): ImageNeed[] {
  const needs: ImageNeed[] = [];
  for (const row of rows) {
    const frozen = new Map(
      (versions?.get(row.rackId) ?? []).flatMap((g) => g.componentIds.map((id) => [id, g.version] as const)),
    );
    for (const c of row.components) {
      const version = firmware.targetVersion ?? frozen.get(c.id);
      const parts = subTargetsOf(c.type, firmware.subTargets);
      if (version === undefined || (firmware.subTargets.length > 0 && parts.length === 0)) continue;
      needs.push({ componentType: c.type, version, subTargets: parts });
    }
  }
  return distinctNeeds(needs);
}

// ---------------------------------------------------------------------------------------------
// Validation of what the admin service receives

export interface ImageKeyInput {
  componentType: string;
  version: string;
  /** "" = the whole component. */
  subTarget: string;
}

type Checked<T> = { ok: true; value: T } | { ok: false; violations: FieldViolation[] };

/**
 * A known type; a version of 1..128 characters without leading or trailing whitespace; a
 * sub-target "" or one of the type's parts (any case, stored lowercase). Every problem at once.
 */
export function checkImageKey(input: ImageKeyInput, violations: FieldViolation[]): ImageKey | undefined {
  const add = (field: string, rule: string) => violations.push({ field, rule });
  const known = (COMPONENT_TYPES as readonly string[]).includes(input.componentType);
  if (!known) add("component_type", `must be a known component type (got ${input.componentType})`);
  const version = input.version;
  const versionRule = firmwareVersionRule(version);
  if (versionRule !== undefined) add("version", versionRule);
  const subTarget = input.subTarget.toLowerCase();
  if (known && subTarget !== "") {
    const parts = SUB_TARGETS[input.componentType as ComponentType];
    if (!parts.includes(subTarget)) {
      add(
        "sub_target",
        `${input.componentType} has no sub-target ${JSON.stringify(input.subTarget)}; allowed: ${parts.join(", ")} (or empty for the whole component)`,
      );
    }
  }
  if (violations.length > 0) return undefined;
  const key: ImageKey = { componentType: input.componentType as ComponentType, version };
  if (subTarget !== "") key.subTarget = subTarget;
  return key;
}

/** A size from 1 byte to MAX_IMAGE_BYTES. */
export function checkImageSize(size: number, field: string, violations: FieldViolation[]): void {
  if (!Number.isSafeInteger(size) || size < 1 || size > MAX_IMAGE_BYTES) {
    violations.push({
      field,
      rule: `must be an integer from 1 to ${MAX_IMAGE_BYTES} bytes (5 GiB, one S3 PUT) (got ${size})`,
    });
  }
}

export interface BeginUploadInput extends ImageKeyInput {
  sizeBytes: number;
}

export function validateBeginUpload(input: BeginUploadInput): Checked<{ key: ImageKey; sizeBytes: number }> {
  const violations: FieldViolation[] = [];
  const key = checkImageKey(input, violations);
  checkImageSize(input.sizeBytes, "size_bytes", violations);
  if (key === undefined || violations.length > 0) return { ok: false, violations };
  return { ok: true, value: { key, sizeBytes: input.sizeBytes } };
}

export interface CompleteUploadInput extends BeginUploadInput {
  uploadId: string;
  sha256: string;
}

export function validateCompleteUpload(
  input: CompleteUploadInput,
): Checked<{ key: ImageKey; sizeBytes: number; uploadId: string; sha256: string }> {
  const violations: FieldViolation[] = [];
  if (!UUID.test(input.uploadId))
    violations.push({ field: "upload_id", rule: "must be the upload id BeginFirmwareImageUpload returned" });
  const key = checkImageKey(input, violations);
  checkImageSize(input.sizeBytes, "size_bytes", violations);
  const sha256 = input.sha256.toLowerCase();
  if (!SHA256_HEX.test(sha256)) violations.push({ field: "sha256", rule: "must be 64 hex digits" });
  if (key === undefined || violations.length > 0) return { ok: false, violations };
  return { ok: true, value: { key, sizeBytes: input.sizeBytes, uploadId: input.uploadId, sha256 } };
}
