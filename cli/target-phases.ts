/**
 * `run targets` lists the phases a run has reached (current and completed by default) and never
 * the future ones, whose targets are frozen but not yet visible on the wire. These notes say what a
 * listing left out, from the run's summary (current_phase_index, phase_sizes), so that a finished
 * 15-rack run shown one phase at a time never looks like a 5-rack run:
 *
 *   completed phases 1-2 hold 10 targets: --phase all-visible lists them
 *   phase 3 has not opened yet: its 5 targets are listed once it opens
 *
 * Phases are counted from 1, as flowctl prints them everywhere.
 */
import * as pb from "../src/gen/flow/v1/flow.js";
import { TERMINAL_RUN_STATUSES } from "./names.js";

const Scope = pb.OperationRunTargetPhaseScope;

const plural = (n: number, one: string, many: string) => (n === 1 ? one : many);
const range = (from: number, to: number) => (from === to ? `${from}` : `${from}-${to}`);
const sum = (sizes: readonly number[]) => sizes.reduce((a, b) => a + b, 0);

/**
 * The notes for a listing of `scope` of the run `summary` describes. None when the service sent no
 * phase sizes (an older service): nothing can be said then.
 */
export function phaseNotes(
  summary: Pick<pb.OperationRunSummary, "currentPhaseIndex" | "phaseSizes" | "state">,
  scope: pb.OperationRunTargetPhaseScope,
): string[] {
  const sizes = summary.phaseSizes;
  const current = summary.currentPhaseIndex;
  if (sizes.length === 0 || current < 0 || current >= sizes.length) return [];
  const notes: string[] = [];
  if (scope === Scope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_PHASE && current > 0) {
    const n = sum(sizes.slice(0, current));
    notes.push(
      `completed ${plural(current, "phase", "phases")} ${range(1, current)} ${plural(current, "holds", "hold")} ${n} ${plural(n, "target", "targets")}: --phase all-visible lists them`,
    );
  }
  if (scope === Scope.OPERATION_RUN_TARGET_PHASE_SCOPE_COMPLETED_PHASES) {
    const n = sizes[current] ?? 0;
    notes.push(
      `the current phase ${current + 1} holds ${n} ${plural(n, "target", "targets")}: --phase all-visible lists them`,
    );
  }
  const future = sizes.length - current - 1;
  if (future > 0) {
    const n = sum(sizes.slice(current + 1));
    const phases = `${plural(future, "phase", "phases")} ${range(current + 2, sizes.length)}`;
    const targets = `${n} ${plural(n, "target", "targets")}`;
    const ended = TERMINAL_RUN_STATUSES.has(
      summary.state?.status ?? pb.OperationRunStatus.OPERATION_RUN_STATUS_UNKNOWN,
    );
    notes.push(
      ended
        ? `${phases} never opened (the run has ended): ${plural(future, "its", "their")} ${targets} ${plural(n, "is", "are")} not listed`
        : `${phases} ${plural(future, "has", "have")} not opened yet: ${plural(future, "its", "their")} ${targets} ${plural(n, "is", "are")} listed once ${plural(future, "it opens", "they open")}`,
    );
  }
  return notes;
}
