/**
 * CommandSetStore on DynamoDB: a child task's command sets (src/domain/command-sets.ts) in the
 * Tasks table, beside the task items, one item per task and family, no index attribute (no task
 * listing sees them):
 *
 *   cmds#<taskId>#<family>   { taskId, family, ttl, warnings?,
 *                              e_<entry>: { c: componentId, w: sendKey, a?: ackedAt, p?: progress,
 *                                           pt?: progressAt, r?: result, rt?: resultAt, s?: answer },
 *                              w_<sendKey>: { s: sentAt, d: deadline, t: timeoutSeconds, p?: publishedAt } }
 *
 * Entries and sends are top-level attributes, so adding one needs no parent map, and one
 * UpdateItem sets any number of them. A batch of BMC reports is one UpdateItem whose condition
 * carries each entry's rule (first result wins, progress only upwards, …); when it fails, the
 * record is read back and the caller writes what still changes something, so a duplicate or late
 * report is never written twice.
 * Expressions are chunked to stay under DynamoDB's 4 KB per expression.
 *
 * Items live a week past their last deadline (TTL, epoch seconds), for post-mortems, like the
 * request records of older tasks (dynamo-task-records.ts).
 */
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { type CommandSetStore, commandSetKey } from "../../app/ports.js";
import type {
  CommandEntry,
  CommandFamily,
  CommandSend,
  CommandSet,
  EntryWrite,
} from "../../domain/command-sets.js";
import { batchGetAll } from "../dynamodb/run-store.js";

type Item = Record<string, unknown>;

const setPk = (taskId: string, family: CommandFamily): string => `cmds#${taskId}#${family}`;
const RETENTION_SECONDS = 7 * 24 * 3600;
/** DynamoDB's limit is 4 KB per expression string; chunks stay well under it. */
const MAX_EXPRESSION = 3_500;

function isConditionFailed(error: unknown): boolean {
  return (error as { name?: string } | null)?.name === "ConditionalCheckFailedException";
}

function entryToItem(e: CommandEntry): Item {
  const item: Item = { c: e.componentId, w: e.send };
  if (e.ackedAt !== undefined) item.a = e.ackedAt;
  if (e.progress !== undefined) item.p = e.progress;
  if (e.progressAt !== undefined) item.pt = e.progressAt;
  if (e.result !== undefined) item.r = e.result;
  if (e.resultAt !== undefined) item.rt = e.resultAt;
  if (e.status !== undefined) item.s = e.status;
  return item;
}

function itemToEntry(i: Item): CommandEntry {
  const e: CommandEntry = { componentId: i.c as string, send: i.w as string };
  if (i.a !== undefined) e.ackedAt = Number(i.a);
  if (i.p !== undefined) e.progress = Number(i.p);
  if (i.pt !== undefined) e.progressAt = Number(i.pt);
  if (i.r !== undefined) e.result = i.r as CommandEntry["result"];
  if (i.rt !== undefined) e.resultAt = Number(i.rt);
  if (i.s !== undefined) e.status = i.s as CommandEntry["status"];
  return e;
}

function sendToItem(s: CommandSend): Item {
  const item: Item = { s: s.sentAt, d: s.deadline, t: s.timeoutSeconds };
  if (s.publishedAt !== undefined) item.p = s.publishedAt;
  return item;
}

function itemToSend(i: Item): CommandSend {
  const s: CommandSend = { sentAt: Number(i.s), deadline: Number(i.d), timeoutSeconds: Number(i.t) };
  if (i.p !== undefined) s.publishedAt = Number(i.p);
  return s;
}

function itemToSet(item: Item): CommandSet {
  const set: CommandSet = {
    taskId: item.taskId as string,
    family: item.family as CommandFamily,
    entries: {},
    sends: {},
  };
  for (const [name, value] of Object.entries(item)) {
    if (name.startsWith("e_")) set.entries[name.slice(2)] = itemToEntry(value as Item);
    else if (name.startsWith("w_")) set.sends[name.slice(2)] = itemToSend(value as Item);
  }
  if (Array.isArray(item.warnings)) set.warnings = item.warnings as string[];
  return set;
}

/** One update's expression parts, built up clause by clause. */
class Expression {
  readonly sets: string[] = [];
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
    return Math.max(this.sets.join(", ").length, this.conditions.join(" AND ").length);
  }
}

export class DynamoCommandSetStore implements CommandSetStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tasksTable: string,
  ) {}

  async open(
    taskId: string,
    family: CommandFamily,
    entries: Record<string, CommandEntry>,
    send: { key: string; value: CommandSend },
    extra: { warnings?: string[] } = {},
  ): Promise<CommandSend> {
    const chunks: Expression[] = [];
    let x = new Expression();
    const start = () => {
      x = new Expression();
      const keep = (attribute: string, value: unknown) => {
        const a = x.name(attribute);
        x.sets.push(`${a} = if_not_exists(${a}, ${x.value(value)})`);
      };
      keep("taskId", taskId);
      keep("family", family);
      // A week past the latest deadline: later sends have later deadlines.
      x.sets.push(`${x.name("ttl")} = ${x.value(Math.ceil(send.value.deadline / 1000) + RETENTION_SECONDS)}`);
      chunks.push(x);
      return keep;
    };
    let keep = start();
    for (const [key, entry] of Object.entries(entries)) {
      if (x.size() > MAX_EXPRESSION) keep = start();
      keep(`e_${key}`, entryToItem(entry));
    }
    // The send goes in the last chunk: once it is stored, every entry is.
    keep(`w_${send.key}`, sendToItem(send.value));
    if (extra.warnings !== undefined && extra.warnings.length > 0) keep("warnings", extra.warnings);
    let stored: Item | undefined;
    for (const chunk of chunks) {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.tasksTable,
          Key: { id: setPk(taskId, family) },
          UpdateExpression: `SET ${chunk.sets.join(", ")}`,
          ExpressionAttributeNames: chunk.names,
          ExpressionAttributeValues: chunk.values,
          ReturnValues: chunk === chunks[chunks.length - 1] ? "UPDATED_NEW" : "NONE",
        }),
      );
      stored = out.Attributes;
    }
    const value = stored?.[`w_${send.key}`] as Item | undefined;
    return value === undefined ? send.value : itemToSend(value);
  }

  async markPublished(taskId: string, family: CommandFamily, sendKey: string, now: number): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tasksTable,
        Key: { id: setPk(taskId, family) },
        UpdateExpression: "SET #w.#p = if_not_exists(#w.#p, :now)",
        ConditionExpression: "attribute_exists(#w)",
        ExpressionAttributeNames: { "#w": `w_${sendKey}`, "#p": "p" },
        ExpressionAttributeValues: { ":now": now },
      }),
    );
  }

  async get(keys: readonly { taskId: string; family: CommandFamily }[]): Promise<Map<string, CommandSet>> {
    const found = new Map<string, CommandSet>();
    const ids = [...new Set(keys.map((k) => setPk(k.taskId, k.family)))];
    if (ids.length === 1) {
      const out = await this.doc.send(
        new GetCommand({ TableName: this.tasksTable, Key: { id: ids[0] }, ConsistentRead: true }),
      );
      if (out.Item !== undefined) {
        const set = itemToSet(out.Item);
        found.set(commandSetKey(set.taskId, set.family), set);
      }
      return found;
    }
    const items = await batchGetAll(
      this.doc,
      this.tasksTable,
      ids.map((id) => ({ id })),
      { consistent: true },
    );
    for (const item of items) {
      const set = itemToSet(item);
      found.set(commandSetKey(set.taskId, set.family), set);
    }
    return found;
  }

  async record(
    taskId: string,
    family: CommandFamily,
    writes: Record<string, EntryWrite>,
  ): Promise<{ outcome: "written"; set: CommandSet } | { outcome: "refused"; set?: CommandSet }> {
    const chunks: Expression[] = [];
    let x = new Expression();
    const begin = () => {
      x = new Expression();
      x.conditions.push(`${x.name("family")} = ${x.value(family)}`);
      chunks.push(x);
    };
    begin();
    for (const [key, w] of Object.entries(writes)) {
      if (x.size() > MAX_EXPRESSION) begin();
      const e = x.name(`e_${key}`);
      const field = (f: string) => `${e}.${x.name(f)}`;
      x.conditions.push(`attribute_exists(${e})`);
      if (w.result !== undefined) {
        x.sets.push(`${field("r")} = ${x.value(w.result.value)}`, `${field("rt")} = ${x.value(w.result.at)}`);
        x.conditions.push(`attribute_not_exists(${field("r")})`);
      }
      if (w.status !== undefined) {
        x.sets.push(`${field("s")} = ${x.value(w.status)}`);
        x.conditions.push(`attribute_not_exists(${field("s")})`);
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
    }
    let after: Item | undefined;
    for (const chunk of chunks) {
      if (chunk.sets.length === 0) continue;
      try {
        const out = await this.doc.send(
          new UpdateCommand({
            TableName: this.tasksTable,
            Key: { id: setPk(taskId, family) },
            UpdateExpression: `SET ${chunk.sets.join(", ")}`,
            ConditionExpression: chunk.conditions.join(" AND "),
            ExpressionAttributeNames: chunk.names,
            ExpressionAttributeValues: chunk.values,
            ReturnValues: "ALL_NEW",
          }),
        );
        after = out.Attributes;
      } catch (error) {
        if (!isConditionFailed(error)) throw error;
        // Rare (a duplicate or late report the writer did not know about): read what is stored.
        const old = await this.read(taskId, family);
        return old === undefined ? { outcome: "refused" } : { outcome: "refused", set: itemToSet(old) };
      }
    }
    const set = after === undefined ? await this.read(taskId, family) : after;
    if (set === undefined) return { outcome: "refused" };
    return { outcome: "written", set: itemToSet(set) };
  }

  private async read(taskId: string, family: CommandFamily): Promise<Item | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tasksTable,
        Key: { id: setPk(taskId, family) },
        ConsistentRead: true,
      }),
    );
    return out.Item;
  }
}
