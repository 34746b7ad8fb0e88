/**
 * The estimator's view of the product's tables: keys, indexes and what each projects, from the
 * schema (src/adapters/dynamodb/schema.ts); an item's key and index entries, and what a write
 * costs each index.
 */
import type { IndexDefinition, TableDefinition } from "../../../src/adapters/dynamodb/schema.js";
import {
  type AttributeMap,
  type AttributeValue,
  canonical,
  itemSize,
  sameValue,
  writeUnitsFor,
} from "./item-size.js";

export interface IndexShape {
  name: string;
  /** A local index shares the table's partition key; its `partitionKey` names it anyway. */
  kind: "global" | "local";
  partitionKey: string;
  sortKey?: string;
  /** ALL, KEYS_ONLY, or the non-key attributes of an INCLUDE projection. */
  projection: "ALL" | "KEYS_ONLY" | readonly string[];
}

export interface TableShape {
  partitionKey: string;
  sortKey?: string;
  indexes: readonly IndexShape[];
}

export type TableShapeLookup = (tableName: string) => TableShape | undefined;

// ---------------------------------------------------------------------------------------------
// Keys and index entries

/** A stable string for an item's primary key: `["S:run-1","S:target-7"]`. */
export function itemKey(shape: TableShape, item: AttributeMap): string | undefined {
  const parts: string[] = [];
  for (const name of [shape.partitionKey, shape.sortKey]) {
    if (name === undefined) continue;
    const value = item[name];
    if (value === undefined) return undefined;
    parts.push(scalarText(value));
  }
  return JSON.stringify(parts);
}

function scalarText(value: AttributeValue): string {
  if ("S" in value) return `S:${value.S}`;
  if ("N" in value) return `N:${value.N}`;
  if ("B" in value)
    return `B:${typeof value.B === "string" ? value.B : Buffer.from(value.B).toString("base64")}`;
  return JSON.stringify(value);
}

/** The index entry an item has in `index`, or undefined when the item lacks an index key. */
export function indexEntry(
  shape: TableShape,
  index: IndexShape,
  item: AttributeMap,
): AttributeMap | undefined {
  if (item[index.partitionKey] === undefined) return undefined;
  if (index.sortKey !== undefined && item[index.sortKey] === undefined) return undefined;
  if (index.projection === "ALL") return item;
  const names = new Set([shape.partitionKey, index.partitionKey]);
  if (shape.sortKey) names.add(shape.sortKey);
  if (index.sortKey) names.add(index.sortKey);
  if (index.projection !== "KEYS_ONLY") for (const n of index.projection) names.add(n);
  const entry: AttributeMap = {};
  for (const name of names) {
    const value = item[name];
    if (value !== undefined) entry[name] = value;
  }
  return entry;
}

/**
 * Index write units of one item going from `before` to `after` (undefined = not in the table),
 * both fully known:
 *   absent → absent 0 · absent → entry 1 · entry → absent 1 · key changed 2 · entry changed 1 ·
 *   entry unchanged 0 (each write ⌈entry bytes / 1 KB⌉)
 */
export function indexWriteUnits(
  shape: TableShape,
  index: IndexShape,
  before: AttributeMap | undefined,
  after: AttributeMap | undefined,
): number {
  const old = before === undefined ? undefined : indexEntry(shape, index, before);
  const next = after === undefined ? undefined : indexEntry(shape, index, after);
  if (old === undefined && next === undefined) return 0;
  if (old === undefined) return writeUnitsFor(itemSize(next!));
  if (next === undefined) return writeUnitsFor(itemSize(old));
  const keyNames = [index.partitionKey, index.sortKey].filter((n): n is string => n !== undefined);
  if (keyNames.some((n) => !sameValue(old[n], next[n]))) {
    return writeUnitsFor(itemSize(old)) + writeUnitsFor(itemSize(next));
  }
  return canonical(old) === canonical(next) ? 0 : writeUnitsFor(itemSize(next));
}

// ---------------------------------------------------------------------------------------------
// Table shapes from the schema

/** The estimator's view of a table definition (schema.ts). */
export function tableShape(def: TableDefinition): TableShape {
  const projection = (p: IndexDefinition["projection"]): IndexShape["projection"] =>
    p.type === "INCLUDE" ? p.attributes : p.type;
  return {
    partitionKey: def.partitionKey.name,
    ...(def.sortKey ? { sortKey: def.sortKey.name } : {}),
    indexes: [
      ...def.globalSecondaryIndexes.map(
        (i): IndexShape => ({
          name: i.name,
          kind: "global",
          partitionKey: i.partitionKey.name,
          ...(i.sortKey ? { sortKey: i.sortKey.name } : {}),
          projection: projection(i.projection),
        }),
      ),
      ...def.localSecondaryIndexes.map(
        (i): IndexShape => ({
          name: i.name,
          kind: "local",
          partitionKey: def.partitionKey.name,
          sortKey: i.sortKey.name,
          projection: projection(i.projection),
        }),
      ),
    ],
  };
}

/**
 * Recognizes the product's tables by name: `names` when given (the deployed names), else any name
 * ending in a logical name, as the local stack and the tests name them (`flow-Runs`,
 * `e2e-create-1a2b3c4d-Targets`). Unknown tables get no shape: no index writes, no memory.
 */
export function productTableShapes(
  definitions: readonly TableDefinition[],
  names?: Partial<Record<TableDefinition["logicalName"], string>>,
): TableShapeLookup {
  const shapes = definitions.map((def) => ({ def, shape: tableShape(def) }));
  return (tableName) => {
    if (names) return shapes.find(({ def }) => names[def.logicalName] === tableName)?.shape;
    return shapes.find(({ def }) => tableName.endsWith(def.logicalName))?.shape;
  };
}
