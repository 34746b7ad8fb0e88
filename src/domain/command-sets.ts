/**
 * Command sets: the BMC commands of one child task, and what the BMCs reported on them, kept as
 * ONE record per task and family instead of one per command:
 *
 *   u   the update commands (every wave, every attempt of a rule's retry)
 *   q   the preflight queries (and the re-asks while the task waits for readiness)
 *   v   the queries of a rule's verify steps
 *
 * A record holds one ENTRY per command (component and attempt), keyed by a hash the receiver can
 * recompute, with the command's window (sent, deadline, published) and what its BMC reported. A
 * wave's check is one read of one record, a wave's commands one write (and one more once they are
 * published), and a batch of BMC reports for the same task one write of the entries it changes.
 *
 * Request ids name the record and the entry, so a report finds its record without a lookup:
 *
 *   upd-<taskId>.u<attempt>p<part>.<entry>          an update (rule retry `attempt`, 0 first) in
 *                                                   the update set's part `part` (its stage)
 *   upd-<taskId>.u<attempt>.<entry>                 an update in the update set's first record
 *                                                   (every update sent before parts, 2026-12-02)
 *   qry-<taskId>.q<attempt>.<entry>                 a preflight query (re-ask `attempt`)
 *   qry-<taskId>.v<stage>.<step>.<attempt>.<entry>  a verify step's query
 *
 * The update set is kept in PARTS, one record per stage of the task's rule (`cmds#<task>#u.<stage>`)
 * beside the first record (`cmds#<task>#u`), which closes the whole set and holds what was sent
 * before parts: every write of a record rewrites all of it, and a rack's 39 results in one record
 * made each of its ~30 writes ~4 KB (5 write units); a stage's part is a few hundred bytes. The
 * part is where an entry is stored, not what it is: the entry key does not hash it, so a command
 * keeps its key wherever it lives, and an entry lives in one record only (commands.ts).
 *
 * `<entry>` is 12 hex digits of sha256 over the task, family, qualifier and the COMPONENT id, so a
 * report counts only for the component whose topic it came on: a BMC can publish on its own topic
 * only (the IoT policy), and a request id copied from another component's command does not hash to
 * the reporting component's entry (`isReportFor`).
 *
 * Request ids of the older form (`upd-`/`qry-` + 32 hex digits, one request record per command,
 * before command sets) do not parse (`parseCommandRequestId` → undefined): their reports are
 * ignored (state-machines/README.md, "Executions across a deploy").
 */
import type { BmcEvent } from "./bmc-protocol.js";
import {
  type CommandAddress,
  type CommandFamily,
  commandRequestId,
  entryKey,
  kindOfFamily,
} from "./command-addresses.js";
import type { BmcRequestRecord } from "./component-verdict.js";
import { DEFAULT_RULE, type RuleDefinition } from "./operation-rules.js";

/** Where a command sits and its request id (command-addresses.ts), with the sets that store them. */
export * from "./command-addresses.js";

/**
 * The families a task's end from outside its execution closes: the update and the verify steps
 * send without reading the task. The preflight's queries read it first and need no close.
 */
export const CLOSABLE_FAMILIES: readonly CommandFamily[] = ["u", "v"];

/** The records a close marks: each closable family's (first) record, and these parts of the update set. */
export const closedRecords = (parts: readonly number[]): { family: CommandFamily; part?: number }[] => [
  ...CLOSABLE_FAMILIES.map((family) => ({ family })),
  ...parts.map((part) => ({ family: "u" as const, part })),
];

/**
 * The parts a task's update set may have: one per stage of its rule (absent: the default rule's).
 * Readers of the whole set read these with its first record (`mergeParts`).
 */
export const updateParts = (rule: Pick<RuleDefinition, "stages"> = DEFAULT_RULE): number[] =>
  rule.stages.map((_, i) => i);

/**
 * The whole update set from its first record and its parts (each as read; absent ones left out):
 * every entry, each from the one record that holds it, with the part it is stored in; the first
 * record's close. Undefined when none exists.
 */
export function mergeParts(
  first: CommandSet | undefined,
  parts: readonly (CommandSet | undefined)[],
): CommandSet | undefined {
  const found = parts.filter((p): p is CommandSet => p !== undefined);
  const base = first ?? found[0];
  if (base === undefined) return undefined;
  const merged: CommandSet = { taskId: base.taskId, family: "u", entries: { ...first?.entries } };
  if (first?.closedAt !== undefined) merged.closedAt = first.closedAt;
  for (const set of found) {
    for (const [key, entry] of Object.entries(set.entries)) {
      merged.entries[key] ??= set.part === undefined ? entry : { ...entry, part: set.part };
    }
  }
  return merged;
}
// ---------------------------------------------------------------------------------------------
// The record

/**
 * One command in its set: when it went out, its deadline, and what its BMC reported. The window
 * is the command's own (not its wave's), so a re-driven task that regroups its components never
 * finds a command under another wave's deadline.
 */
export interface CommandEntry {
  // No component id: the entry's key is the component's (a hash over its id, `entryKey`), and
  // every reader looks an entry up by the component it asks about. Entries written before
  // 2026-12-01 still carry one (`c`), read past.
  sentAt: number;
  deadline: number;
  /** Set once the command was published: a retried step does not publish it again. */
  publishedAt?: number;
  ackedAt?: number;
  /** The last progress percent stored, and when it was reported. */
  progress?: number;
  progressAt?: number;
  /** An update's result (the first one; later ones are ignored) and when it arrived. */
  result?: BmcRequestRecord["result"];
  resultAt?: number;
  /** A query's answer (the first one). */
  status?: BmcRequestRecord["status"];
  /** The update set's part it is stored in, on entries of a merged set (`mergeParts`); never stored. */
  part?: number;
}

export interface CommandSet {
  taskId: string;
  family: CommandFamily;
  /** By entry key. */
  entries: Record<string, CommandEntry>;
  /**
   * Set when the task was ended from outside its execution (a cancel, a stopped execution): the
   * set takes no new command, so a step still in flight sends nothing (commands.ts).
   */
  closedAt?: number;
  /**
   * The execution waiting for these entries (a wave's commands), by its Step Functions task token:
   * whoever stores the last of their results or answers wakes it (`wakeDue`), so the wave is
   * judged when its results are in, not at its next poll. The latest wait replaces the one before.
   */
  wake?: {
    token: string;
    keys: string[];
    heartbeatSeconds?: number;
    startedAt?: number;
    resume?: WaitResume;
  };
  /** The update set's part this record is; absent: the set's first record (or a merged set). */
  part?: number;
  /**
   * When the receiver's last write of reports on this record was received (`at`), and the one
   * before it (`before`; absent: none), as that write stored and read them back: paces the wait's
   * heartbeats (`heartbeatDue`). Absent: no write of reports asked for it.
   */
  heard?: { at: number; before?: number };
  /**
   * The rack the set's commands went to (its task's), as the first `open` stored it: a report that
   * came from another rack's topic is not stored here (`CommandSetStore.record`'s `rackId`).
   * Absent on records opened before it was kept.
   */
  rackId?: string;
}

/**
 * A wait as its step stores it on the set (`CommandSet.wake`): the execution's task token, the
 * entries it waits for, its heartbeat timeout when it has one (AwaitWave's; AwaitPreflight's has
 * none) and when the step stored it (`startedAt`: Step Functions starts a wait's heartbeat clock
 * with its state, so the reports of the wait's first heartbeat interval need send none).
 */
export interface WaitToStore {
  token: string;
  keys: readonly string[];
  heartbeatSeconds?: number;
  startedAt?: number;
  /**
   * What the wait's state goes on with once woken, besides the answers (`wakeOutput`): AwaitWave's
   * wave, so the invocation that judges it (the next AwaitWave's) knows its step and cursor. JSON,
   * opaque here; absent (AwaitPreflight's wait, and waits of the definition before): the answers
   * alone.
   */
  resume?: WaitResume;
}

/** A wait's resume (`WaitToStore.resume`): a plain JSON object, stored and handed back as it is. */
export type WaitResume = Readonly<Record<string, unknown>>;

/** A wake-up's output: the answers alone, or the wait's resume with them in it (`wakeOutput`). */
export type WakeOutput = CommandSet | (WaitResume & { answers: CommandSet });

/** An entry's command has its terminal report: an update its result, a query its answer. */
export const isAnswered = (family: CommandFamily, entry: CommandEntry | undefined): boolean =>
  family === "u" ? entry?.result !== undefined : entry?.status !== undefined;

/**
 * The token to wake the waiting execution with, when every entry it waits for is answered; else
 * undefined. A closed set (its task ended from outside) wakes nothing early: the execution is being
 * stopped, and a check woken while the wave is still pending would only wait again, at once.
 *   wake { keys [a, b] }, a answered, b not → undefined; both → the token.
 */
export function wakeDue(set: CommandSet | undefined): string | undefined {
  const wake = set?.wake;
  if (set === undefined || wake === undefined) return undefined;
  return wake.keys.every((key) => isAnswered(set.family, set.entries[key])) ? wake.token : undefined;
}

/**
 * At most one heartbeat per wait every this many ms (and at least HEARTBEATS_PER_TIMEOUT intervals
 * within the wait's heartbeat timeout, when that is shorter). A heartbeat goes out with the first
 * write of reports in an interval, so a BMC reporting at least every R ms keeps a wait whose
 * heartbeat times out after H ms as long as interval + R < H: with AwaitWave's 300-s net, a minute
 * leaves 240 s between reports (the simulated BMCs report every 150 s of a 10-minute flash, the
 * Redfish agent every 60 s by default, 150 s at its longest), and a 10-minute flash wave costs at
 * most 10 heartbeats (the intervals it spans after the wait's own) however many batches its
 * reports are dealt among.
 */
export const HEARTBEAT_INTERVAL_MS = 60_000;
export const HEARTBEATS_PER_TIMEOUT = 5;

/**
 * The heartbeat interval of a wait whose heartbeat times out after `heartbeatSeconds`.
 *   300 s → 60,000 ms; 5 s → 1,000 ms.
 */
export const heartbeatIntervalMs = (heartbeatSeconds: number): number =>
  Math.min(HEARTBEAT_INTERVAL_MS, (heartbeatSeconds * 1000) / HEARTBEATS_PER_TIMEOUT);

/**
 * The token to send a heartbeat with (AwaitWave's wait kept alive: its BMCs are still heard from),
 * when this write stored something of an entry the wait is for (`written`: its keys; an
 * acknowledgement, progress, a result that does not complete it), the wait has a heartbeat (its
 * `heartbeatSeconds`: AwaitPreflight's has none, so nothing there to keep alive), it is not due to
 * be woken instead, and this write is the record's first of reports in its heartbeat interval
 * (`heard`: the write's own time against the one before, both as the write stored them: the store
 * serializes writes of one record, so of the writes in one interval exactly one sees the one
 * before it in an earlier interval), in an interval after the wait's own start (`startedAt`: its
 * heartbeat clock started then, so the acknowledgements that follow a send at once need none);
 * else undefined. A closed set keeps nothing alive: its execution is being stopped.
 *   wake { keys [a, b], 300 s }, a's progress written at 61 s, the write before at 59 s → the token;
 *   the write before at 60.5 s → undefined (that write's interval); c's written → undefined;
 *   wake started at 60.2 s, a's acknowledgement written at 61 s, none before → undefined.
 */
export function heartbeatDue(set: CommandSet | undefined, written: readonly string[]): string | undefined {
  const wake = set?.wake;
  if (set === undefined || wake?.heartbeatSeconds === undefined || set.closedAt !== undefined)
    return undefined;
  if (wakeDue(set) !== undefined || set.heard === undefined) return undefined;
  if (!written.some((key) => wake.keys.includes(key))) return undefined;
  const { at, before } = set.heard;
  const interval = heartbeatIntervalMs(wake.heartbeatSeconds);
  const earlier = (t: number | undefined) =>
    t === undefined || Math.floor(t / interval) < Math.floor(at / interval);
  return earlier(before) && earlier(wake.startedAt) ? wake.token : undefined;
}

/**
 * What a woken wait hands its check (AwaitWave's result, in the wake-up itself): the entries it
 * waited for, as stored when the last of them was answered, so the check judges the wave without
 * reading the set again. Answers are first-wins, so nothing a later write stores changes them.
 */
export function awaitedAnswers(set: CommandSet): CommandSet {
  const entries: Record<string, CommandEntry> = {};
  for (const key of set.wake?.keys ?? []) {
    const entry = set.entries[key];
    if (entry !== undefined) entries[key] = entry;
  }
  return {
    taskId: set.taskId,
    family: set.family,
    ...(set.part === undefined ? {} : { part: set.part }),
    entries,
  };
}

/**
 * What a wake-up hands the waiting state (SendTaskSuccess's output, `WaveWaker.wake`): with a
 * resume stored with the wait, the resume with the answers in it (AwaitWave's `ResultPath` puts
 * the whole on `$.plan.wave`: the wave, woken, with what it waited for); without one, the answers
 * alone (`awaitedAnswers`), as waits of the definition before and AwaitPreflight's are woken.
 *   resume { step: 2, cursor {…} }, keys [a] answered → { step: 2, cursor {…}, answers { entries { a } } }
 */
export function wakeOutput(set: CommandSet): WakeOutput {
  const resume = set.wake?.resume;
  const answers = awaitedAnswers(set);
  return resume === undefined ? answers : { ...resume, answers };
}

/** A new command's entry: its key in the set and what is stored before it is published. */
export function newEntry(
  address: CommandAddress,
  componentId: string,
  window: { sentAt: number; deadline: number },
): [string, CommandEntry] {
  return [entryKey(address, componentId), { sentAt: window.sentAt, deadline: window.deadline }];
}

/**
 * One command of a set as the verdict functions read a request record (component-verdict.ts);
 * undefined while the command has not been sent.
 */
export function commandRecord(
  set: CommandSet | undefined,
  address: CommandAddress,
  componentId: string,
): BmcRequestRecord | undefined {
  const entry = set?.entries[entryKey(address, componentId)];
  if (entry === undefined) return undefined;
  const record: BmcRequestRecord = {
    componentId,
    requestId: commandRequestId(address, componentId),
    taskId: address.taskId,
    kind: kindOfFamily(address.family),
    sentAt: entry.sentAt,
    deadline: entry.deadline,
  };
  if (entry.publishedAt !== undefined) record.publishedAt = entry.publishedAt;
  if (entry.ackedAt !== undefined) record.ackedAt = entry.ackedAt;
  if (entry.progress !== undefined) record.progress = entry.progress;
  if (entry.result !== undefined) record.result = entry.result;
  if (entry.resultAt !== undefined) record.resultAt = entry.resultAt;
  if (entry.status !== undefined) record.status = entry.status;
  return record;
}

// ---------------------------------------------------------------------------------------------
// Reports → writes (the receiver's coalescing)

/**
 * At most one progress write per command every this many ms: a BMC may report progress as often as
 * it likes, and only one every few seconds reaches the record (and with it Task.report). The
 * result, an answer and the first report of any kind (with the progress it carries) are written at
 * once; the first progress after them waits FIRST_PROGRESS_AFTER_ACK_MS.
 */
export const PROGRESS_WRITE_INTERVAL_MS = 5_000;

/**
 * A command's first progress is written with its acknowledgement or, in a batch of its own, only
 * once it comes this long after it: progress in a flash's first second says no more than the
 * acknowledgement did (the BMC took the update and is alive), and a BMC that falls silent later
 * is still told apart from one that never progressed ("disconnected" against "hung").
 */
export const FIRST_PROGRESS_AFTER_ACK_MS = 1_000;

/** What a batch of reports says about one command: the first result and answer, the highest progress. */
export interface FoldedReports {
  /** When its first ack, progress or result arrived: any of them says the BMC took an update. */
  ackedAt?: number;
  result?: { value: NonNullable<BmcRequestRecord["result"]>; at: number };
  status?: NonNullable<BmcRequestRecord["status"]>;
  progress?: { percent: number; at: number };
}

/** Folds one command's reports of a batch, in arrival order. */
export function foldReports(reports: readonly { event: BmcEvent; at: number }[]): FoldedReports {
  const folded: FoldedReports = {};
  for (const { event, at } of reports) {
    if (event.type !== "status") folded.ackedAt ??= at;
    switch (event.type) {
      case "ack":
        break;
      case "progress":
        if (folded.progress === undefined || event.percent > folded.progress.percent)
          folded.progress = { percent: event.percent, at };
        break;
      case "result":
        folded.result ??= {
          value: {
            ...(event.ok
              ? { ok: true as const, version: event.version }
              : {
                  ok: false as const,
                  version: event.version,
                  error: { code: event.error.code, message: event.error.message },
                }),
            // Protocol v2: the parts the BMC says it flashed (the verdict compares them).
            ...(event.subTargets === undefined ? {} : { subTargets: event.subTargets }),
            // Protocol v3: a version flashed but staged until a reset.
            ...(event.pendingVersion === undefined ? {} : { pendingVersion: event.pendingVersion }),
          },
          at,
        };
        break;
      case "status":
        folded.status ??= {
          version: event.version,
          ...(event.ready === undefined ? {} : { ready: event.ready }),
          ...(event.reason === undefined ? {} : { reason: event.reason }),
          ...(event.pendingVersion === undefined ? {} : { pendingVersion: event.pendingVersion }),
          ...(event.error === undefined
            ? {}
            : { error: { code: event.error.code, message: event.error.message } }),
          ...(event.health === undefined ? {} : { health: event.health }),
          ...(event.healthReason === undefined ? {} : { healthReason: event.healthReason }),
        };
        break;
    }
  }
  return folded;
}

/** What is stored of a command, as far as the writer knows (its own writes, or the stored record). */
export interface KnownEntry {
  /** When the stored acknowledgement arrived; absent: none is stored. */
  ackedAt?: number;
  progress?: number;
  progressAt?: number;
  result: boolean;
  status: boolean;
}

export const knownOf = (entry: CommandEntry): KnownEntry => ({
  ...(entry.ackedAt === undefined ? {} : { ackedAt: entry.ackedAt }),
  ...(entry.progress === undefined ? {} : { progress: entry.progress }),
  ...(entry.progressAt === undefined ? {} : { progressAt: entry.progressAt }),
  result: entry.result !== undefined,
  status: entry.status !== undefined,
});

/**
 * What is known of an entry once `write` was stored on it (its conditions held, so the write's own
 * fields are what is stored now): a result, an answer or an acknowledgement written is stored; the
 * progress written is the stored progress. What the write did not touch stays as known before.
 */
export function knownAfter(known: KnownEntry | undefined, write: EntryWrite): KnownEntry {
  const { progress, progressAt } =
    write.progress === undefined
      ? (known ?? {})
      : { progress: write.progress.percent, progressAt: write.progress.at };
  const ackedAt = known?.ackedAt ?? write.ackedAt;
  return {
    ...(ackedAt === undefined ? {} : { ackedAt }),
    ...(progress === undefined ? {} : { progress }),
    ...(progressAt === undefined ? {} : { progressAt }),
    result: known?.result === true || write.result !== undefined,
    status: known?.status === true || write.status !== undefined,
  };
}

/** The fields of one entry a write sets; absent: nothing to write for it. */
export interface EntryWrite {
  ackedAt?: number;
  progress?: { percent: number; at: number };
  result?: { value: NonNullable<BmcRequestRecord["result"]>; at: number };
  status?: NonNullable<BmcRequestRecord["status"]>;
}

/**
 * What to write for one command, given its folded reports and what is known to be stored
 * (undefined: nothing known, so everything is written, under the store's conditions):
 *   - a result (update sets only) or an answer (query sets only): if none is stored; first wins;
 *   - an update's acknowledgement: if none is stored (any report is one);
 *   - progress (update sets, before a result): with the acknowledgement's own write; else the
 *     first one FIRST_PROGRESS_AFTER_ACK_MS after the stored acknowledgement, then only a higher
 *     one at least PROGRESS_WRITE_INTERVAL_MS after the last stored, so a chatty BMC costs a write
 *     every few seconds at most and progress in a flash's first second rides on the ack's write.
 * Reports of the wrong kind (a result for a query) change nothing. Undefined: nothing to write.
 *   known { acked at 0 }, progress 25 at 75                        → nothing (too soon after the ack)
 *   known { acked at 0 }, progress 25 at 1000                      → { progress 25 }
 *   known { acked at 0, progress 25 at 1000 }, progress 50 at 3000 → nothing (within the interval)
 *   known { acked at 0, progress 25 at 1000 }, result ok at 3000   → { result } (progress is moot)
 */
export function entryWrite(
  family: CommandFamily,
  folded: FoldedReports,
  known: KnownEntry | undefined,
): EntryWrite | undefined {
  const write: EntryWrite = {};
  const update = family === "u";
  if (update && folded.result !== undefined && known?.result !== true) write.result = folded.result;
  if (!update && folded.status !== undefined && known?.status !== true) write.status = folded.status;
  const resulted = known?.result === true || write.result !== undefined;
  if (update && !resulted && folded.progress !== undefined) {
    const p = folded.progress;
    const stored = known?.progress;
    // From the last write of the command's progress, or before any of its acknowledgement.
    const since = stored === undefined ? known?.ackedAt : (known?.progressAt ?? 0);
    const interval = stored === undefined ? FIRST_PROGRESS_AFTER_ACK_MS : PROGRESS_WRITE_INTERVAL_MS;
    const due = since === undefined || (p.percent > (stored ?? 0) && p.at - since >= interval);
    if (due) write.progress = p;
  }
  // An ack, progress or result is an update's acknowledgement (queries are answered, not acked).
  if (update && folded.ackedAt !== undefined && known?.ackedAt === undefined) write.ackedAt = folded.ackedAt;
  return Object.keys(write).length === 0 ? undefined : write;
}
