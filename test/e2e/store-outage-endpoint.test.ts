/**
 * A dead store is a clean, visible state: an endpoint the stack did not spawn dies mid-run: calls
 * answer UNAVAILABLE ("the data store is unreachable; retry later", never INTERNAL), health turns
 * NOT_SERVING, the stream poller and the ticker say so once each instead of once per attempt; when
 * the endpoint is back (restarted from its data dir), health is SERVING again and the run
 * finishes. (When the stack's own moto dies: store-outage-own-moto.test.ts.) Every wait is for an
 * observable event (a log line, a status, a health answer), with a deadline.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type LocalMoto, startLocalMoto } from "../../local/moto.js";
import { OperationRunStatus } from "../../src/gen/flow/v1/flow.js";
import { createRun, eventually, failure, stateOf, waitForTerminal } from "../support/stack.js";
import { line, matching, outageDir, request, start } from "../support/store-outage.js";

const dir = outageDir();

describe("a store that dies under a running stack", () => {
  it("an endpoint the stack did not spawn: UNAVAILABLE and NOT_SERVING, one line per change, then SERVING and the run finishes", async () => {
    const motoDir = join(dir, "external");
    let moto: LocalMoto = await startLocalMoto({ dataDir: motoDir });
    const s = await start({ awsEndpoint: moto.endpoint });
    try {
      expect(await s.health()).toBe("SERVING");
      const runId = await createRun(s.flow, request());
      await line(s, /preflight done/, "a child task past its preflight");

      process.kill(moto.pid()!, "SIGKILL");
      await moto.stop();
      await eventually(s.health, (h) => h === "NOT_SERVING", "health NOT_SERVING", 30_000);
      expect(await failure(s.flow.getOperationRun({ id: { id: runId }, includeStats: true }))).toEqual({
        code: "UNAVAILABLE",
        details: "the data store is unreachable; retry later",
      });
      // Every stream attempt failed meanwhile (they back off up to 5 s): one line each when it began.
      const tables = [s.stack.tables.runs, s.stack.tables.targets];
      for (const table of tables) {
        await line(
          s,
          new RegExp(`^stream poller: ${table}: .* failed .*; backing off until it answers$`),
          table,
        );
      }

      moto = await startLocalMoto({ dataDir: motoDir, port: moto.port });
      await eventually(s.health, (h) => h === "SERVING", "health SERVING again", 30_000);
      const run = await waitForTerminal(s.flow, runId, 120_000).catch((error: Error) => {
        throw new Error(`${error.message.slice(0, 200)}\n${s.lines.join("\n")}`);
      });
      expect(stateOf(run).status, s.lines.join("\n")).toBe(OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED);
      expect(run.stats?.cumulativePhaseStats?.outcomeCounts).toEqual({
        completed: 4,
        failed: 0,
        terminated: 0,
        skipped: 0,
      });
      // One line per change of state, not one per attempt.
      expect(matching(s.lines, /health NOT_SERVING/), s.lines.join("\n")).toHaveLength(1);
      expect(matching(s.lines, /health SERVING/)).toHaveLength(1);
      for (const table of tables) {
        for (const change of ["backing off", "the store has a new stream", "stream readable again"]) {
          expect(matching(s.lines, new RegExp(`^stream poller: ${table}: .*${change}`)), change).toHaveLength(
            1,
          );
        }
      }
      expect(matching(s.lines, /^ticker: dispatch pass failed/).length).toBeLessThanOrEqual(1);
      expect(matching(s.lines, /internal error|INTERNAL/)).toEqual([]);
    } finally {
      await s.close();
      await moto.stop();
    }
  }, 240_000);
});
