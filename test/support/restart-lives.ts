/**
 * The restart tests (test/e2e/restart-<signal>-<points>.test.ts: one file per signal and half of
 * the kill points, so the four run at once): a local stack on a data directory survives being
 * killed at every point of a 3-rack run: (1) right after CreateOperationRun was answered, (2)
 * right after a target was CLAIMED, (3) right after one was SUBMITTED, (4) mid-flash, (5) after a
 * BMC finished flashing but before the stack stored its result, and (6) right after an outcome was
 * recorded. After each kill the stack is started again on the same directory (in the 4-6 half, the
 * life that creates the run is the one killed mid-flash); the last life runs the rollout to its
 * end, and then:
 *   - the run exists and is COMPLETED, with stats equal to its targets, every target COMPLETED;
 *   - every component was flashed exactly once: each re-sent command carried its first request
 *     id, and the BMC answered it from memory, even where the kill lost the stored result.
 *
 * The stack runs as a child process (test/support/stack-process.ts, served like `npm start`, as
 * the e2e project bundled it: test/support/entry-bundles.ts);
 * the MQTT broker and the simulated BMCs live here, in the test process, as hardware outlives a
 * control plane that restarts, so the flash counts span every life of the stack. The store-side
 * kill points are the child's own kill switch (right after the store acknowledged the write);
 * the BMC-side ones are taken here, on the broker and in the fleet, where they happen.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BmcFleet, startBmcFleet } from "../../local/bmc-fleet.js";
import { type LocalMqttBroker, startMqttBroker } from "../../local/mqtt-broker.js";
import { createFlowClient, type FlowClient } from "../../src/adapters/grpc/client.js";
import { BMC_EVT_TOPIC_FILTER } from "../../src/domain/bmc-topics.js";
import { OperationRunStatus, OperationRunTargetStatus } from "../../src/gen/flow/v1/flow.js";
import { COMPILE_CACHE_ENV, entryBundle } from "./entry-bundles.js";
import { rackGroup } from "./fixtures-inventory.js";
import {
  countGate,
  createRun,
  getRun,
  listTargets,
  runRequest,
  stateOf,
  targetReport,
  waitForTerminal,
} from "./stack.js";

const ROOT = join(import.meta.dirname, "..", "..");
/**
 * Three racks of four components (three types, so each rack runs the built-in rule's update,
 * activation and bring-up for three stages, all of which a restart must resume). Every kill point
 * is the first write or BMC event of its kind in its life, so more racks would repeat what these
 * prove, at a rack's CPU each; three leave room for targets in different states at a kill (one
 * PENDING while others are in flight, or all three at different steps: maxConcurrentFor).
 */
const RACKS = rackGroup(40, {
  name: "restart",
  count: 3,
  types: ["POWERSHELF", "NVSWITCH", "COMPUTE", "COMPUTE"],
});
const COMPONENTS = RACKS.racks.flatMap((r) => r.components.map((c) => c.id));
/** The test's directory (the inventory file, the data directory), made by its beforeAll. */
let dir: string;
let inventoryFile: string;

let broker: LocalMqttBroker;
/** Each run gets BMCs of its own, all on 1.0.0. */
let fleet: BmcFleet;
/** Called by the fleet after a flash, before the BMC reports it (see the "flashed" kill point). */
let onFlashed: (() => void) | undefined;
/** Called for every BMC event on the broker (see the "mid-flash" kill point). */
let onBmcEvent: ((payload: string) => void) | undefined;
/** Every life started, so a failing test leaves no stack running. */
const lives: ChildProcess[] = [];

interface Life {
  child: ChildProcess;
  /**
   * Undefined for a life that met its kill switch before it listened (a task re-driven at start
   * can reach the kill point, an outcome say, before the gRPC server is up): it died there.
   */
  flow: FlowClient | undefined;
  /** Everything the child printed, for the message of a failing assertion. */
  output: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Once the child's output is all read ('exit' may come before its last line). */
  closed: Promise<void>;
}

async function startLife(dataDir: string, env: Record<string, string>): Promise<Life> {
  const child = spawn(process.execPath, [entryBundle("stack-process")], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...COMPILE_CACHE_ENV,
      FLOW_PORT: "0",
      FLOW_DATA_DIR: dataDir,
      FLOW_TICK: "200ms",
      FLOW_CHILD_TASK_WAIT: "100ms",
      FLOW_TEST_BMC_BROKER: broker.url,
      FLOW_TEST_LEASE_MS: "2000",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  lives.push(child);
  const output: string[] = [];
  // 'close' comes after the last of the child's output has been read ('exit' may come first).
  const closed = new Promise<void>((done) => child.once("close", () => done()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const port = await new Promise<number | undefined>((resolve, reject) => {
    let pending = "";
    child.stdout?.on("data", (d: Buffer) => {
      pending += d.toString();
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        output.push(line);
        const m = /listening on 127\.0\.0\.1:(\d+)/.exec(line);
        if (m) resolve(Number(m[1]));
      }
    });
    child.stderr?.on("data", (d: Buffer) => output.push(d.toString()));
    void Promise.all([exited, closed]).then(([{ code, signal }]) => {
      if (env.FLOW_TEST_KILL !== undefined && output.some((l) => l.includes("test kill switch"))) {
        resolve(undefined);
        return;
      }
      reject(new Error(`the stack exited (${code ?? signal}) before listening:\n${output.join("\n")}`));
    });
  });
  const flow =
    port === undefined ? undefined : createFlowClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return { child, flow, output, exited, closed };
}

/** Waits for the life to end by its kill; a run that finishes first means the point never came. */
async function died(life: Life, runId: string, point: string): Promise<void> {
  const flow = life.flow;
  if (flow === undefined) {
    await life.exited;
    return;
  }
  let ended = false;
  const finished = (async () => {
    while (!ended) {
      const run = await getRun(flow, runId).catch(() => undefined);
      if (run !== undefined && stateOf(run).status === OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED)
        throw new Error(`the run finished before the kill point "${point}":\n${life.output.join("\n")}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  try {
    await Promise.race([life.exited, finished]);
  } finally {
    ended = true;
    flow.close();
  }
}

/** The client of a life without a kill switch (so one that listened). */
function flowOf(life: Life): FlowClient {
  if (life.flow === undefined)
    throw new Error(`this life died before it listened:\n${life.output.join("\n")}`);
  return life.flow;
}

function expectEndedBy(
  signal: NodeJS.Signals,
  ending: { code: number | null; signal: NodeJS.Signals | null },
  life?: Life,
) {
  // SIGTERM is a clean stop (exit 0); SIGKILL gives the process no say. A life that met its kill
  // switch before it listened was still starting: its stop handler may not be there yet, and then
  // SIGTERM ends it as it would any process.
  const startingUp = life !== undefined && life.flow === undefined && ending.signal === "SIGTERM";
  expect(ending).toEqual(
    signal === "SIGTERM" && !startingUp ? { code: 0, signal: null } : { code: null, signal },
  );
}

/** The kill points, numbered as the restart files name them: 1-3 before any flash, 4-6 around one. */
export type KillPoints = "1-3" | "4-6";

/**
 * How many of the run's targets run at once. Kill points 4-6 need no target left to claim: all
 * at once, one round. Kill points 2 and 3 need a claim and a submission in lives after the one
 * that created the run, so targets must be left PENDING for them:
 *   - SIGKILL: the create's life may claim (and submit) up to `maxConcurrent` in the moment
 *     before the test's kill lands, and the claim's life dies at its first claim, which a
 *     submission in the next life must follow (the claim comes back after its lease): one more
 *     rack than run at once is enough;
 *   - SIGTERM: a clean stop lets the dispatch pass it is in finish, so the create's life and the
 *     claim's life may each claim up to `maxConcurrent` (the claim's life once a target
 *     finished and freed a slot), and the submission's life needs one left: more than twice as
 *     many racks as run at once, so one at a time.
 */
function maxConcurrentFor(signal: NodeJS.Signals, points: KillPoints): number {
  if (points === "4-6") return RACKS.ids.length;
  return signal === "SIGKILL" ? RACKS.ids.length - 1 : Math.floor((RACKS.ids.length - 1) / 2);
}

const KILL_POINTS: Record<KillPoints, string> = {
  "1-3": "right after the create was answered, a claim and a submission",
  "4-6": "mid-flash, after a flash not yet stored and after an outcome",
};

/**
 * Registers the test for one signal and one half of the kill points: its broker and data
 * directory, a run killed at each of those points and started again, and its last life run to the
 * end. Each half is a file of its own (test/e2e/restart-<signal>-<points>.test.ts), so the four
 * run at once.
 */
export function describeKilledAt(signal: "SIGKILL" | "SIGTERM", points: KillPoints): void {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "restart-"));
    inventoryFile = join(dir, "inventory.json");
    writeFileSync(inventoryFile, JSON.stringify({ racks: RACKS.racks }));
    broker = await startMqttBroker();
    await broker.subscribe(BMC_EVT_TOPIC_FILTER, (_topic, payload) => onBmcEvent?.(payload.toString("utf8")));
  });
  afterAll(async () => {
    for (const child of lives.splice(0))
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  describe(`a ${RACKS.ids.length}-rack run, the stack killed by ${signal} ${KILL_POINTS[points]}`, () => {
    it("finishes with every target COMPLETED and every component flashed once", async () => {
      const dataDir = mkdtempSync(join(dir, `${signal}-`));
      fleet = await startBmcFleet({
        brokerUrl: broker.url,
        racks: RACKS.racks,
        config: { defaults: { outcome: "succeed", updateMs: 400 }, racks: {}, components: {} },
        onFirmwareChanged: () => onFlashed?.(),
      });

      // The fleet goes with the test, however it ends: BMCs left on the broker would answer the
      // next test's queries (first answer wins) with the firmware this one gave them.
      try {
        const runId =
          points === "1-3"
            ? await killedBeforeFlash(signal, dataDir)
            : await killedAroundFlash(signal, dataDir);
        await finishes(dataDir, runId);
      } finally {
        await fleet.stop();
      }
    }, 600_000);
  });
}

/** Kill points 1-3; returns the run's id. */
async function killedBeforeFlash(signal: NodeJS.Signals, dataDir: string): Promise<string> {
  // 1. Right after CreateOperationRun was answered.
  const life = await startLife(dataDir, { FLOW_INVENTORY: inventoryFile });
  const runId = await createRun(
    flowOf(life),
    runRequest({
      rackIds: RACKS.ids,
      maxConcurrent: maxConcurrentFor(signal, "1-3"),
      gates: [countGate(RACKS.ids.length)],
    }),
  );
  life.child.kill(signal);
  expectEndedBy(signal, await life.exited);
  flowOf(life).close();

  // 2–3. Right after the store acknowledged a claim, a submission.
  for (const write of ["claim", "submitted"]) {
    const life = await startLife(dataDir, { FLOW_TEST_KILL: `${write}:1:${signal}` });
    // The run survived every kill so far (the first: its create was answered 0 ms before);
    // a life that met its kill point before it listened could not be asked, and one that met
    // it while the read was in flight drops the read (then its output says why it died).
    if (life.flow !== undefined) {
      const read = await getRun(life.flow, runId).catch((error: unknown) => ({ error }));
      if ("error" in read) {
        await life.closed;
        expect(
          life.output.some((l) => l.includes("test kill switch")),
          String(read.error),
        ).toBe(true);
      } else expect(read.summary?.id?.id).toBe(runId);
    }
    await died(life, runId, write);
    expectEndedBy(signal, await life.exited, life);
  }
  return runId;
}

/** Kill points 4-6, the first in the life that created the run; returns the run's id. */
async function killedAroundFlash(signal: NodeJS.Signals, dataDir: string): Promise<string> {
  // 4. Mid-flash: a BMC reported progress.
  let life = await startLife(dataDir, { FLOW_INVENTORY: inventoryFile });
  const mid = life;
  onBmcEvent = (payload) => {
    if (payload.includes('"type":"progress"')) mid.child.kill(signal);
  };
  const runId = await createRun(
    flowOf(life),
    runRequest({
      rackIds: RACKS.ids,
      maxConcurrent: maxConcurrentFor(signal, "4-6"),
      gates: [countGate(RACKS.ids.length)],
    }),
  );
  await died(life, runId, "mid-flash");
  onBmcEvent = undefined;
  expectEndedBy(signal, await life.exited);

  // 5. A BMC finished flashing, and the stack dies before it stores the result (SIGKILL: it is
  //    never stored by this life; SIGTERM: stored or not, depending on how far the stop got).
  life = await startLife(dataDir, {});
  const flashed = life;
  onFlashed = () => {
    flashed.child.kill(signal);
    onFlashed = undefined;
  };
  await died(life, runId, "flashed");
  expectEndedBy(signal, await life.exited);

  // 6. Right after the store acknowledged an outcome.
  life = await startLife(dataDir, { FLOW_TEST_KILL: `outcome:1:${signal}` });
  await died(life, runId, "outcome");
  expectEndedBy(signal, await life.exited, life);
  return runId;
}

/** The last life runs the rollout to its end: the run and its targets COMPLETED, each component flashed once. */
async function finishes(dataDir: string, runId: string): Promise<void> {
  const life = await startLife(dataDir, {});
  const flow = flowOf(life);
  try {
    const run = await waitForTerminal(flow, runId, 90_000).catch(async (error: Error) => {
      const targets = await targetReport(flow, runId);
      throw new Error(`${error.message.slice(0, 200)}\n${targets}\n${life.output.join("\n")}`);
    });
    const why = `${life.output.join("\n")}`;
    expect(stateOf(run).status, why).toBe(OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED);
    expect(run.stats?.cumulativePhaseStats).toEqual({
      phaseIndex: 0,
      selectedTargets: RACKS.ids.length,
      outcomeCounts: { completed: RACKS.ids.length, failed: 0, terminated: 0, skipped: 0 },
    });
    const targets = await listTargets(flow, runId);
    expect(targets.map((t) => OperationRunTargetStatus[t.status])).toEqual(
      Array(RACKS.ids.length).fill("OPERATION_RUN_TARGET_STATUS_COMPLETED"),
    );
    const flashes = fleet.stats().flashesByComponent;
    expect(Object.fromEntries(COMPONENTS.map((id) => [id, flashes[id]]))).toEqual(
      Object.fromEntries(COMPONENTS.map((id) => [id, 1])),
    );
    expect(Object.keys(flashes).sort()).toEqual([...COMPONENTS].sort());
  } finally {
    flow.close();
    life.child.kill("SIGTERM");
    expect(await life.exited).toEqual({ code: 0, signal: null });
  }
}
