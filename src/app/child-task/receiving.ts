/**
 * The receiving half of the child task, behind lambdas/bmc-result.ts (its events parsed by
 * src/adapters/lambda/bmc-result-event.ts): BMC reports, in the batches the queue hands over,
 * stored on their task's command sets (src/domain/command-sets.ts) where the waiting execution
 * reads them; and the ends of executions, as Step Functions reports them, reconciled with their
 * tasks (outcome.ts).
 *
 * A message may be a rack agent's batch of reports (src/domain/bmc-rack-reports.ts): it is read as
 * its reports, each with its component, and its outcome is theirs together (any one failed: the
 * message goes back to the queue whole, at least once like a report alone). A report from a rack's
 * topic (a batch's, or one alone) is stored only on commands sent to that rack: the command set
 * keeps its rack and the write's condition refuses another (`CommandSetStore.record`'s `rackId`),
 * logged, so a rack's agent cannot answer for another rack's components.
 *
 * A batch costs one conditional write per command set it touches (a rack's wave: one), not one per
 * report: the reports of each command are folded (the first result or answer, the highest
 * progress) and only what changes the stored entry is written (`entryWrite`): a terminal result
 * once, progress at most every PROGRESS_WRITE_INTERVAL_MS, nothing for a duplicate. What is stored
 * is known from this receiver's own writes (it lives as long as its Lambda container); when it does
 * not know, the store's conditions decide, and a refused write teaches it what is stored.
 *
 * A batch that stores results (or answers) reads the set back in the same write and, when an
 * execution waits for these entries (AwaitWave stored its task token: waves.ts `awaitWave`) and
 * they are all in now, wakes it (`ReportWaker`), so the wave is judged at once rather than at its
 * next poll. A wake-up that may not have been delivered fails the set's reports, which the queue
 * delivers again: their write is then refused, the set read back, and the wake-up sent again.
 *
 * A batch that stores an acknowledgement or progress of an entry such a wait is for, and does not
 * complete it, sends the wait a heartbeat instead (`heartbeatDue`), so AwaitWave's heartbeat
 * timeout (the net under a lost wake-up) does not end a wave its BMCs are still reporting on: a
 * 10-minute flash reporting every 150 s is one check, not two. Only a wait that has a heartbeat
 * (AwaitWave's, stored with it; not AwaitPreflight's), and at most one per wait per heartbeat
 * interval (HEARTBEAT_INTERVAL_MS), however many batches (of as many pollers and containers) its
 * reports are dealt among: every write stores when its reports were received and reads back the
 * record with the time of the write before it (DynamoDB's ReturnValues on the same UpdateItem: no
 * request and no read unit more), and only the record's first write in an interval sends one. A
 * heartbeat that fails is logged, not retried: it costs the one early check the wait would have
 * had without it.
 */

import type { BmcEvent } from "../../domain/bmc-protocol.js";
import { decodeBmcEvent } from "../../domain/bmc-protocol-decode.js";
import { isRackReports, readRackReports } from "../../domain/bmc-rack-reports.js";
import {
  type CommandFamily,
  type CommandSet,
  type EntryWrite,
  entryWrite,
  foldReports,
  heartbeatDue,
  isReportFor,
  type KnownEntry,
  knownAfter,
  knownOf,
  parseCommandRequestId,
  wakeDue,
  wakeOutput,
} from "../../domain/command-sets.js";
import { type Logger, silentLogger } from "../observability.js";
import type { CommandSetStore, ReportWaker } from "../ports.js";
import { type ExecutionEnding, type OutcomeDeps, reconcileExecutionEnd } from "./outcome.js";

/** What became of one report: stored, changing nothing (or not ours), or not a report. */
export type ReportOutcome = "recorded" | "ignored" | "invalid";

/**
 * One BMC report as the IoT rule delivers it: the message's own fields plus `componentId` (the
 * topic's component: `topic(5)` of a rack-scoped topic, `topic(3)` of a v1–v3 one) and, from a
 * rack-scoped topic, `rackId` (`topic(3)`).
 */
export type BmcReportMessage = Record<string, unknown>;

/** Command sets whose stored state this receiver remembers (least recently used dropped first). */
const REMEMBERED_SETS = 2_000;
/** A batch whose writes keep being refused by concurrent writers is given back (redelivered). */
const MAX_WRITE_ROUNDS = 4;

interface Pending {
  taskId: string;
  family: CommandFamily;
  /** The update set's part the reports' commands are stored in (from their request ids). */
  part?: number;
  /** The rack whose topic the reports came on (absent: a v1–v3 topic): only its commands take them. */
  rackId?: string;
  /** By entry key: the indexes of its reports in the batch, and the reports. */
  entries: Map<string, { indexes: number[]; reports: { event: BmcEvent; at: number }[] }>;
}

export interface ReportRecorder {
  /**
   * Stores a batch of reports (received at `at`, in arrival order). Returns each one's outcome in
   * order, or the error that kept it from being stored (a store outage: deliver it again).
   */
  record(
    reports: readonly { message: BmcReportMessage; at: number }[],
  ): Promise<(ReportOutcome | { error: unknown })[]>;
}

export function createReportRecorder(
  commands: CommandSetStore,
  logger: Logger = silentLogger,
  waveWaker?: ReportWaker,
): ReportRecorder {
  // Tokens this receiver woke: a later batch of the same wave does not wake it again.
  const woken = new Set<string>();
  const wakeIfDue = async (set: CommandSet | undefined) => {
    if (waveWaker === undefined) return;
    const token = wakeDue(set);
    if (set === undefined || token === undefined || woken.has(token)) return;
    await waveWaker.wake(token, wakeOutput(set));
    woken.add(token);
    if (woken.size > REMEMBERED_SETS) woken.delete(woken.values().next().value as string);
  };
  // Keeps the set's wait alive when this write stored news of its BMCs.
  const heartbeatIfDue = async (set: CommandSet | undefined, written: readonly string[]) => {
    if (waveWaker === undefined) return;
    const token = heartbeatDue(set, written);
    if (token === undefined || woken.has(token)) return;
    try {
      await waveWaker.heartbeat(token);
    } catch (error) {
      logger.warn("wave heartbeat not sent: its wait may time out into an early check", {
        taskId: set?.taskId,
        error: (error as Error).message,
      });
    }
  };
  const remembered = new Map<string, Map<string, KnownEntry>>();
  const knownIn = (key: string): Map<string, KnownEntry> => {
    const found = remembered.get(key) ?? new Map<string, KnownEntry>();
    remembered.delete(key);
    remembered.set(key, found);
    if (remembered.size > REMEMBERED_SETS) remembered.delete(remembered.keys().next().value as string);
    return found;
  };

  async function writeSet(pending: Pending, outcomes: (ReportOutcome | { error: unknown } | undefined)[]) {
    const { taskId, family, part, rackId } = pending;
    const record = recordKey(taskId, family, part);
    const known = knownIn(record);
    const settle = (entry: string, outcome: ReportOutcome) => {
      for (const i of pending.entries.get(entry)?.indexes ?? []) outcomes[i] = outcome;
      pending.entries.delete(entry);
    };
    for (let round = 0; round < MAX_WRITE_ROUNDS; round++) {
      const writes: Record<string, EntryWrite> = {};
      for (const [entry, { reports }] of pending.entries) {
        const write = entryWrite(family, foldReports(reports), known.get(entry));
        if (write === undefined) settle(entry, "ignored");
        else writes[entry] = write;
      }
      if (pending.entries.size === 0) return;
      // Results and answers may complete a wait, an acknowledgement or progress keeps it alive:
      // with a waker, every write reads the record back.
      const out = await commands.record(taskId, family, writes, {
        returnSet: waveWaker !== undefined,
        ...(part === undefined ? {} : { part }),
        ...(rackId === undefined ? {} : { rackId }),
        // When these reports came: the record's writes of reports pace its wait's heartbeats.
        ...(waveWaker === undefined ? {} : { heardAt: heardAt(pending) }),
      });
      await wakeIfDue(out.set);
      if (out.outcome === "written") {
        // A written batch ends this set's rounds: one heartbeat at most, the interval's first.
        await heartbeatIfDue(out.set, Object.keys(writes));
        for (const [entry, write] of Object.entries(writes)) {
          known.set(entry, knownAfter(known.get(entry), write));
          const { indexes, reports } = pending.entries.get(entry) ?? { indexes: [], reports: [] };
          const used = contributing(reports, write);
          indexes.forEach((i, n) => {
            outcomes[i] = used.has(n) ? "recorded" : "ignored";
          });
          pending.entries.delete(entry);
        }
        return;
      }
      if (out.set === undefined) {
        // No such command set: reports for commands nobody sent.
        for (const entry of [...pending.entries.keys()]) settle(entry, "ignored");
        return;
      }
      if (rackId !== undefined && out.set.rackId !== undefined && out.set.rackId !== rackId) {
        // A rack's topic speaks for that rack's components only: these commands went to another.
        logger.warn("bmc reports refused: their commands went to another rack's components", {
          rackId,
          commandsRackId: out.set.rackId,
          taskId,
        });
        for (const entry of [...pending.entries.keys()]) settle(entry, "ignored");
        return;
      }
      for (const [entry, stored] of Object.entries(out.set.entries)) known.set(entry, knownOf(stored));
      // Refused: what is stored now decides what is left to write; entries it lacks are not ours.
      for (const entry of [...pending.entries.keys()])
        if (!(entry in out.set.entries)) settle(entry, "ignored");
    }
    throw new Error(`command set ${record}: writes kept being refused; the reports go back to the queue`);
  }

  async function recordEach(
    reports: readonly { decoded: DecodedReport | undefined; at: number }[],
  ): Promise<(ReportOutcome | { error: unknown })[]> {
    // Unset until decided; what is left unset at the end changed nothing.
    const outcomes: (ReportOutcome | { error: unknown } | undefined)[] = reports.map(() => undefined);
    const sets = new Map<string, Pending>();
    reports.forEach(({ decoded, at }, index) => {
      if (decoded === undefined) {
        outcomes[index] = "invalid";
        return;
      }
      const { componentId, rackId, event } = decoded;
      const address = parseCommandRequestId(event.requestId);
      if (address === undefined) return; // not a request id this task machinery ever sent
      if (!isReportFor(address, componentId)) {
        // A BMC publishes on its own topic only: another component's request id is refused.
        logger.warn("bmc report refused: the request id names another component's command", {
          componentId,
          taskId: address.taskId,
        });
        return;
      }
      // Reports claiming different racks for the same record are written apart: each is judged.
      const key = `${recordKey(address.taskId, address.family, address.part)}@${rackId ?? ""}`;
      const pending = sets.get(key) ?? {
        taskId: address.taskId,
        family: address.family,
        ...(address.part === undefined ? {} : { part: address.part }),
        ...(rackId === undefined ? {} : { rackId }),
        entries: new Map(),
      };
      sets.set(key, pending);
      const entry = pending.entries.get(address.entry) ?? { indexes: [], reports: [] };
      pending.entries.set(address.entry, entry);
      entry.indexes.push(index);
      entry.reports.push({ event, at });
    });
    await Promise.all(
      [...sets.values()].map(async (pending) => {
        const indexes = [...pending.entries.values()].flatMap((e) => e.indexes);
        try {
          await writeSet(pending, outcomes);
        } catch (error) {
          for (const i of indexes) outcomes[i] ??= { error };
        }
      }),
    );
    return outcomes.map((outcome) => outcome ?? "ignored");
  }

  return {
    async record(messages) {
      // A rack's batch is its reports, each in turn; its outcome is theirs together.
      const flat: { decoded: DecodedReport | undefined; at: number }[] = [];
      const spans = messages.map(({ message, at }) => {
        const from = flat.length;
        const reports = reportsOf(message, logger);
        if (reports === undefined) return { from, to: from, invalid: true };
        for (const decoded of reports) flat.push({ decoded, at });
        return { from, to: flat.length, invalid: false };
      });
      const outcomes = await recordEach(flat);
      return spans.map(({ from, to, invalid }) => (invalid ? "invalid" : together(outcomes.slice(from, to))));
    },
  };
}

/** A report decoded: its component and rack (lowercased) and its event. */
interface DecodedReport {
  componentId: string;
  rackId?: string;
  event: BmcEvent;
}

/**
 * The reports a message carries, each decoded once: itself, or a rack's batch's (`type:
 * "reports"`) elements, each with its component and the batch's rack. Undefined: a batch that
 * cannot be read at all; a report that cannot be read is undefined in the list (both logged,
 * naming fields and rules only).
 */
function reportsOf(message: BmcReportMessage, logger: Logger): (DecodedReport | undefined)[] | undefined {
  if (!isRackReports(message)) return [decodeReport(message, logger)];
  const { rackId, componentId, ...batch } = message;
  // Only from a rack's reports topic (the rule adds its rack and no component): a batch on a
  // component's topic would let that component's publisher speak for others.
  if (typeof rackId !== "string" || rackId === "" || componentId !== undefined) {
    logger.warn("bmc rack reports dropped: not from a rack's reports topic", {
      ...(typeof componentId === "string" ? { componentId } : {}),
    });
    return undefined;
  }
  const read = readRackReports(batch);
  if (!read.ok) {
    logger.warn("bmc rack reports dropped: undecodable", { rackId, problem: read.message });
    return undefined;
  }
  const rack = rackId.toLowerCase();
  return read.value.map((item) => {
    if (!item.ok) {
      logger.warn("bmc rack report dropped: undecodable", { rackId, problem: item.message });
      return undefined;
    }
    return { componentId: item.value.componentId.toLowerCase(), rackId: rack, event: item.value.event };
  });
}

/** A batch's outcome from its reports': an error sends it back; else recorded if any one was. */
function together(
  outcomes: readonly (ReportOutcome | { error: unknown })[],
): ReportOutcome | { error: unknown } {
  const failed = outcomes.find((o) => typeof o === "object");
  if (failed !== undefined) return failed;
  if (outcomes.includes("recorded")) return "recorded";
  return outcomes.length > 0 && outcomes.every((o) => o === "invalid") ? "invalid" : "ignored";
}

/** When a set's pending reports were received: the latest of them (a batch's are received together). */
const heardAt = (pending: Pending): number =>
  Math.max(...[...pending.entries.values()].flatMap((e) => e.reports.map((r) => r.at)));

/** One record of a task's command sets: its family's, or a part of its update set. */
const recordKey = (taskId: string, family: CommandFamily, part: number | undefined): string =>
  part === undefined ? `${taskId}#${family}` : `${taskId}#${family}.${part}`;

/**
 * Which of one command's reports (by position) the write carries: the first ack-like report (its
 * acknowledgement), the first result, the first answer, the first report of the highest progress.
 * The others (duplicates, late or lower ones) changed nothing.
 */
function contributing(reports: readonly { event: BmcEvent; at: number }[], write: EntryWrite): Set<number> {
  const used = new Set<number>();
  const first = (match: (event: BmcEvent) => boolean) => {
    const n = reports.findIndex((r) => match(r.event));
    if (n >= 0) used.add(n);
  };
  if (write.ackedAt !== undefined) first((e) => e.type !== "status");
  if (write.result !== undefined) first((e) => e.type === "result");
  if (write.status !== undefined) first((e) => e.type === "status");
  const progress = write.progress;
  if (progress !== undefined) first((e) => e.type === "progress" && e.percent === progress.percent);
  return used;
}

/**
 * A report's component (the rule's `topic(3)`, lowercased) and decoded event. Undecodable messages
 * are dropped with a log line that names fields and rules only (never values: an update's auth
 * blob must not reach a log even when echoed back).
 */
function decodeReport(message: BmcReportMessage, logger: Logger): DecodedReport | undefined {
  const { componentId, rackId, ...payload } = message;
  if (typeof componentId !== "string" || componentId === "") {
    logger.warn("bmc report dropped: no componentId (the IoT rule adds the topic's component id)");
    return undefined;
  }
  const decoded = decodeBmcEvent(JSON.stringify(payload));
  if (!decoded.ok) {
    logger.warn("bmc report dropped: undecodable", { componentId, problem: decoded.message });
    return undefined;
  }
  const rack = typeof rackId === "string" && rackId !== "" ? { rackId: rackId.toLowerCase() } : {};
  return { componentId: componentId.toLowerCase(), ...rack, event: decoded.value };
}

/** One event of the bmc-result Lambda, parsed. */
export type BmcResultInput =
  /** A child-task execution ended (EventBridge "Step Functions Execution Status Change"). */
  | { kind: "execution-ending"; ending: ExecutionEnding }
  /** A status change that is not an ending (e.g. RUNNING): nothing to do. */
  | { kind: "execution-status"; status: string }
  /** One BMC report straight from the IoT rule: the message's fields plus `componentId` (and `rackId`). */
  | { kind: "bmc-report"; message: BmcReportMessage }
  /** A batch of reports from the queue (SQS event source): `id` names each for a redelivery; no message: unreadable. */
  | { kind: "bmc-reports"; reports: { id: string; message?: BmcReportMessage }[] }
  /** Neither: not even an object. */
  | { kind: "invalid" };

export interface BmcResultReceiverDeps {
  commands: CommandSetStore;
  outcome: OutcomeDeps;
  clock: () => number;
  logger?: Logger;
  /** Wakes executions whose wave is complete (AwaitWave); absent: their wait's timeout does. */
  waveWaker?: ReportWaker;
}

export interface BmcResultReceiver {
  /**
   * `{ taskId, status }` for an ending (the task's status after it, or "unknown task"),
   * `{ ignored: status }` for another status change, `{ outcome }` for a report, and for a batch
   * `{ batchItemFailures }` (the SQS partial-batch response: those reports are delivered again).
   */
  receive(input: BmcResultInput): Promise<unknown>;
}

export function createBmcResultReceiver(deps: BmcResultReceiverDeps): BmcResultReceiver {
  const recorder = createReportRecorder(deps.commands, deps.logger, deps.waveWaker);
  return {
    async receive(input) {
      switch (input.kind) {
        case "execution-ending": {
          const task = await reconcileExecutionEnd(deps.outcome, input.ending);
          return { taskId: input.ending.taskId, status: task?.status ?? "unknown task" };
        }
        case "execution-status":
          return { ignored: input.status };
        case "bmc-report": {
          const [outcome] = await recorder.record([{ message: input.message, at: deps.clock() }]);
          if (typeof outcome === "object") throw outcome.error;
          return { outcome };
        }
        case "bmc-reports": {
          const at = deps.clock();
          const readable = input.reports.filter((r) => r.message !== undefined);
          const outcomes = await recorder.record(
            readable.map((r) => ({ message: r.message as BmcReportMessage, at })),
          );
          return {
            batchItemFailures: readable.flatMap((r, i) =>
              typeof outcomes[i] === "object" ? [{ itemIdentifier: r.id }] : [],
            ),
          };
        }
        case "invalid":
          return { outcome: "invalid" };
      }
    },
  };
}
