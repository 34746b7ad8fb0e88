/**
 * A run's maintenance window as flowctl shows it (`run get`, `run watch`, the dry run): computed
 * from the configuration the service returned, with the service's own arithmetic
 * (src/domain/maintenance-window.ts), at the watcher's clock.
 *
 *   no start_time, end_time or windows  → undefined (nothing to show)
 *   start 08:00, now 07:00              → "not open yet: opens at 2026-11-20T08:00:00Z"
 *   inside a window closing at 10:00    → "open: closes at 2026-11-20T10:00:00Z"
 *   between windows                     → "closed now: next opens at 2026-11-21T09:00:00Z"
 *   end_time 12:00 passed               → "closed for good at 2026-11-20T12:00:00Z"
 */
import { formatRfc3339 } from "../src/domain/calendar.js";
import { type Schedule, windowState } from "../src/domain/maintenance-window.js";
import type * as pb from "../src/gen/flow/v1/flow.js";
import { durationToNs } from "./durations.js";

export function scheduleFromConfig(config: pb.OperationRunConfiguration | undefined): Schedule | undefined {
  const fw = config?.operation?.operation?.value;
  const windows = (config?.options?.maintenanceWindows ?? []).map((w) => ({
    cron: w.cron,
    durationMs: w.duration === undefined ? 0 : Number(durationToNs(w.duration) / 1_000_000n),
  }));
  const startTime = fw?.startTime?.getTime();
  const endTime = fw?.endTime?.getTime();
  if (startTime === undefined && endTime === undefined && windows.length === 0) return undefined;
  return { startTime, endTime, windows };
}

export function windowText(config: pb.OperationRunConfiguration | undefined, now: Date): string | undefined {
  const schedule = scheduleFromConfig(config);
  if (schedule === undefined) return undefined;
  const state = windowState(schedule, now.getTime());
  const opens = (t: number | undefined, label: string) =>
    t === undefined ? "no window opens before end_time" : `${label} ${formatRfc3339(t)}`;
  switch (state.kind) {
    case "open":
      return state.closesAt === undefined ? "open" : `open: closes at ${formatRfc3339(state.closesAt)}`;
    case "before":
      return `not open yet: ${opens(state.opensAt, "opens at")}`;
    case "outside":
      return `closed now: ${opens(state.opensAt, "next opens at")}`;
    case "closed":
      return `closed for good at ${formatRfc3339(state.closedAt)}`;
  }
}
