/**
 * What happens when the local stack's own moto dies:
 *   - with --data-dir: one line, moto restarted from the data dir, NOT_SERVING then SERVING, and
 *     the run finishes;
 *   - without --data-dir (`npm start` as a child process: local/main.ts as the e2e project bundled
 *     it, test/support/entry-bundles.ts): one line, and the stack exits 1.
 * (An endpoint the stack did not spawn: store-outage-endpoint.test.ts.) Every wait is for an
 * observable event (a log line, a status, a health answer), with a deadline.
 */
import { execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { OperationRunStatus } from "../../src/gen/flow/v1/flow.js";
import { entryBundle } from "../support/entry-bundles.js";
import { createRun, eventually, getRun, stateOf, waitForTerminal } from "../support/stack.js";
import { line, outageDir, RACKS, request, start } from "../support/store-outage.js";

const ROOT = join(import.meta.dirname, "..", "..");
const dir = outageDir();

describe("a store that dies under a running stack", () => {
  it("the stack's own moto with --data-dir: one line, restarted from the data dir, NOT_SERVING then SERVING, the run finishes", async () => {
    const dataDir = join(dir, "own");
    const s = await start({ dataDir });
    try {
      const runId = await createRun(s.flow, request());
      await line(s, /preflight done/, "a child task past its preflight");
      process.kill(s.stack.moto!.pid()!, "SIGKILL");
      expect(await line(s, /^moto \(DynamoDB\) exited unexpectedly/, "the supervisor's line")).toBe(
        `moto (DynamoDB) exited unexpectedly (signal SIGKILL); restarting it from ${join(dataDir, "dynamodb")}`,
      );
      await line(s, /health NOT_SERVING/, "NOT_SERVING");
      await line(s, /^flow-moto: restored \d+ items and replayed \d+ logged writes/, "moto's restore");
      await line(s, /health SERVING/, "SERVING again");
      const run = await waitForTerminal(s.flow, runId, 120_000).catch((error: Error) => {
        throw new Error(`${error.message.slice(0, 200)}\n${s.lines.join("\n")}`);
      });
      expect(stateOf(run).status, s.lines.join("\n")).toBe(OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED);
      expect((await getRun(s.flow, runId, true)).stats?.cumulativePhaseStats?.outcomeCounts?.completed).toBe(
        4,
      );
    } finally {
      await s.close();
    }
  }, 240_000);

  it("npm start without --data-dir: moto killed → one line, and the stack exits 1", async () => {
    const inventory = join(dir, "inventory.json");
    writeFileSync(inventory, JSON.stringify({ racks: RACKS.racks }));
    const child = spawn(
      process.execPath,
      [entryBundle("local-main"), "--port", "0", "--inventory", inventory],
      {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "pipe"],
        // A user's `npm start`: moto spawned as the stack's own child (the run's fork server, which
        // would fork it instead, is for the test suites' motos: local/moto.ts).
        env: { ...process.env, FLOW_MOTO_FORKSERVER: "" },
      },
    );
    const output: string[] = [];
    child.stdout.on("data", (d: Buffer) =>
      output.push(
        ...d
          .toString()
          .split("\n")
          .filter((l) => l !== ""),
      ),
    );
    child.stderr.on("data", (d: Buffer) => output.push(d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      await eventually(
        async () => output.some((l) => l.includes("listening on 127.0.0.1:")),
        (ok) => ok,
        "the stack to listen",
        60_000,
      );
      // moto is the stack's own child process.
      const motoPid = Number(
        execFileSync("pgrep", ["-P", String(child.pid), "-f", "moto-launcher"])
          .toString()
          .trim()
          .split("\n")[0],
      );
      process.kill(motoPid, "SIGKILL");
      expect(await exited).toBe(1);
      expect(output.filter((l) => l.startsWith("moto (DynamoDB)"))).toEqual([
        "moto (DynamoDB) exited unexpectedly (signal SIGKILL); its tables were in memory only (no --data-dir), so the local stack stops",
      ]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
  }, 120_000);
});
