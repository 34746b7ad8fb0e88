/**
 * FirmwareImageStore on DynamoDB, in the Inventory table (docs/data-model.md): new item kinds, no
 * new table, as for the firmware policy.
 *
 *   image#<TYPE>#<version>#<sub-target or "">   one item per image: `image` (the record), written
 *                                                once, never changed (the create path reads these
 *                                                by key, one BatchGetItem)
 *   images#index                                 `images`: id → record, the catalog's list (one
 *                                                GetItem for ListFirmwareImages)
 *
 * The child task's preflight reads the images of its updates and its rack's item (rack#<id>, the
 * components' readiness) in one BatchGetItem (`getImagesWithRack`): they share the table. Told the
 * Tasks table too, it reads them with the task and its command sets, the preflight check's whole
 * read, in one BatchGetItem across both tables (`getImagesWithRackAndTask`).
 *
 * Registering is one transaction: Put the image's item under `attribute_not_exists(pk)` and SET
 * its entry in the index. Two uploads of one key at once: one commits, the other is cancelled
 * whole and reads the winner. One index item holds about 1,500 records (DynamoDB's 400 KB item
 * limit at ~250 bytes a record): far more versions than a fleet keeps.
 */
import { type DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";
import type { FirmwareImageStore } from "../../app/ports.js";
import type { CommandFamily, CommandSet } from "../../domain/command-sets.js";
import { type FirmwareImage, type ImageKey, imageKeyId } from "../../domain/firmware-images.js";
import type { InventoryComponent } from "../../domain/inventory.js";
import type { Page } from "../../domain/list-queries.js";
import { COMPONENT_TYPES, type ComponentType } from "../../domain/model.js";
import type { Task } from "../../domain/task.js";
import { taskWithSetsKeys, taskWithSetsOf } from "./command-set-store.js";
import { batchGetAll, batchGetTables, type CancellationCode, ensureIndexItem, transactWrite } from "./db.js";
import { rackPk } from "./items.js";
import type { TableNames } from "./schema.js";

export const IMAGES_INDEX_PK = "images#index";
/**
 * Images a `registerImages` transaction registers: each is one Put, and the index's Update sets
 * all their entries, well inside DynamoDB's 100 actions and 4 KB expression a transaction.
 */
export const REGISTER_TOGETHER = 25;

type Registered = { kind: "registered" } | { kind: "exists"; image: FirmwareImage };
/** An image's item key, by its imageKeyId. */
const imagePkOf = (keyId: string): string => `image#${keyId}`;
export const imagePk = (key: ImageKey): string => imagePkOf(imageKeyId(key));

/**
 * The keys of a rack's item and of these images' (by imageKeyId), in the Inventory table, for one
 * BatchGetItem (getImagesWithRack; the child task's preflight reads them with its task and
 * command sets too, `getImagesWithRackAndTask`), with RACK_AND_IMAGES_PROJECTION.
 */
export function rackAndImagesKeys(rackId: string, imageKeyIds: readonly string[]): { pk: string }[] {
  return [rackPk(rackId), ...new Set(imageKeyIds.map(imagePkOf))].map((pk) => ({ pk }));
}

/** What of those items the reads return: the key, the rack's components, the image's record. */
export const RACK_AND_IMAGES_PROJECTION = {
  expression: "pk, #r.#c, #i",
  names: { "#r": "rack", "#c": "components", "#i": "image" },
};

/** The rack's components (none for an unknown rack) and the images found, from those items. */
export function rackAndImagesOf(
  rackId: string,
  items: readonly Record<string, unknown>[],
): { images: FirmwareImage[]; components: InventoryComponent[] } {
  const rack = rackPk(rackId);
  const components =
    (items.find((i) => i.pk === rack)?.rack as { components?: InventoryComponent[] } | undefined)
      ?.components ?? [];
  const images = items.flatMap((i) =>
    i.pk === rack || i.image === undefined ? [] : [i.image as FirmwareImage],
  );
  return { images, components };
}

export class DynamoFirmwareImageStore implements FirmwareImageStore {
  /** Only told the Tasks table (`tables.tasks`, as createDynamoStores does): it reads both. */
  readonly getImagesWithRackAndTask?: NonNullable<FirmwareImageStore["getImagesWithRackAndTask"]>;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: Pick<TableNames, "inventory"> & Partial<Pick<TableNames, "tasks">>,
  ) {
    const tasksTable = tables.tasks;
    if (tasksTable !== undefined)
      this.getImagesWithRackAndTask = (imageKeyIds, rackId, task) =>
        this.readWithTask(tasksTable, imageKeyIds, rackId, task);
  }

  async getImages(keys: readonly ImageKey[]): Promise<FirmwareImage[]> {
    if (keys.length === 0) return [];
    const pks = [...new Set(keys.map(imagePk))];
    const items = await batchGetAll(
      this.doc,
      this.tables.inventory,
      pks.map((pk) => ({ pk })),
      { consistent: true },
    );
    return items.map((i) => i.image as FirmwareImage);
  }

  /**
   * The images' items and the rack's (`rack#<id>`, whose components the readiness store reads),
   * all in the Inventory table: one BatchGetItem (more only past its 100 keys), strongly
   * consistent as each read alone is, each item cut to what the two reads return.
   */
  async getImagesWithRack(
    keys: readonly ImageKey[],
    rackId: string,
  ): Promise<{ images: FirmwareImage[]; components: InventoryComponent[] }> {
    const items = await batchGetAll(
      this.doc,
      this.tables.inventory,
      rackAndImagesKeys(rackId, keys.map(imageKeyId)),
      { consistent: true, projection: RACK_AND_IMAGES_PROJECTION },
    );
    return rackAndImagesOf(rackId, items);
  }

  /**
   * getImagesWithRack's items and getWithTask's (the task's item and its command sets' records,
   * command-set-store.ts `taskWithSetsKeys`) in ONE BatchGetItem across the Inventory and Tasks
   * tables (db.ts `batchGetTables`: more only past its 100 keys, or to follow UnprocessedKeys),
   * strongly consistent on both as each read alone is. A 39-BMC rack's preflight: the rack's
   * key and its few images' in Inventory, the task, `q` and `u` in Tasks.
   */
  private async readWithTask(
    tasksTable: string,
    imageKeyIds: readonly string[],
    rackId: string,
    { taskId, families }: { taskId: string; families: readonly CommandFamily[] },
  ): Promise<{
    images: FirmwareImage[];
    components: InventoryComponent[];
    task: Task | undefined;
    sets: Partial<Record<CommandFamily, CommandSet>>;
  }> {
    const read = await batchGetTables(this.doc, {
      [this.tables.inventory]: {
        keys: rackAndImagesKeys(rackId, imageKeyIds),
        consistent: true,
        projection: RACK_AND_IMAGES_PROJECTION,
      },
      [tasksTable]: { keys: taskWithSetsKeys(taskId, families), consistent: true },
    });
    return {
      ...rackAndImagesOf(rackId, read[this.tables.inventory] ?? []),
      ...taskWithSetsOf(taskId, read[tasksTable] ?? []),
    };
  }

  async registerImage(image: FirmwareImage): Promise<Registered> {
    await this.ensureIndex();
    return this.registerOne(image);
  }

  /**
   * Registers several images (distinct keys), each as `registerImage` would, in a few requests
   * instead of two each: one transaction per REGISTER_TOGETHER images, each image's Put under
   * `attribute_not_exists(pk)` and one Update setting all their index entries. A transaction a
   * condition cancels (a key registered meanwhile) registers nothing, and its images are then
   * registered one by one, so every outcome is `registerImage`'s. Outcomes in `images`' order.
   */
  async registerImages(images: readonly FirmwareImage[]): Promise<Registered[]> {
    if (new Set(images.map(imagePk)).size !== images.length)
      throw new TypeError("registerImages needs distinct image keys");
    if (images.length > 0) await this.ensureIndex();
    const outcomes: Registered[] = [];
    for (let from = 0; from < images.length; from += REGISTER_TOGETHER) {
      const part = images.slice(from, from + REGISTER_TOGETHER);
      if ((await this.putTogether(part)) === undefined)
        outcomes.push(...part.map(() => ({ kind: "registered" as const })));
      else for (const image of part) outcomes.push(await this.registerOne(image));
    }
    return outcomes;
  }

  /** One image, the index known to exist. */
  private async registerOne(image: FirmwareImage): Promise<Registered> {
    const codes = await this.putTogether([image]);
    if (codes === undefined) return { kind: "registered" };
    const [first] = await this.getImages([image]);
    if (first === undefined)
      throw new Error(`registering image ${imageKeyId(image)} failed: ${codes.join(", ")}`);
    return { kind: "exists", image: first };
  }

  /** One transaction: each image's item, if its key is free, and their index entries; all or none. */
  private putTogether(images: readonly FirmwareImage[]): Promise<CancellationCode[] | undefined> {
    const table = this.tables.inventory;
    const names: Record<string, string> = { "#images": "images" };
    const values: Record<string, FirmwareImage> = {};
    images.forEach((image, i) => {
      names[`#i${i}`] = imageKeyId(image);
      values[`:i${i}`] = image;
    });
    return transactWrite(this.doc, {
      TransactItems: [
        ...images.map((image) => ({
          Put: {
            TableName: table,
            Item: { pk: imagePk(image), kind: "image", image },
            ConditionExpression: "attribute_not_exists(pk)",
          },
        })),
        {
          Update: {
            TableName: table,
            Key: { pk: IMAGES_INDEX_PK },
            UpdateExpression: `SET ${images.map((_, i) => `#images.#i${i} = :i${i}`).join(", ")}`,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
          },
        },
      ],
    });
  }

  async deleteImage(key: ImageKey, sha256: string): Promise<FirmwareImage | undefined> {
    const [image] = await this.getImages([key]);
    if (image === undefined || image.sha256 !== sha256) return undefined;
    return (await deleteImageItem(this.doc, this.tables.inventory, key, sha256)) === "deleted"
      ? image
      : undefined;
  }

  /** The index's map must exist before a transaction can set one of its keys. */
  private ensureIndex(): Promise<void> {
    return ensureIndexItem(this.doc, this.tables.inventory, {
      pk: IMAGES_INDEX_PK,
      kind: "image",
      images: {},
    });
  }

  async listImages(query: { componentType?: ComponentType; page: Page }): Promise<{
    images: FirmwareImage[];
    total: number;
  }> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tables.inventory,
        Key: { pk: IMAGES_INDEX_PK },
        ConsistentRead: true,
      }),
    );
    const all = Object.values((out.Item?.images as Record<string, FirmwareImage> | undefined) ?? {})
      .filter((i) => query.componentType === undefined || i.componentType === query.componentType)
      .sort(compareImages);
    return { images: all.slice(query.page.offset, query.page.offset + query.page.limit), total: all.length };
  }
}

/**
 * Removing an image is one transaction too: Delete its item under `image.sha256 = :sha` and REMOVE
 * its index entry. A record already gone (or replaced) cancels it whole: nothing is removed.
 */
export async function deleteImageItem(
  doc: DynamoDBDocumentClient,
  table: string,
  key: ImageKey,
  sha256: string,
): Promise<"deleted" | "absent"> {
  const codes = await transactWrite(doc, {
    TransactItems: [
      {
        Delete: {
          TableName: table,
          Key: { pk: imagePk(key) },
          ConditionExpression: "#image.#sha = :sha",
          ExpressionAttributeNames: { "#image": "image", "#sha": "sha256" },
          ExpressionAttributeValues: { ":sha": sha256 },
        },
      },
      {
        Update: {
          TableName: table,
          Key: { pk: IMAGES_INDEX_PK },
          UpdateExpression: "REMOVE #images.#id",
          ExpressionAttributeNames: { "#images": "images", "#id": imageKeyId(key) },
        },
      },
    ],
  });
  return codes === undefined ? "deleted" : "absent";
}

/** Type in the published order, then version, then sub-target (the whole component first). */
export function compareImages(a: ImageKey, b: ImageKey): number {
  const byType = COMPONENT_TYPES.indexOf(a.componentType) - COMPONENT_TYPES.indexOf(b.componentType);
  if (byType !== 0) return byType;
  if (a.version !== b.version) return a.version < b.version ? -1 : 1;
  const sa = a.subTarget ?? "";
  const sb = b.subTarget ?? "";
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}
