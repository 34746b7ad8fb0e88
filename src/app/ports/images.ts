/**
 * Ports of the firmware image catalog: the records (in the store, written only through the admin
 * service, and by the local stack's seed, which writes what an upload would) and the bytes (in an
 * object store that can hand out time-limited URLs).
 */
import type { CommandFamily, CommandSet } from "../../domain/command-sets.js";
import type { FirmwareImage, ImageKey } from "../../domain/firmware-images.js";
import type { InventoryComponent } from "../../domain/inventory.js";
import type { Page } from "../../domain/list-queries.js";
import type { ComponentType } from "../../domain/model.js";
import type { Task } from "../../domain/task.js";

export interface FirmwareImageStore {
  /** The images of these keys that are registered (unknown keys skipped). One batched read. */
  getImages(keys: readonly ImageKey[]): Promise<FirmwareImage[]>;
  /**
   * getImages and ReadinessStore.rackComponents(rackId) in ONE strongly consistent read, where the
   * catalog and the inventory's racks share a table: the preflight's two lookups in one request.
   * The images found, in no order (a key with no image left out), and the rack's components as
   * the inventory holds them (none for an unknown rack). Optional: without it, two reads.
   */
  getImagesWithRack?(
    keys: readonly ImageKey[],
    rackId: string,
  ): Promise<{ images: FirmwareImage[]; components: InventoryComponent[] }>;
  /**
   * getImagesWithRack and CommandSetStore.getWithTask(taskId, families) in ONE strongly
   * consistent request, where the store reads the catalog's table and the tasks' in one
   * (DynamoDB: one BatchGetItem across the Inventory and Tasks tables): the child task's
   * preflight check reads its task, the BMCs' answers, the rack and the images of its updates
   * so. The images by `imageKeyIds` (each an imageKeyId), as getImagesWithRack finds them; the
   * task undefined when there is none. Optional: without it, getWithTask then getImagesWithRack.
   */
  getImagesWithRackAndTask?(
    imageKeyIds: readonly string[],
    rackId: string,
    task: { taskId: string; families: readonly CommandFamily[] },
  ): Promise<{
    images: FirmwareImage[];
    components: InventoryComponent[];
    task: Task | undefined;
    sets: Partial<Record<CommandFamily, CommandSet>>;
  }>;
  /**
   * Registers `image` unless its key has one already: ONE conditional write. 'registered', or
   * the image that was there first (compare its sha256: the same bytes are a no-op, other bytes
   * are refused by the caller).
   */
  registerImage(
    image: FirmwareImage,
  ): Promise<{ kind: "registered" } | { kind: "exists"; image: FirmwareImage }>;
  /** Every image, by type (published order), version, then sub-target (whole first); total before paging. */
  listImages(query: { componentType?: ComponentType; page: Page }): Promise<{
    images: FirmwareImage[];
    total: number;
  }>;
  /**
   * Removes the record of `key` (its item and its index entry, in one transaction) if it still
   * has `sha256`; returns what was removed, undefined when there was no such record.
   */
  deleteImage(key: ImageKey, sha256: string): Promise<FirmwareImage | undefined>;
}

/**
 * The bucket of image bytes. URLs are presigned: whoever holds one may PUT (the size fixed) or GET
 * that one object until it expires, with no credential of its own.
 */
export interface ImageObjectStore {
  /** An HTTPS URL that accepts one PUT of exactly `sizeBytes` to `key`, until `expiresInSeconds`. */
  presignPut(key: string, sizeBytes: number, expiresInSeconds: number): Promise<string>;
  /** An HTTPS URL that GETs `key` until `expiresInSeconds`. */
  presignGet(key: string, expiresInSeconds: number): Promise<string>;
  /** The object's size, or undefined when there is none. */
  sizeOf(key: string): Promise<number | undefined>;
  /** The sha256 (hex) of the object's bytes, read as a stream (memory stays bounded). */
  sha256Of(key: string): Promise<string>;
  /** Copies `from` to `to` inside the bucket (server side). */
  copy(from: string, to: string): Promise<void>;
  /** Idempotent. */
  delete(key: string): Promise<void>;
  /** Deletes every version of `key` (and its delete markers), for good; returns how many. Idempotent. */
  deleteAllVersions(key: string): Promise<number>;
}
