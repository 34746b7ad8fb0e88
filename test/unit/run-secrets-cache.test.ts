/** The child-task steps' run credentials, kept per process (src/app/child-task/run-secrets-cache.ts). */
import { describe, expect, it } from "vitest";
import { cachedRunSecrets } from "../../src/app/child-task/run-secrets-cache.js";
import type { FirmwareAuthentication } from "../../src/domain/model.js";

function store(fail = new Set<string>()) {
  const reads: string[] = [];
  return {
    reads,
    getRunSecrets: async (runId: string): Promise<FirmwareAuthentication | undefined> => {
      reads.push(runId);
      if (fail.has(runId)) throw new Error(`store down for ${runId}`);
      return runId === "none" ? undefined : { kind: "shared", secret: `s-${runId}` };
    },
  };
}

describe("cachedRunSecrets", () => {
  it("reads a run once per TTL, a run without credentials too; again once the TTL is over", async () => {
    let now = 0;
    const s = store();
    const cached = cachedRunSecrets(s, () => now, { ttlMs: 1_000 });
    const [a, b] = await Promise.all([cached.getRunSecrets("r1"), cached.getRunSecrets("r1")]);
    expect(a).toEqual({ kind: "shared", secret: "s-r1" });
    expect(b).toEqual(a);
    expect(await cached.getRunSecrets("none")).toBeUndefined();
    expect(await cached.getRunSecrets("none")).toBeUndefined();
    now = 999;
    await cached.getRunSecrets("r1");
    expect(s.reads).toEqual(["r1", "none"]);
    now = 1_000;
    await cached.getRunSecrets("r1");
    expect(s.reads).toEqual(["r1", "none", "r1"]);
  });

  it("a failed read is not kept: the next call reads again", async () => {
    const failing = new Set(["r1"]);
    const s = store(failing);
    const cached = cachedRunSecrets(s, () => 0);
    await expect(cached.getRunSecrets("r1")).rejects.toThrow("store down for r1");
    failing.clear();
    expect(await cached.getRunSecrets("r1")).toEqual({ kind: "shared", secret: "s-r1" });
    expect(s.reads).toEqual(["r1", "r1"]);
  });

  it("keeps at most maxRuns runs, the oldest going first", async () => {
    const s = store();
    const cached = cachedRunSecrets(s, () => 0, { maxRuns: 2 });
    for (const r of ["r1", "r2", "r3", "r2", "r1"]) await cached.getRunSecrets(r);
    expect(s.reads).toEqual(["r1", "r2", "r3", "r1"]);
  });
});
