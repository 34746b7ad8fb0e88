/**
 * `flowctl run watch`: what to show, computed from what the service returned (pure: the clock is
 * passed in), and how to draw it.
 *
 * Per phase, targets fall into five groups, counted from the listed targets' statuses:
 *   completed  COMPLETED (and SKIPPED, shown separately when there are any)
 *   failed     FAILED
 *   terminated TERMINATED
 *   in flight  CLAIMED, SUBMITTED: a slot is taken, hardware work is (about to be) under way
 *   pending    PENDING, BLOCKED: waiting for a slot, or backing off after a rack conflict
 *
 * Phases after the current one are not listed by the service (their targets are frozen but hidden);
 * their sizes come from the plan, when the watcher could reproduce it, and are all pending.
 *
 * The estimate of time left is throughput so far extrapolated: with 12 of 40 targets finished 60 s
 * after the run started, the 28 left take about 28 × 60 / 12 = 140 s. It is shown once one target
 * has finished, and it cannot know how long an operator takes to advance a phase gate.
 *
 * While the current phase soaks (every target ended, its boundary held for its minimum soak), the
 * frame counts down to the summary's `soak_ends_at`: "soak     phase 1: 25s left, until 10:04:42Z".
 *
 * Under the bars, the run's last few history events (cli/history.ts), newest last, so the frame
 * says what happened and who did it: "10:04:12 gate tripped (phase 2): failure_count …".
 */

import { isGateTripped } from "../src/domain/gates.js";
import { DEFAULT_MIN_FINISHED } from "../src/domain/run-config.js";
import * as pb from "../src/gen/flow/v1/flow.js";
import { formatElapsed } from "./durations.js";
import { EXIT } from "./errors.js";
import { eventLine } from "./history.js";
import { runReasons, runStatuses, TERMINAL_RUN_STATUSES } from "./names.js";
import { terminalSafe } from "./output.js";
import { statusMessageForPeople } from "./phase-numbers.js";
import { windowText } from "./window.js";

export interface PhaseView {
  /** Zero-based; printed one-based. */
  index: number;
  /** Targets planned in the phase; undefined when not known (a future phase without a plan). */
  planned: number | undefined;
  completed: number;
  failed: number;
  terminated: number;
  skipped: number;
  inFlight: number;
  pending: number;
  /** Among `pending`: backing off after a rack conflict. */
  blocked: number;
}

export interface SoakView {
  /** Zero-based; printed one-based. */
  phaseIndex: number;
  endsAt: Date;
  leftMs: number;
}

export interface GateView {
  /** `failureCount ≥ 3 (cumulative run)`. */
  label: string;
  /** `1/3 failed`, `1 of 10 failed (10%)`. */
  value: string;
  tripped: boolean;
}

export interface WatchModel {
  runId: string;
  name: string;
  status: pb.OperationRunStatus;
  reason: pb.OperationRunStatusReason;
  message: string;
  /** The maintenance window at the watcher's clock (cli/window.ts); undefined when the run has none. */
  window: string | undefined;
  /** The current phase's soak at the watcher's clock (soakView); undefined when it is not soaking. */
  soak: SoakView | undefined;
  currentPhase: number;
  totalPhases: number;
  phases: PhaseView[];
  gates: GateView[];
  elapsedMs: number;
  /** Undefined until a target has finished. */
  etaMs: number | undefined;
  /** Finished targets (completed, failed, terminated, skipped) and the targets known to be planned. */
  finished: number;
  planned: number;
  /** False when a future phase's size is unknown, so `planned` and the estimate cover fewer phases. */
  plannedKnown: boolean;
  /** The last RECENT_EVENTS history events as lines, oldest first. */
  recentEvents: string[];
}

/** How many of the run's latest events the frame shows. */
export const RECENT_EVENTS = 5;

export interface ModelInput {
  run: pb.OperationRun;
  /** The run's targets in phases up to the current one. */
  targets: readonly pb.OperationRunTarget[];
  /** Targets per phase from the plan, when known. */
  plannedSizes: readonly number[] | undefined;
  now: Date;
  /** The run's history so far, oldest first (absent: a service without ListOperationRunEvents). */
  events?: readonly pb.OperationRunEvent[];
}

const S = pb.OperationRunTargetStatus;

export function buildModel(input: ModelInput): WatchModel {
  const summary = input.run.summary;
  const totalPhases = Math.max(summary?.totalPhases ?? 1, 1);
  const currentPhase = summary?.currentPhaseIndex ?? 0;
  const phases: PhaseView[] = [];
  for (let i = 0; i < totalPhases; i++) {
    phases.push({
      index: i,
      planned: i <= currentPhase ? 0 : input.plannedSizes?.[i],
      completed: 0,
      failed: 0,
      terminated: 0,
      skipped: 0,
      inFlight: 0,
      pending: 0,
      blocked: 0,
    });
  }
  for (const t of input.targets) {
    const p = phases[t.phaseIndex];
    if (p === undefined) continue;
    p.planned = (p.planned ?? 0) + 1;
    switch (t.status) {
      case S.OPERATION_RUN_TARGET_STATUS_COMPLETED:
        p.completed++;
        break;
      case S.OPERATION_RUN_TARGET_STATUS_SKIPPED:
        p.skipped++;
        break;
      case S.OPERATION_RUN_TARGET_STATUS_FAILED:
        p.failed++;
        break;
      case S.OPERATION_RUN_TARGET_STATUS_TERMINATED:
        p.terminated++;
        break;
      case S.OPERATION_RUN_TARGET_STATUS_CLAIMED:
      case S.OPERATION_RUN_TARGET_STATUS_SUBMITTED:
        p.inFlight++;
        break;
      case S.OPERATION_RUN_TARGET_STATUS_BLOCKED:
        p.blocked++;
        p.pending++;
        break;
      default:
        p.pending++;
    }
  }
  // Future phases: every planned target is still pending.
  for (const p of phases) if (p.index > currentPhase && p.planned !== undefined) p.pending = p.planned;

  const finished = phases.reduce((n, p) => n + p.completed + p.failed + p.terminated + p.skipped, 0);
  const plannedKnown = phases.every((p) => p.planned !== undefined);
  const planned = phases.reduce((n, p) => n + (p.planned ?? 0), 0);
  const started = summary?.startedAt ?? summary?.createdAt;
  const end = summary?.finishedAt ?? input.now;
  const elapsedMs = started === undefined ? 0 : Math.max(0, end.getTime() - started.getTime());
  const status = summary?.state?.status ?? pb.OperationRunStatus.OPERATION_RUN_STATUS_UNKNOWN;
  const etaMs =
    finished > 0 && !TERMINAL_RUN_STATUSES.has(status)
      ? Math.round(((planned - finished) * elapsedMs) / finished)
      : undefined;

  // The service's text, drawn among the view's own escape sequences: neutralised here, once.
  return {
    runId: terminalSafe(summary?.id?.id ?? ""),
    name: terminalSafe(summary?.name ?? ""),
    status,
    reason: summary?.state?.reason ?? pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_UNKNOWN,
    message: terminalSafe(statusMessageForPeople(summary?.statusMessage ?? "")),
    window: windowText(input.run.configuration, input.now),
    soak: soakView(summary, input.now),
    currentPhase,
    totalPhases,
    phases,
    gates: gateViews(input.run.configuration, phases, currentPhase),
    elapsedMs,
    etaMs,
    finished,
    planned,
    plannedKnown,
    recentEvents: (input.events ?? []).slice(-RECENT_EVENTS).map(eventLine),
  };
}

/** The current phase's soak while it holds: a run not finished, its `soak_ends_at` still ahead. */
export function soakView(summary: pb.OperationRunSummary | undefined, now: Date): SoakView | undefined {
  const endsAt = summary?.soakEndsAt;
  const status = summary?.state?.status;
  if (endsAt === undefined || status === undefined || TERMINAL_RUN_STATUSES.has(status)) return undefined;
  const leftMs = endsAt.getTime() - now.getTime();
  if (leftMs <= 0) return undefined;
  return { phaseIndex: summary?.currentPhaseIndex ?? 0, endsAt, leftMs };
}

/** "phase 1: 25s left, until 10:04:42Z" (whole seconds, rounded up: never "0s left" while it holds). */
export function soakText(s: SoakView): string {
  return `phase ${s.phaseIndex + 1}: ${formatElapsed(Math.ceil(s.leftMs / 1000) * 1000)} left, until ${clockTime(s.endsAt)}`;
}

const clockTime = (d: Date): string => `${d.toISOString().slice(11, 19)}Z`;

/**
 * Each configured gate against the counts, by the service's rules: only failed targets count; a
 * count gate trips at `failed >= count`, a rate gate at `failed * 100 >= percent * planned`, over
 * the current phase or over every phase up to it (cumulative run); an observed-rate gate at
 * `failed * 100 >= percent * finished` once enough of the scope has finished (src/domain/gates.ts).
 */
export function gateViews(
  config: pb.OperationRunConfiguration | undefined,
  phases: readonly PhaseView[],
  currentPhase: number,
): GateView[] {
  const inScope = (scope: pb.OperationRunSafetyGateScope) =>
    phases.filter((p) =>
      scope === pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN
        ? p.index <= currentPhase
        : p.index === currentPhase,
    );
  const scopeText = (scope: pb.OperationRunSafetyGateScope) =>
    scope === pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN
      ? "cumulative run"
      : "current phase";
  const views: GateView[] = [];
  for (const g of config?.options?.safetyPolicy?.gates ?? []) {
    const gate = g.gate;
    if (gate === undefined) continue;
    const scoped = inScope(gate.value.scope);
    const failed = scoped.reduce((n, p) => n + p.failed, 0);
    const planned = scoped.reduce((n, p) => n + (p.planned ?? 0), 0);
    if (gate.$case === "failureCount") {
      const threshold = gate.value.failureThresholdCount;
      views.push({
        label: `failureCount ≥ ${threshold} (${scopeText(gate.value.scope)})`,
        value: `${failed}/${threshold} failed`,
        tripped: failed >= threshold,
      });
    } else if (gate.$case === "observedFailureRate") {
      const pct = gate.value.failureThresholdPercent;
      const minFinished = gate.value.minFinished ?? DEFAULT_MIN_FINISHED;
      const finished = scoped.reduce((n, p) => n + p.completed + p.failed + p.terminated, 0);
      const rate = finished === 0 ? 0 : Math.round((failed * 100) / finished);
      const counts = { failed, selected: planned, finished };
      views.push({
        label: `observedFailureRate ≥ ${pct}% after ${minFinished} finished (${scopeText(gate.value.scope)})`,
        value: `${failed} of ${finished} finished failed (${rate}%)`,
        tripped: isGateTripped(
          { kind: "observedFailureRate", scope: "CURRENT_PHASE", thresholdPercent: pct, minFinished },
          counts,
        ),
      });
    } else {
      const pct = gate.value.failureThresholdPercent;
      const rate = planned === 0 ? 0 : Math.round((failed * 100) / planned);
      views.push({
        label: `failureRate ≥ ${pct}% (${scopeText(gate.value.scope)})`,
        value: `${failed} of ${planned} failed (${rate}%)`,
        tripped: planned > 0 && failed * 100 >= pct * planned,
      });
    }
  }
  return views;
}

// ---------------------------------------------------------------------------------------------
// Drawing

export interface DrawOptions {
  color: boolean;
  /** Terminal columns; lines are cut to fit so the in-place redraw can count them. */
  columns: number;
  barWidth?: number;
}

export const BAR_CHARS = {
  completed: "█",
  failed: "x",
  terminated: "/",
  inFlight: "▒",
  pending: "░",
} as const;

const ANSI = {
  reset: "\x1b[0m",
  bold: "\x1b[1m",
  dim: "\x1b[2m",
  red: "\x1b[31m",
  green: "\x1b[32m",
  yellow: "\x1b[33m",
  cyan: "\x1b[36m",
} as const;

/**
 * A bar of `width` cells split by cumulative rounding, so the cells always add up to the width and
 * a group's share is off by less than one cell: 3 completed, 1 failed, 6 pending of 10 in 10 cells
 * → `███x░░░░░░`.
 */
export function bar(p: PhaseView, width: number, color: boolean): string {
  const planned = p.planned ?? 0;
  if (planned === 0) return paint(BAR_CHARS.pending.repeat(width), ANSI.dim, color);
  const groups: [number, string, string][] = [
    [p.completed + p.skipped, BAR_CHARS.completed, ANSI.green],
    [p.failed, BAR_CHARS.failed, ANSI.red],
    [p.terminated, BAR_CHARS.terminated, ANSI.yellow],
    [p.inFlight, BAR_CHARS.inFlight, ANSI.cyan],
    [p.pending, BAR_CHARS.pending, ANSI.dim],
  ];
  let out = "";
  let cum = 0;
  let drawn = 0;
  for (const [count, ch, tint] of groups) {
    cum += count;
    const end = Math.round((width * cum) / planned);
    if (end > drawn) out += paint(ch.repeat(end - drawn), tint, color);
    drawn = Math.max(drawn, end);
  }
  return out;
}

function paint(text: string, code: string, color: boolean): string {
  return color ? `${code}${text}${ANSI.reset}` : text;
}

export function statusText(m: Pick<WatchModel, "status" | "reason">): string {
  const status = runStatuses.name(m.status);
  const reason = runReasons.name(m.reason);
  return m.reason === pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_NONE ||
    m.reason === pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_UNKNOWN
    ? status
    : `${status} (${reason})`;
}

/** `3 completed · 1 failed · 2 in flight · 4 pending (1 blocked)`: groups with nobody in them left out. */
function phaseCounts(p: PhaseView): string {
  if (p.planned === undefined) return "size not known yet";
  const parts: string[] = [];
  const add = (n: number, label: string) => {
    if (n > 0) parts.push(`${n} ${label}`);
  };
  add(p.completed, "completed");
  add(p.skipped, "skipped");
  add(p.failed, "failed");
  add(p.terminated, "terminated");
  add(p.inFlight, "in flight");
  add(p.pending, p.blocked > 0 ? `pending (${p.blocked} blocked)` : "pending");
  return parts.length === 0 ? "empty" : parts.join(" · ");
}

function timing(m: WatchModel): string {
  let text = `elapsed ${formatElapsed(m.elapsedMs)}`;
  if (m.etaMs !== undefined)
    text += `  ·  left ~${formatElapsed(m.etaMs)}${m.plannedKnown ? "" : " (phases so far)"}`;
  return text;
}

/** The live frame: a header, one bar per phase, the gates, a legend. */
export function renderFrame(m: WatchModel, o: DrawOptions): string[] {
  const width = o.barWidth ?? 30;
  const tint = TERMINAL_RUN_STATUSES.has(m.status)
    ? m.status === pb.OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED
      ? ANSI.green
      : ANSI.red
    : m.status === pb.OperationRunStatus.OPERATION_RUN_STATUS_PAUSED
      ? ANSI.yellow
      : ANSI.cyan;
  const lines = [
    `${paint(`run ${m.runId}`, ANSI.bold, o.color)}  ${m.name}`,
    `status   ${paint(statusText(m), tint, o.color)}  ·  phase ${m.currentPhase + 1}/${m.totalPhases}  ·  ${m.finished}/${m.planned}${m.plannedKnown ? "" : "+"} targets finished  ·  ${timing(m)}`,
  ];
  if (m.message !== "") lines.push(`message  ${m.message}`);
  if (m.window !== undefined) lines.push(`window   ${m.window}`);
  if (m.soak !== undefined) lines.push(`soak     ${paint(soakText(m.soak), ANSI.yellow, o.color)}`);
  for (const p of m.phases) {
    const label = `phase ${p.index + 1}`.padEnd(8);
    const size =
      p.planned === undefined
        ? "    ?"
        : `${p.completed + p.failed + p.terminated + p.skipped}/${p.planned}`.padStart(5);
    const marker = p.index === m.currentPhase ? "▸" : " ";
    lines.push(`${marker}${label} ${bar(p, width, o.color)} ${size}  ${phaseCounts(p)}`);
  }
  m.gates.forEach((g, i) => {
    const verdict = g.tripped ? paint("TRIPPED", ANSI.red, o.color) : paint("ok", ANSI.green, o.color);
    lines.push(`${i === 0 ? "gates   " : "        "} ${g.label}: ${g.value}  ${verdict}`);
  });
  m.recentEvents.forEach((line, i) => {
    lines.push(`${i === 0 ? "events  " : "        "} ${line}`);
  });
  lines.push(
    paint(
      `legend   ${BAR_CHARS.completed} completed  ${BAR_CHARS.failed} failed  ${BAR_CHARS.terminated} terminated  ${BAR_CHARS.inFlight} in flight  ${BAR_CHARS.pending} pending`,
      ANSI.dim,
      o.color,
    ),
  );
  return lines.map((l) => fit(l, o.columns));
}

/** One line per change when stdout is not a terminal (logs, CI). */
export function renderPlainLine(m: WatchModel, now: Date): string {
  const phases = m.phases
    .map((p) => `p${p.index + 1} ${p.completed + p.failed + p.terminated + p.skipped}/${p.planned ?? "?"}`)
    .join(" ");
  const totals = m.phases.reduce(
    (t, p) => ({
      failed: t.failed + p.failed,
      terminated: t.terminated + p.terminated,
      inFlight: t.inFlight + p.inFlight,
      pending: t.pending + p.pending,
    }),
    { failed: 0, terminated: 0, inFlight: 0, pending: 0 },
  );
  const tripped = m.gates.filter((g) => g.tripped).length;
  return (
    `${now.toISOString().slice(11, 19)} ${statusText(m)} phase ${m.currentPhase + 1}/${m.totalPhases} | ${phases} | ` +
    `${totals.failed} failed, ${totals.terminated} terminated, ${totals.inFlight} in flight, ${totals.pending} pending | ` +
    `gates ${tripped === 0 ? "ok" : `${tripped} tripped`} | ${m.window === undefined ? "" : `window ${m.window} | `}` +
    // The deadline, not the countdown: a line per change must not become a line per second.
    `${m.soak === undefined ? "" : `soak phase ${m.soak.phaseIndex + 1} until ${clockTime(m.soak.endsAt)} | `}${timing(m)}`
  );
}

/** What the watch ends with, and what to do next. */
export function finalLine(m: WatchModel): string {
  const totals = m.phases.reduce(
    (t, p) => ({ c: t.c + p.completed, f: t.f + p.failed, x: t.x + p.terminated, s: t.s + p.skipped }),
    { c: 0, f: 0, x: 0, s: 0 },
  );
  // Skipped racks (a cancel's never-started ones) only when there are any.
  const skipped = totals.s > 0 ? `, ${totals.s} skipped` : "";
  const counts = `${totals.c} completed, ${totals.f} failed, ${totals.x} terminated${skipped}`;
  const head = `run ${m.runId} ${statusText(m)} after ${formatElapsed(m.elapsedMs)}: ${counts}`;
  const msg = m.message === "" ? "" : ` — ${m.message}`;
  if (m.status !== pb.OperationRunStatus.OPERATION_RUN_STATUS_PAUSED) return `${head}${msg}`;
  const R = pb.OperationRunStatusReason;
  const next =
    m.reason === R.OPERATION_RUN_STATUS_REASON_PHASE_GATE
      ? `flowctl run advance ${m.runId}`
      : m.reason === R.OPERATION_RUN_STATUS_REASON_SAFETY_GATE
        ? `flowctl run targets ${m.runId} --status failed, then flowctl run resume ${m.runId} or flowctl run cancel ${m.runId}`
        : m.reason === R.OPERATION_RUN_STATUS_REASON_MAINTENANCE_WINDOW
          ? `flowctl run cancel ${m.runId} (its window closed: resume is refused; create a new run with a later window)`
          : m.reason === R.OPERATION_RUN_STATUS_REASON_AWAITING_APPROVAL
            ? `flowctl run approve ${m.runId} by a second person (not its creator), or flowctl run cancel ${m.runId}`
            : m.reason === R.OPERATION_RUN_STATUS_REASON_EXTERNAL_CHECK_INCONCLUSIVE
              ? `look at the rack, then flowctl run resume ${m.runId}, or flowctl run report-failure ${m.runId} RACK --reason TEXT`
              : `flowctl run resume ${m.runId}`;
  return `${head}${msg}; next: ${next}`;
}

/** 0 COMPLETED, 2 FAILED / COMPLETED_WITH_FAILURES / CANCELLED, 3 PAUSED; undefined while it runs. */
export function exitCodeFor(status: pb.OperationRunStatus): number | undefined {
  const St = pb.OperationRunStatus;
  switch (status) {
    case St.OPERATION_RUN_STATUS_COMPLETED:
      return EXIT.OK;
    case St.OPERATION_RUN_STATUS_FAILED:
    case St.OPERATION_RUN_STATUS_COMPLETED_WITH_FAILURES:
    case St.OPERATION_RUN_STATUS_CANCELLED:
      return EXIT.RUN_ENDED_BADLY;
    case St.OPERATION_RUN_STATUS_PAUSED:
      return EXIT.RUN_PAUSED;
    default:
      return undefined;
  }
}

// One escape sequence (kept, takes no room) or one visible character.
// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escapes start with ESC.
const TOKEN = /\x1b\[[0-9;]*m|./gsu;

/** Cuts a line to `columns` visible characters (escape sequences kept) so it never wraps. */
export function fit(line: string, columns: number): string {
  const tokens = line.match(TOKEN) ?? [];
  const visible = tokens.filter((t) => !t.startsWith("\x1b[")).length;
  if (visible <= columns) return line;
  let out = "";
  let shown = 0;
  for (const t of tokens) {
    if (t.startsWith("\x1b[")) out += t;
    else if (shown < columns - 1) {
      out += t;
      shown++;
    }
  }
  return `${out}…${line.includes("\x1b[") ? ANSI.reset : ""}`;
}
