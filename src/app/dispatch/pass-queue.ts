/**
 * Coalescing of one run's passes within this process: while one runs, every further call shares
 * ONE queued pass that starts when it ends (and so sees whatever the callers saw). A tick and a
 * burst of wake-ups thus cost two passes, not one each racing for the same targets. Different
 * processes (Lambdas) still overlap, which the conditional writes make safe.
 */
import type { PassResult } from "./deps.js";

/** Runs a pass for a run; `speculate`: a wake-up's pass (a slot has likely just freed). */
export type RunPass = (runId: string, speculate: boolean) => Promise<PassResult>;

/** `queuePass(runId, woken)`: `woken` when not a tick's pass (a wake-up, a control). */
export function createPassQueue(runPass: RunPass): (runId: string, woken: boolean) => Promise<PassResult> {
  const queue = new Map<string, { queued?: Promise<PassResult>; last: Promise<unknown>; woken?: boolean }>();
  const settle = () => undefined;

  return function queuePass(runId: string, woken: boolean): Promise<PassResult> {
    const slot = queue.get(runId) ?? { last: Promise.resolve() };
    if (woken) slot.woken = true;
    if (slot.queued !== undefined) return slot.queued;
    const next: Promise<PassResult> = slot.last.then(settle, settle).then(() => {
      const speculate = slot.woken === true;
      slot.queued = undefined;
      slot.woken = undefined;
      return runPass(runId, speculate);
    });
    slot.queued = next;
    const last: Promise<unknown> = next.then(settle, settle).then(() => {
      if (slot.last === last) queue.delete(runId);
    });
    slot.last = last;
    queue.set(runId, slot);
    return next;
  };
}
