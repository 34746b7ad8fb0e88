/**
 * A dead store is a clean, visible state, and what happens when the local stack's own moto dies:
 *   - an endpoint the stack did not spawn dies mid-run: calls answer UNAVAILABLE ("the data store
 *     is unreachable; retry later", never INTERNAL), health turns NOT_SERVING, the stream poller
 *     and the ticker say so once each instead of once per attempt; when the endpoint is back
 *     (restarted from its data dir), health is SERVING again and the run finishes;
 *   - the stack's own moto dies with --data-dir: one line, moto restarted from the data dir,
 *     NOT_SERVING then SERVING, and the run finishes;
 *   - without --data-dir (`npm start` as a child process: local/main.ts as the e2e project bundled
 *     it, test/support/entry-bundles.ts): one line, and the stack exits 1.
 * Every wait is for an observable event (a log line, a status, a health answer), with a deadline.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { service as healthService } from "grpc-health-check";
import { afterAll, describe, expect, it } from "vitest";
import { type LocalMoto, startLocalMoto } from "../../local/moto.js";
import { type LocalStack, startLocalStack } from "../../local/stack.js";
import { createFlowClient, type FlowClient } from "../../src/adapters/grpc/client.js";
import { OperationRunStatus } from "../../src/gen/flow/v1/flow.js";
import { entryBundle } from "../support/entry-bundles.js";
import { FAST_SUCCESS, fleetOf, inventoryOf, rackGroup } from "../support/fixtures-inventory.js";
import {
  countGate,
  createRun,
  eventually,
  failure,
  getRun,
  runRequest,
  stateOf,
  waitForTerminal,
} from "../support/stack.js";

const ROOT = join(import.meta.dirname, "..", "..");
const dir = mkdtempSync(join(tmpdir(), "store-outage-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const RACKS = rackGroup(41, { name: "outage", count: 4, behaviour: { ...FAST_SUCCESS, updateMs: 300 } });

interface Running {
  stack: LocalStack;
  flow: FlowClient;
  health: () => Promise<string>;
  lines: string[];
  close(): Promise<void>;
}

async function start(options: { awsEndpoint?: string; dataDir?: string }): Promise<Running> {
  const lines: string[] = [];
  const stack = await startLocalStack({
    port: 0,
    tickMs: 200,
    childTaskWaitMs: 100,
    inventory: inventoryOf([RACKS]),
    fleet: fleetOf([RACKS], FAST_SUCCESS),
    ...options,
    log: (line) => lines.push(line),
  });
  const address = `127.0.0.1:${stack.port}`;
  const flow = createFlowClient(address, grpc.credentials.createInsecure());
  const Health = grpc.makeGenericClientConstructor(healthService, "Health");
  const healthClient = new Health(address, grpc.credentials.createInsecure()) as unknown as {
    check(
      r: { service: string },
      o: grpc.CallOptions,
      cb: (e: Error | null, r?: { status: string }) => void,
    ): void;
    close(): void;
  };
  return {
    stack,
    flow,
    lines,
    health: () =>
      new Promise((resolve, reject) =>
        healthClient.check({ service: "v1.Flow" }, { deadline: Date.now() + 5_000 }, (e, r) =>
          e ? reject(e) : resolve(r?.status ?? ""),
        ),
      ),
    async close() {
      flow.close();
      healthClient.close();
      await stack.stop();
    },
  };
}

const matching = (lines: string[], pattern: RegExp) => lines.filter((l) => pattern.test(l));

/** Waits for a log line matching `pattern` and returns it. */
async function line(running: Running, pattern: RegExp, what: string, timeoutMs = 30_000): Promise<string> {
  const found = await eventually(
    async () => matching(running.lines, pattern),
    (xs) => xs.length > 0,
    what,
    timeoutMs,
  ).catch((error: Error) => {
    throw new Error(`${error.message}\n${running.lines.join("\n")}`);
  });
  return found[0]!;
}

function request() {
  return runRequest({ rackIds: RACKS.ids, maxConcurrent: 2, gates: [countGate(4)] });
}

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
