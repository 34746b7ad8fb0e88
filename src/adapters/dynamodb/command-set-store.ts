/**
 * CommandSetStore on DynamoDB: a child task's command sets (src/domain/command-sets.ts) in the
 * Tasks table, beside the task items, one item per task and family, no index attribute (no task
 * listing sees them):
 *
 *   cmds#<taskId>#<family>   { taskId, family, ttl, closedAt?,
 *                              w?: { t: token, k: [entry], h?: heartbeat, s?: startedAt,
 *                                    r?: resume (AwaitWave's wave: its JSON, ~0.4-2.9 KB, deflated to ~0.3-0.8 KB) },
 *                              e_<entry>: { s: sentAt, d: deadline, pb?: publishedAt,
 *                                           a?: ackedAt, p?: progress, pt?: progressAt,
 *                                           r?: result, rt?: resultAt, q?: answer } }
 *   cmds#<taskId>#u.<part>   the same, with `part`: one part of the update set (a stage's
 *                              commands), so a write rewrites a stage's entries, not the rack's
 *
 * An entry names no component: its key is the component's (a hash over the task, the command and
 * the component id), which is how every reader finds it, so the id would be ~40 of its ~115
 * bytes, paid by every write of the item (each rewrites all of it). Entries written before
 * 2026-12-01 carry it as `c`, which is read past.
 *
 * Entries are top-level attributes, so adding one needs no parent map, and one UpdateItem sets
 * any number of them. A batch of BMC reports is one UpdateItem whose condition carries each
 * entry's rule (first result wins, progress only upwards, …); when it fails, the failed write
 * itself hands back the record as it stands (ReturnValuesOnConditionCheckFailure ALL_OLD: no read
 * more; a read only when it hands back none, as for a record that does not exist), and the caller
 * writes what still changes something, so a duplicate or late report is never written twice.
 * Expressions are chunked to stay under DynamoDB's 4 KB per expression.
 *
 * A closed set (`close`: the task was ended from outside its execution) takes no new entry: `open`
 * is conditional on `closedAt` being absent, so a step still in flight when its task was cancelled
 * publishes nothing, with no read of the task. A wave step sent by its own wait (AwaitWave) opens
 * its entries and stores its token (`w`) in that one UpdateItem.
 *
 * A step that needs the task too reads it with its sets in one BatchGetItem (`getWithTask`: they
 * share the table).
 *
 * `w` is the execution waiting for a wave's entries (`awaitAnswers`: its task token and the entry
 * keys): a batch of reports asks for the item back on its write (`returnSet`, ReturnValues
 * ALL_NEW), and the receiver wakes the execution when they are all in (src/domain/command-sets.ts
 * `wakeDue`), or sends its wait a heartbeat when they are still coming (`heartbeatDue`).
 *
 * Items live a week past their last deadline (TTL, epoch seconds), for post-mortems.
 *
 * Keyed by the task and the family, not by component: the receiver finds the record from the
 * request id alone, and the entry key (a hash over the component id) ties each command to the one
 * component whose topic may report on it (src/domain/command-sets.ts `isReportFor`).
 */
import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import type { CommandSetStore } from "../../app/ports.js";
import {
  type CommandEntry,
  type CommandFamily,
  type CommandSet,
  closedRecords,
  type EntryWrite,
  mergeParts,
  type WaitResume,
  type WaitToStore,
} from "../../domain/command-sets.js";
import type { Task } from "../../domain/task.js";
import { batchGetAll } from "./db.js";
import { itemToTask } from "./items.js";

type Item = Record<string, unknown>;

const setPk = (taskId: string, family: CommandFamily, part?: number): string =>
  part === undefined ? `cmds#${taskId}#${family}` : `cmds#${taskId}#${family}.${part}`;
const RETENTION_SECONDS = 7 * 24 * 3600;
/** DynamoDB's limit is 4 KB per expression string; chunks stay well under it. */
const MAX_EXPRESSION = 3_500;

function isConditionFailed(error: unknown): boolean {
  return (error as { name?: string } | null)?.name === "ConditionalCheckFailedException";
}

function entryToItem(e: CommandEntry): Item {
  const item: Item = { s: e.sentAt, d: e.deadline };
  if (e.publishedAt !== undefined) item.pb = e.publishedAt;
  if (e.ackedAt !== undefined) item.a = e.ackedAt;
  if (e.progress !== undefined) item.p = e.progress;
  if (e.progressAt !== undefined) item.pt = e.progressAt;
  if (e.result !== undefined) item.r = e.result;
  if (e.resultAt !== undefined) item.rt = e.resultAt;
  if (e.status !== undefined) item.q = e.status;
  return item;
}

function itemToEntry(i: Item): CommandEntry {
  const e: CommandEntry = { sentAt: Number(i.s), deadline: Number(i.d) };
  if (i.pb !== undefined) e.publishedAt = Number(i.pb);
  if (i.a !== undefined) e.ackedAt = Number(i.a);
  if (i.p !== undefined) e.progress = Number(i.p);
  if (i.pt !== undefined) e.progressAt = Number(i.pt);
  if (i.r !== undefined) e.result = i.r as CommandEntry["result"];
  if (i.rt !== undefined) e.resultAt = Number(i.rt);
  if (i.q !== undefined) e.status = i.q as CommandEntry["status"];
  return e;
}

/** A stored wait (`w`): its token, the entries it waits for, its heartbeat and start when it has them. */
function storedWait(wake: WaitToStore): Item {
  return {
    t: wake.token,
    k: [...wake.keys],
    ...(wake.heartbeatSeconds === undefined ? {} : { h: wake.heartbeatSeconds }),
    ...(wake.startedAt === undefined ? {} : { s: wake.startedAt }),
    ...(wake.resume === undefined ? {} : { r: packResume(wake.resume) }),
  };
}

/**
 * A wait's resume as stored: its JSON, deflated (binary). It rides on every write of the record
 * while the wait lasts, and DynamoDB bills a write by the item's size, so its bytes are paid for
 * at each report the wave's BMCs send (an agent's progress every minute of a flash): a wave's
 * component ids recur in its components, types and versions, and deflate keeps each once.
 *   the 18-tray compute wave: 2,926 bytes of JSON → 813 stored; a 2-shelf wave: ~380 → ~260
 * Handed back as it was stored, whatever it holds.
 */
function packResume(resume: WaitResume): Uint8Array {
  return deflateRawSync(Buffer.from(JSON.stringify(resume)));
}

function unpackResume(stored: unknown): WaitResume | undefined {
  if (stored instanceof Uint8Array) return JSON.parse(inflateRawSync(stored).toString("utf8")) as WaitResume;
  return undefined;
}

function itemToSet(item: Item): CommandSet {
  const set: CommandSet = {
    taskId: item.taskId as string,
    family: item.family as CommandFamily,
    entries: {},
  };
  if (item.part !== undefined) set.part = Number(item.part);
  if (item.closedAt !== undefined) set.closedAt = Number(item.closedAt);
  if (typeof item.rk === "string") set.rackId = item.rk;
  const wake = item.w as { t?: unknown; k?: unknown; h?: unknown; s?: unknown; r?: unknown } | undefined;
  if (typeof wake?.t === "string" && Array.isArray(wake.k)) {
    set.wake = { token: wake.t, keys: wake.k.map(String) };
    if (wake.h !== undefined) set.wake.heartbeatSeconds = Number(wake.h);
    if (wake.s !== undefined) set.wake.startedAt = Number(wake.s);
    const resume = unpackResume(wake.r);
    if (resume !== undefined) set.wake.resume = resume;
  }
  // The last write of reports and the one before it (-1: none), as `record` with `heardAt` stores them.
  if (item.wr !== undefined) {
    const before = Number(item.wrp ?? -1);
    set.heard = { at: Number(item.wr), ...(before < 0 ? {} : { before }) };
  }
  for (const [name, value] of Object.entries(item)) {
    if (name.startsWith("e_")) set.entries[name.slice(2)] = itemToEntry(value as Item);
  }
  return set;
}

/** One update's expression parts, built up clause by clause. */
class Expression {
  readonly sets: string[] = [];
  readonly removes: string[] = [];
  readonly conditions: string[] = [];
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private n = 0;

  name(attribute: string): string {
    const existing = Object.entries(this.names).find(([, v]) => v === attribute)?.[0];
    if (existing !== undefined) return existing;
    const placeholder = `#n${this.n++}`;
    this.names[placeholder] = attribute;
    return placeholder;
  }

  value(v: unknown): string {
    const placeholder = `:v${this.n++}`;
    this.values[placeholder] = v;
    return placeholder;
  }

  size(): number {
    return Math.max(
      this.sets.join(", ").length + this.removes.join(", ").length,
      this.conditions.join(" AND ").length,
    );
  }

  update(): string {
    return [
      this.sets.length > 0 ? `SET ${this.sets.join(", ")}` : "",
      this.removes.length > 0 ? `REMOVE ${this.removes.join(", ")}` : "",
    ]
      .filter((part) => part !== "")
      .join(" ");
  }
}

/** Splits clauses over as few expressions as fit; `begin` seeds each new one. */
function chunked<T>(
  items: readonly T[],
  begin: (x: Expression) => void,
  add: (x: Expression, item: T) => void,
) {
  const chunks: Expression[] = [];
  const start = () => {
    const x = new Expression();
    begin(x);
    chunks.push(x);
    return x;
  };
  let x = start();
  for (const item of items) {
    if (x.size() > MAX_EXPRESSION) x = start();
    add(x, item);
  }
  return chunks;
}

export class DynamoCommandSetStore implements CommandSetStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tasksTable: string,
  ) {}

  private send(
    taskId: string,
    family: CommandFamily,
    x: Expression,
    returnAll: boolean,
    part: number | undefined,
    refusedSet = false,
  ) {
    return this.doc.send(
      new UpdateCommand({
        TableName: this.tasksTable,
        Key: { id: setPk(taskId, family, part) },
        UpdateExpression: x.update(),
        ...(x.conditions.length > 0 ? { ConditionExpression: x.conditions.join(" AND ") } : {}),
        ExpressionAttributeNames: x.names,
        ...(Object.keys(x.values).length > 0 ? { ExpressionAttributeValues: x.values } : {}),
        ReturnValues: returnAll ? "ALL_NEW" : "NONE",
        // Asked by the writes that read a refusal's record (refusedSet): the refusal carries it,
        // no response bytes otherwise. Not asked elsewhere, so no other error carries a record
        // (with its wait's task token) to wherever it is logged.
        ...(refusedSet ? { ReturnValuesOnConditionCheckFailure: "ALL_OLD" as const } : {}),
      }),
    );
  }

  /**
   * The record as a refused write found it: handed back by the refusal itself, else (a record
   * that does not exist, or a store that hands back nothing) read.
   */
  private async refusedSet(
    error: unknown,
    taskId: string,
    family: CommandFamily,
    part: number | undefined,
  ): Promise<CommandSet | undefined> {
    const item = (error as { Item?: Record<string, AttributeValue> }).Item;
    if (item !== undefined && Object.keys(item).length > 0) return itemToSet(unmarshall(item));
    return this.get(taskId, family, part);
  }

  /** What a write that may create the set sets: its task, family and part (first stays), and `ttl`. */
  private static identity(
    x: Expression,
    taskId: string,
    family: CommandFamily,
    part: number | undefined,
    ttl: { latest: number; keep: boolean },
  ): void {
    const seconds = x.value(Math.ceil(ttl.latest / 1000) + RETENTION_SECONDS);
    const attributes: [string, string][] = [
      ["taskId", x.value(taskId)],
      ["family", x.value(family)],
    ];
    if (part !== undefined) attributes.push(["part", x.value(part)]);
    for (const [attribute, value] of attributes) {
      const a = x.name(attribute);
      x.sets.push(`${a} = if_not_exists(${a}, ${value})`);
    }
    const t = x.name("ttl");
    x.sets.push(ttl.keep ? `${t} = if_not_exists(${t}, ${seconds})` : `${t} = ${seconds}`);
  }

  async open(
    taskId: string,
    family: CommandFamily,
    entries: Record<string, CommandEntry>,
    part?: number,
    wake?: WaitToStore,
    rackId?: string,
  ): Promise<CommandSet> {
    const latest = Math.max(0, ...Object.values(entries).map((e) => e.deadline));
    const chunks = chunked(
      Object.entries(entries),
      (x) => {
        // A week past the latest deadline: later commands have later deadlines.
        DynamoCommandSetStore.identity(x, taskId, family, part, { latest, keep: false });
        x.conditions.push(`attribute_not_exists(${x.name("closedAt")})`);
        if (rackId !== undefined) {
          const rk = x.name("rk");
          x.sets.push(`${rk} = if_not_exists(${rk}, ${x.value(rackId)})`);
        }
      },
      (x, [key, entry]) => {
        const a = x.name(`e_${key}`);
        // An entry already there keeps what it holds: its first window, publication and reports.
        x.sets.push(`${a} = if_not_exists(${a}, ${x.value(entryToItem(entry))})`);
      },
    );
    // The wait's token goes with the last chunk: stored once every entry is.
    const last = chunks[chunks.length - 1];
    if (wake !== undefined && last !== undefined)
      last.sets.push(`${last.name("w")} = ${last.value(storedWait(wake))}`);
    let stored: Item | undefined;
    for (const [i, chunk] of chunks.entries()) {
      try {
        stored = (await this.send(taskId, family, chunk, i === chunks.length - 1, part, true)).Attributes;
      } catch (error) {
        if (!isConditionFailed(error)) throw error;
        // Closed: the set as it is, as the refusal found it (the only refusal there is).
        const set = await this.refusedSet(error, taskId, family, part);
        if (set?.closedAt === undefined) {
          // Thrown on without the record it carried (a wait's task token among it).
          delete (error as { Item?: unknown }).Item;
          throw error;
        }
        return set;
      }
    }
    return itemToSet(stored ?? { taskId, family, ...(part === undefined ? {} : { part }) });
  }

  async close(taskId: string, now: number, parts: readonly number[]): Promise<void> {
    await Promise.all(
      closedRecords(parts).map(({ family, part }) => {
        const x = new Expression();
        DynamoCommandSetStore.identity(x, taskId, family, part, { latest: now, keep: true });
        const closed = x.name("closedAt");
        x.sets.push(`${closed} = if_not_exists(${closed}, ${x.value(now)})`);
        return this.send(taskId, family, x, false, part);
      }),
    );
  }

  async markPublished(
    taskId: string,
    family: CommandFamily,
    keys: readonly string[],
    now: number,
    part?: number,
  ): Promise<void> {
    if (keys.length === 0) return;
    const chunks = chunked(
      keys,
      () => {},
      (x, key) => {
        const e = x.name(`e_${key}`);
        const pb = `${e}.${x.name("pb")}`;
        x.sets.push(`${pb} = if_not_exists(${pb}, ${x.value(now)})`);
        x.conditions.push(`attribute_exists(${e})`);
      },
    );
    for (const chunk of chunks) await this.send(taskId, family, chunk, false, part);
  }

  async awaitAnswers(
    taskId: string,
    family: CommandFamily,
    wake: WaitToStore,
    part?: number,
  ): Promise<CommandSet | undefined> {
    const x = new Expression();
    x.sets.push(`${x.name("w")} = ${x.value(storedWait(wake))}`);
    x.conditions.push(`${x.name("family")} = ${x.value(family)}`);
    try {
      const out = await this.send(taskId, family, x, true, part);
      return itemToSet(out.Attributes ?? { taskId, family });
    } catch (error) {
      if (isConditionFailed(error)) return undefined;
      throw error;
    }
  }

  async get(taskId: string, family: CommandFamily, part?: number): Promise<CommandSet | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tasksTable,
        Key: { id: setPk(taskId, family, part) },
        ConsistentRead: true,
      }),
    );
    return out.Item === undefined ? undefined : itemToSet(out.Item);
  }

  async getUpdates(taskId: string, parts: readonly number[]): Promise<CommandSet | undefined> {
    return (await this.read(taskId, ["u"], parts, false)).sets.u;
  }

  /** Keys of a task's records of these families and of these parts of its update set. */
  static keysOf(taskId: string, families: readonly CommandFamily[], parts: readonly number[]) {
    return [
      ...[...new Set(families)].map((family) => ({ id: setPk(taskId, family) })),
      ...[...new Set(parts)].map((part) => ({ id: setPk(taskId, "u", part) })),
    ];
  }

  /** Records read by keysOf → the sets by task and family, the update set's parts merged in. */
  static setsOf(items: Item[]): Map<string, Partial<Record<CommandFamily, CommandSet>>> {
    const byTask = new Map<
      string,
      { sets: Partial<Record<CommandFamily, CommandSet>>; parts: CommandSet[] }
    >();
    for (const item of items) {
      const set = itemToSet(item);
      const found = byTask.get(set.taskId) ?? { sets: {}, parts: [] };
      if (set.part === undefined) found.sets[set.family] = set;
      else found.parts.push(set);
      byTask.set(set.taskId, found);
    }
    return new Map(
      [...byTask].map(([taskId, { sets, parts }]) => {
        const updates = parts.length === 0 ? sets.u : mergeParts(sets.u, parts);
        return [taskId, updates === undefined ? sets : { ...sets, u: updates }];
      }),
    );
  }

  getWithTask(
    taskId: string,
    families: readonly CommandFamily[],
    parts: readonly number[] = [],
  ): Promise<{ task: Task | undefined; sets: Partial<Record<CommandFamily, CommandSet>> }> {
    return this.read(taskId, families, parts, true);
  }

  /** One strongly consistent BatchGetItem: the task (`withTask`), its records, its update set's parts. */
  private async read(
    taskId: string,
    families: readonly CommandFamily[],
    parts: readonly number[],
    withTask: boolean,
  ): Promise<{ task: Task | undefined; sets: Partial<Record<CommandFamily, CommandSet>> }> {
    const keys = [
      ...(withTask ? [{ id: taskId }] : []),
      ...DynamoCommandSetStore.keysOf(taskId, families, parts),
    ];
    return taskWithSetsOf(taskId, await batchGetAll(this.doc, this.tasksTable, keys, { consistent: true }));
  }

  async getMany(
    taskIds: readonly string[],
    family: CommandFamily,
    parts: readonly number[] = [],
  ): Promise<Map<string, CommandSet>> {
    const keys = [...new Set(taskIds)].flatMap((taskId) =>
      DynamoCommandSetStore.keysOf(taskId, [family], family === "u" ? parts : []),
    );
    const items = keys.length === 0 ? [] : await batchGetAll(this.doc, this.tasksTable, keys);
    const found = new Map<string, CommandSet>();
    for (const [taskId, sets] of DynamoCommandSetStore.setsOf(items)) {
      const set = sets[family];
      if (set !== undefined) found.set(taskId, set);
    }
    return found;
  }

  async reopen(
    taskId: string,
    family: CommandFamily,
    windows: Record<string, { sentAt: number; deadline: number }>,
    part?: number,
  ): Promise<void> {
    const keys = Object.entries(windows);
    if (keys.length === 0) return;
    const latest = Math.max(...keys.map(([, w]) => w.deadline));
    const chunks = chunked(
      keys,
      (x) => {
        x.sets.push(`${x.name("ttl")} = ${x.value(Math.ceil(latest / 1000) + RETENTION_SECONDS)}`);
      },
      (x, [key, window]) => {
        const e = x.name(`e_${key}`);
        x.removes.push(`${e}.${x.name("pb")}`);
        x.sets.push(
          `${e}.${x.name("s")} = ${x.value(window.sentAt)}`,
          `${e}.${x.name("d")} = ${x.value(window.deadline)}`,
        );
        x.conditions.push(`attribute_exists(${e})`);
      },
    );
    for (const chunk of chunks) await this.send(taskId, family, chunk, false, part);
  }

  async record(
    taskId: string,
    family: CommandFamily,
    writes: Record<string, EntryWrite>,
    options: { returnSet?: boolean; part?: number; heardAt?: number; rackId?: string } = {},
  ): Promise<{ outcome: "written"; set?: CommandSet } | { outcome: "refused"; set?: CommandSet }> {
    const { rackId } = options;
    const chunks = chunked(
      Object.entries(writes),
      (x) => {
        x.conditions.push(`${x.name("family")} = ${x.value(family)}`);
        // Reports from a rack's topic only onto that rack's commands (a record of before: any).
        if (rackId !== undefined) {
          const rk = x.name("rk");
          x.conditions.push(`(attribute_not_exists(${rk}) OR ${rk} = ${x.value(rackId)})`);
        }
      },
      (x, [key, w]) => {
        const e = x.name(`e_${key}`);
        const field = (f: string) => `${e}.${x.name(f)}`;
        x.conditions.push(`attribute_exists(${e})`);
        if (w.result !== undefined) {
          x.sets.push(
            `${field("r")} = ${x.value(w.result.value)}`,
            `${field("rt")} = ${x.value(w.result.at)}`,
          );
          x.conditions.push(`attribute_not_exists(${field("r")})`);
        }
        if (w.status !== undefined) {
          x.sets.push(`${field("q")} = ${x.value(w.status)}`);
          x.conditions.push(`attribute_not_exists(${field("q")})`);
        }
        if (w.progress !== undefined) {
          const p = x.value(w.progress.percent);
          x.sets.push(`${field("p")} = ${p}`, `${field("pt")} = ${x.value(w.progress.at)}`);
          x.conditions.push(
            `attribute_not_exists(${field("r")}) AND (attribute_not_exists(${field("p")}) OR ${field("p")} < ${p})`,
          );
        }
        if (w.ackedAt !== undefined) {
          const a = field("a");
          x.sets.push(`${a} = if_not_exists(${a}, ${x.value(w.ackedAt)})`);
          // A lone acknowledgement that changes nothing is refused, not written again.
          if (w.result === undefined && w.status === undefined && w.progress === undefined)
            x.conditions.push(`attribute_not_exists(${a})`);
        }
      },
    );
    const last = chunks[chunks.length - 1];
    if (options.heardAt !== undefined && last !== undefined) {
      // The write's time, and the one stored before it (-1: none) copied beside it in the same
      // update (operands read the item as it was): the record's writes are serialized, so each
      // reads back the one before it, and the first in a heartbeat interval knows it is.
      const wr = last.name("wr");
      last.sets.push(`${last.name("wrp")} = if_not_exists(${wr}, ${last.value(-1)})`);
      last.sets.push(`${wr} = ${last.value(options.heardAt)}`);
    }
    let wrote = false;
    let after: Item | undefined;
    for (const chunk of chunks) {
      if (chunk.sets.length === 0) continue;
      try {
        after = (await this.send(taskId, family, chunk, options.returnSet === true, options.part, true))
          .Attributes;
        wrote = true;
      } catch (error) {
        if (!isConditionFailed(error)) throw error;
        // A duplicate or late report the writer did not know about: what is stored decides.
        const stored = await this.refusedSet(error, taskId, family, options.part);
        return stored === undefined ? { outcome: "refused" } : { outcome: "refused", set: stored };
      }
    }
    if (!wrote) return { outcome: "refused" };
    return after === undefined ? { outcome: "written" } : { outcome: "written", set: itemToSet(after) };
  }
}

/**
 * getWithTask's keys in the Tasks table (the task's item and its records of these families), for
 * a BatchGetItem that reads another table in the same request (image-store.ts
 * `getImagesWithRackAndTask`); `taskWithSetsOf` makes the task and its sets of what it read.
 */
export function taskWithSetsKeys(taskId: string, families: readonly CommandFamily[]): Item[] {
  return [{ id: taskId }, ...DynamoCommandSetStore.keysOf(taskId, families, [])];
}

/** The task (undefined: no such item) and its sets, from the Tasks items read by their keys. */
export function taskWithSetsOf(
  taskId: string,
  items: Item[],
): { task: Task | undefined; sets: Partial<Record<CommandFamily, CommandSet>> } {
  const taskItem = items.find((item) => item.id === taskId);
  const sets = DynamoCommandSetStore.setsOf(items.filter((item) => item !== taskItem));
  return { task: taskItem === undefined ? undefined : itemToTask(taskItem), sets: sets.get(taskId) ?? {} };
}
