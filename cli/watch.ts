/**
 * The `run watch` loop: poll the run and its targets, draw, stop when the run ends or pauses.
 *
 * On a terminal the frame is redrawn in place: the cursor goes back up over the previous frame
 * (`ESC[nF`), each line is cleared (`ESC[2K`) and rewritten, and anything below is erased (`ESC[J`).
 * Otherwise (a pipe, a log file, CI) one plain line is printed whenever something changed.
 * `FLOWCTL_TTY=1` forces the terminal mode, for tests and for `watch`-like wrappers.
 */
import { status as GrpcStatus } from "@grpc/grpc-js";
import * as pb from "../src/gen/flow/v1/flow.js";
import type { Connection } from "./client.js";
import { EXIT, isServiceError } from "./errors.js";
import { eventLine, listEventsFrom } from "./history.js";
import type { Writer } from "./output.js";
import {
  buildModel,
  exitCodeFor,
  finalLine,
  renderFrame,
  renderPlainLine,
  type WatchModel,
} from "./watch-view.js";

export interface WatchOptions {
  runId: string;
  intervalMs: number;
  live: boolean;
  color: boolean;
  columns: () => number;
  out: Writer;
  /** Resolves when the operator interrupts (Ctrl-C). */
  interrupted: Promise<void>;
}

/** Consecutive failed polls (the service restarting, say) tolerated before giving up. */
const MAX_CONSECUTIVE_UNAVAILABLE = 10;

const PLAIN_HEARTBEAT_MS = 30_000;

const ESC = "\x1b[";

/** Polls until the run is terminal or paused; returns the exit code (see errors.ts). */
export async function watchRun(conn: Connection, o: WatchOptions): Promise<number> {
  let drawn = 0;
  let lastPlain = "";
  let lastPlainAt = 0;
  let plannedSizes: readonly number[] | undefined;
  let planTried = false;
  let failures = 0;
  let stop = false;
  /** The run's history as read so far (each poll asks for what came after); undefined: not served. */
  let events: pb.OperationRunEvent[] | undefined = [];
  let printedEvents = 0;
  void o.interrupted.then(() => {
    stop = true;
  });

  const draw = (m: WatchModel) => {
    if (o.live) {
      const lines = renderFrame(m, { color: o.color, columns: o.columns() });
      const up = drawn > 0 ? `${ESC}${drawn}F` : "";
      o.out.write(`${up}${lines.map((l) => `${ESC}2K${l}\n`).join("")}${ESC}J`);
      drawn = lines.length;
    } else {
      // Each history event once, as it is first seen, above the state line it led to.
      for (const e of (events ?? []).slice(printedEvents)) o.out.write(`event ${eventLine(e)}\n`);
      printedEvents = events?.length ?? 0;
      // A line when something other than the clock changed, and every 30 s as a sign of life.
      const now = new Date();
      const line = renderPlainLine(m, now);
      const key = line.slice(line.indexOf(" ") + 1, line.lastIndexOf("| elapsed"));
      if (key !== lastPlain || now.getTime() - lastPlainAt >= PLAIN_HEARTBEAT_MS) {
        o.out.write(`${line}\n`);
        lastPlain = key;
        lastPlainAt = now.getTime();
      }
    }
  };

  if (o.live) o.out.write(`${ESC}?25l`);
  try {
    for (;;) {
      let model: WatchModel;
      try {
        const { operationRun: run } = await conn.flow.getOperationRun({
          id: { id: o.runId },
          includeStats: true,
        });
        if (run === undefined) throw new Error("the service returned no run");
        const frozen = run.summary?.phaseSizes ?? [];
        if (frozen.length > 0) {
          plannedSizes = frozen;
        } else if (!planTried) {
          // A service without the phase_sizes extension: re-plan the stored configuration.
          planTried = true;
          plannedSizes = await reproducePlan(conn, run);
        }
        const targets = await listVisibleTargets(conn, o.runId);
        events = await moreEvents(conn, o.runId, events);
        if (
          plannedSizes !== undefined &&
          !planMatches(plannedSizes, targets, run.summary?.currentPhaseIndex ?? 0)
        ) {
          plannedSizes = undefined;
        }
        model = buildModel({ run, targets, plannedSizes, now: new Date(), ...(events ? { events } : {}) });
        failures = 0;
      } catch (err) {
        if (
          isServiceError(err) &&
          err.code === GrpcStatus.UNAVAILABLE &&
          ++failures < MAX_CONSECUTIVE_UNAVAILABLE
        ) {
          await sleep(o.intervalMs, o.interrupted);
          if (stop) return interrupted(o);
          continue;
        }
        throw err;
      }
      draw(model);
      const code = exitCodeFor(model.status);
      if (code !== undefined) {
        o.out.write(`${finalLine(model)}\n`);
        return code;
      }
      await sleep(o.intervalMs, o.interrupted);
      if (stop) return interrupted(o);
    }
  } finally {
    if (o.live) o.out.write(`${ESC}?25h`);
  }
}

function interrupted(o: WatchOptions): number {
  o.out.write(`interrupted: the run goes on; watch again with flowctl run watch ${o.runId}\n`);
  return EXIT.INTERRUPTED;
}

/**
 * The events after the `known` ones appended to them; undefined once the service has answered
 * UNIMPLEMENTED (one older than the history: the watch goes on without it).
 */
async function moreEvents(
  conn: Connection,
  runId: string,
  known: pb.OperationRunEvent[] | undefined,
): Promise<pb.OperationRunEvent[] | undefined> {
  if (known === undefined) return undefined;
  try {
    const { events } = await listEventsFrom(conn, runId, known.length);
    return events.length === 0 ? known : [...known, ...events];
  } catch (err) {
    if (isServiceError(err) && err.code === GrpcStatus.UNIMPLEMENTED) return undefined;
    throw err;
  }
}

/** Every target of the phases up to the current one (future phases are never listed). */
async function listVisibleTargets(conn: Connection, runId: string): Promise<pb.OperationRunTarget[]> {
  const all: pb.OperationRunTarget[] = [];
  for (;;) {
    const page = await conn.flow.listOperationRunTargets({
      operationRunId: { id: runId },
      status: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_UNKNOWN,
      phaseScope:
        pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_AND_COMPLETED_PHASES,
      pagination: { offset: all.length, limit: 500 },
    });
    all.push(...page.targets);
    if (page.targets.length === 0 || all.length >= page.total) return all;
  }
}

/**
 * Future phases' sizes: the stored configuration carries both seeds, so planning it again against
 * the same inventory gives the frozen plan. Used only while it agrees with the phases the service
 * does list (`planMatches`); a changed inventory, or a service without PlanOperationRun, simply
 * leaves future phases' sizes unknown.
 */
async function reproducePlan(conn: Connection, run: pb.OperationRun): Promise<number[] | undefined> {
  const summary = run.summary;
  if (summary === undefined || run.configuration === undefined || summary.totalPhases <= 1) return undefined;
  // A retry or rollback run's racks came from the run it follows, not from its configuration.
  if (summary.retryOf !== undefined || summary.rollbackOf !== undefined) return undefined;
  try {
    const plan = await conn.flow.planOperationRun({
      name: summary.name,
      description: summary.description,
      configuration: run.configuration,
      clientRequestId: "",
      retry: undefined,
      rollback: undefined,
    });
    if (plan.totalPhases !== summary.totalPhases) return undefined;
    const sizes = new Array<number>(plan.totalPhases).fill(0);
    for (const t of plan.targets) sizes[t.phaseIndex] = (sizes[t.phaseIndex] ?? 0) + 1;
    return sizes;
  } catch {
    return undefined;
  }
}

function planMatches(
  sizes: readonly number[],
  targets: readonly pb.OperationRunTarget[],
  current: number,
): boolean {
  const listed = new Array<number>(current + 1).fill(0);
  for (const t of targets)
    if (t.phaseIndex <= current) listed[t.phaseIndex] = (listed[t.phaseIndex] ?? 0) + 1;
  return listed.every((n, i) => sizes[i] === n);
}

function sleep(ms: number, interrupted: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
    interrupted,
  ]).finally(() => clearTimeout(timer));
}
