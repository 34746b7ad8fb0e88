/**
 * What the store-outage tests share (test/e2e/store-outage-endpoint.test.ts: an endpoint the stack
 * did not spawn dies; store-outage-own-moto.test.ts: the stack's own moto dies, with and without
 * --data-dir): a local stack on a 4-rack inventory with its log lines, a health check of v1.Flow,
 * and a wait for a log line.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { service as healthService } from "grpc-health-check";
import { afterAll } from "vitest";
import { type LocalStack, startLocalStack } from "../../local/stack.js";
import { createFlowClient, type FlowClient } from "../../src/adapters/grpc/client.js";
import { FAST_SUCCESS, fleetOf, inventoryOf, rackGroup } from "./fixtures-inventory.js";
import { countGate, eventually, runRequest } from "./stack.js";

/** A directory of the file's own (data dirs, an inventory), removed after its tests. */
export function outageDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "store-outage-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export const RACKS = rackGroup(41, {
  name: "outage",
  count: 4,
  behaviour: { ...FAST_SUCCESS, updateMs: 300 },
});

export interface Running {
  stack: LocalStack;
  flow: FlowClient;
  health: () => Promise<string>;
  lines: string[];
  close(): Promise<void>;
}

export async function start(options: { awsEndpoint?: string; dataDir?: string }): Promise<Running> {
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

export const matching = (lines: string[], pattern: RegExp) => lines.filter((l) => pattern.test(l));

/** Waits for a log line matching `pattern` and returns it. */
export async function line(
  running: Running,
  pattern: RegExp,
  what: string,
  timeoutMs = 30_000,
): Promise<string> {
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

export function request() {
  return runRequest({ rackIds: RACKS.ids, maxConcurrent: 2, gates: [countGate(4)] });
}
