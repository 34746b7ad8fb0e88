/**
 * The run file's `options.maintenanceWindows`, both ways:
 *
 *   maintenanceWindows:
 *     - { cron: "0 2 * * MON-FRI", duration: 2h }   # 02:00-04:00 UTC on weekdays
 *
 * The cron is checked here with the service's own parser (src/domain/cron.ts), so a
 * typo is reported with its key path before anything is sent; what depends on the time (a window
 * that never opens before endTime) is left to the service.
 */
import { parseCron } from "../../src/domain/cron.js";
import type * as pb from "../../src/gen/flow/v1/flow.js";
import { formatDuration, nsToDuration } from "../durations.js";
import { join, type Reader } from "./reader.js";

export function readMaintenanceWindows(r: Reader, value: unknown, path: string): pb.MaintenanceWindow[] {
  const list = r.list(value, path) ?? [];
  return list.flatMap((item, i) => {
    const at = `${path}[${i}]`;
    const obj = r.object(item, at, ["cron", "duration"]);
    if (obj === undefined) return [];
    const cron =
      obj.cron === undefined
        ? r.add(join(at, "cron"), 'is required, e.g. "0 2 * * *" (02:00 UTC daily)')
        : r.string(obj.cron, join(at, "cron"), { nonEmpty: true });
    if (cron !== undefined) {
      const parsed = parseCron(cron);
      if (!parsed.ok) for (const error of parsed.errors) r.add(join(at, "cron"), error);
    }
    const ns =
      obj.duration === undefined
        ? r.add(join(at, "duration"), "is required, e.g. 2h")
        : r.duration(obj.duration, join(at, "duration"));
    return cron === undefined || ns === undefined ? [] : [{ cron, duration: nsToDuration(ns) }];
  });
}

export function maintenanceWindowsToFile(windows: readonly pb.MaintenanceWindow[]): Record<string, string>[] {
  return windows.map((w) => ({
    cron: w.cron,
    duration: formatDuration(w.duration),
  }));
}
