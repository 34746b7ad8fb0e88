/**
 * A run's firmware credentials as the child-task steps read them, kept a few minutes by the
 * process: every update wave of every child of a run needs the same credentials (frozen when the
 * run was created; nothing changes them), so a warm task-steps Lambda reads and decrypts them once
 * per run and TTL instead of once per wave (six reads per rack for the default rule). A run
 * without credentials is kept too. Bounded (the oldest run goes first) and short-lived, so
 * plaintext credentials do not linger in memory; a failed read is not kept.
 */
import type { FirmwareAuthentication } from "../../domain/model.js";
import type { RunStore } from "../ports.js";

export const RUN_SECRETS_TTL_MS = 5 * 60_000;
export const RUN_SECRETS_MAX_RUNS = 64;

export function cachedRunSecrets(
  runs: Pick<RunStore, "getRunSecrets">,
  clock: () => number,
  options: { ttlMs?: number; maxRuns?: number } = {},
): Pick<RunStore, "getRunSecrets"> {
  const ttlMs = options.ttlMs ?? RUN_SECRETS_TTL_MS;
  const maxRuns = options.maxRuns ?? RUN_SECRETS_MAX_RUNS;
  // Insertion order is age order: the first key is the oldest.
  const kept = new Map<string, { until: number; value: Promise<FirmwareAuthentication | undefined> }>();
  return {
    getRunSecrets(runId: string): Promise<FirmwareAuthentication | undefined> {
      const now = clock();
      const hit = kept.get(runId);
      if (hit !== undefined && now < hit.until) return hit.value;
      kept.delete(runId);
      const value = runs.getRunSecrets(runId);
      kept.set(runId, { until: now + ttlMs, value });
      value.catch(() => {
        if (kept.get(runId)?.value === value) kept.delete(runId);
      });
      while (kept.size > maxRuns) {
        const oldest = kept.keys().next().value as string;
        kept.delete(oldest);
      }
      return value;
    },
  };
}
