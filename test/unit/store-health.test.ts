/**
 * A dead or throttled store is one visible state: the health monitor's transitions and its lines,
 * the fail-fast API, and the adapter boundary that turns "nothing answered" and "slow down" into
 * StoreUnavailableError (against a real socket: a closed port, and a server that throttles).
 */

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { afterEach, describe, expect, it, vi } from "vitest";
import { freePort } from "../../local/moto.js";
import { createDynamoDbClient } from "../../src/adapters/aws-config.js";
import { raiseStoreUnavailable, unavailability } from "../../src/adapters/dynamodb/db.js";
import { storeProbe } from "../../src/adapters/dynamodb/store-probe.js";
import { grpcStatusFor } from "../../src/adapters/grpc/status.js";
import { systemClock } from "../../src/adapters/system-clock.js";
import type { FlowApi } from "../../src/app/api.js";
import { lineLogger } from "../../src/app/observability.js";
import { createStoreHealth, failFastWhileUnreachable } from "../../src/app/store-health.js";
import { StoreUnavailableError } from "../../src/domain/errors.js";
import { clockOf } from "../support/clock.js";
import { until } from "../support/poll.js";

describe("createStoreHealth", () => {
  it("unreachable from the first failed probe, reachable again at the first answer: one line and one event per change", async () => {
    const lines: string[] = [];
    const changes: boolean[] = [];
    let down = false;
    let probes = 0;
    let clock = 1_000;
    const health = createStoreHealth({
      probe: {
        probe: async () => {
          probes++;
          if (down) throw new Error("connect ECONNREFUSED 127.0.0.1:5000");
        },
      },
      logger: lineLogger((l) => lines.push(l)),
      intervalMs: 60_000,
      retry: { firstMs: 1, maxMs: 4 },
      clock: clockOf(() => clock),
    });
    health.onChange((reachable) => changes.push(reachable));
    health.start();
    await until("the first probe", () => probes === 1);
    expect(health.reachable).toBe(true);

    // A store call failed: the monitor probes at once instead of at its 60 s interval.
    // (Store calls keep failing, so suspicions keep coming: the first may join the probe that is
    // still finishing.)
    down = true;
    await until("NOT_SERVING", () => {
      health.suspect();
      return !health.reachable;
    });
    // While unreachable it keeps probing with backoff; a suspicion adds nothing.
    health.suspect();
    await until("three more failed probes", () => probes >= 5);
    expect(changes).toEqual([false]);
    clock += 4_210;
    down = false;
    await until("SERVING again", () => health.reachable);
    await health.stop();
    expect(changes).toEqual([false, true]);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe(
      "warn data store unreachable; health NOT_SERVING error=Error: connect ECONNREFUSED 127.0.0.1:5000",
    );
    expect(lines[1]).toMatch(
      /^info data store reachable again; health SERVING downForMs=4210 failedProbes=\d+$/,
    );
  });

  it("down(reason): unreachable at once, without waiting for a probe; SERVING at the first answer", async () => {
    const lines: string[] = [];
    let probes = 0;
    const health = createStoreHealth({
      probe: { probe: async () => void probes++ },
      logger: lineLogger((l) => lines.push(l)),
      intervalMs: 60_000,
      retry: { firstMs: 1, maxMs: 4 },
      clock: systemClock,
    });
    health.start();
    await until("the first probe", () => probes === 1);
    health.down("moto exited (signal SIGKILL)");
    expect(health.reachable).toBe(false);
    expect(lines).toEqual([
      "warn data store unreachable; health NOT_SERVING error=moto exited (signal SIGKILL)",
    ]);
    await until("SERVING again", () => health.reachable);
    await health.stop();
    health.down("after stop");
    expect(health.reachable).toBe(true);
    expect(lines[1]).toMatch(
      /^info data store reachable again; health SERVING downForMs=\d+ failedProbes=0$/,
    );
  });

  it("stopped: no more probes, suspicions ignored, start twice is one start", async () => {
    // On fake timers: the probe the monitor schedules is a timer the test can see and run.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      let probes = 0;
      const health = createStoreHealth({
        probe: { probe: async () => void probes++ },
        logger: lineLogger(() => {}),
        clock: clockOf(() => Date.now()),
        intervalMs: 60_000,
      });
      health.suspect();
      expect(probes).toBe(0);
      expect(vi.getTimerCount()).toBe(0);
      health.start();
      // The first probe ran and answered: the next one is scheduled, one interval away.
      await vi.advanceTimersByTimeAsync(0);
      expect(probes).toBe(1);
      expect(vi.getTimerCount()).toBe(1);
      // Started again once the first probe is over (a probe in flight would absorb a second one):
      // no probe at once, still the one schedule.
      health.start();
      expect(probes).toBe(1);
      await vi.advanceTimersByTimeAsync(59_999);
      expect(probes).toBe(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(probes).toBe(2);
      expect(vi.getTimerCount()).toBe(1);
      await health.stop();
      expect(vi.getTimerCount()).toBe(0);
      health.suspect();
      health.start();
      await health.stop();
      expect(probes).toBe(3);
      health.suspect();
      expect(probes).toBe(3);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("failFastWhileUnreachable", () => {
  it("answers UNAVAILABLE at once while the store is unreachable; version always; calls through otherwise", async () => {
    const calls: string[] = [];
    const api = {
      getRun: async (id: string) => {
        calls.push(id);
        return { run: { id } };
      },
      version: () => ({ version: "v", buildTime: "", gitCommit: "" }),
    } as unknown as FlowApi;
    const health = { reachable: false };
    const guarded = failFastWhileUnreachable(api, health);
    const refused = await guarded.getRun("r-1", false).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StoreUnavailableError);
    expect(grpcStatusFor((refused as StoreUnavailableError).code)).toBe(14); // UNAVAILABLE
    expect((refused as Error).message).toBe("the data store is unreachable; retry later");
    expect(guarded.version()).toEqual({ version: "v", buildTime: "", gitCommit: "" });
    expect(calls).toEqual([]);
    health.reachable = true;
    expect(await guarded.getRun("r-2", false)).toEqual({ run: { id: "r-2" } });
    expect(calls).toEqual(["r-2"]);
  });
});

describe("the store adapter's boundary", () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it.each([
    [
      "a refused connection",
      Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }),
      "unreachable",
    ],
    [
      "fetch failed (undici)",
      Object.assign(new TypeError("fetch failed"), { cause: { code: "UND_ERR_SOCKET" } }),
      "unreachable",
    ],
    [
      "the SDK's request timeout",
      Object.assign(new Error("timed out"), { name: "TimeoutError" }),
      "unreachable",
    ],
    ["InternalServerError", Object.assign(new Error("x"), { name: "InternalServerError" }), "unreachable"],
    [
      "HTTP 503",
      Object.assign(new Error("x"), { name: "Unknown", $metadata: { httpStatusCode: 503 } }),
      "unreachable",
    ],
    [
      "throughput exceeded",
      Object.assign(new Error("x"), { name: "ProvisionedThroughputExceededException" }),
      "throttled",
    ],
    [
      "HTTP 429",
      Object.assign(new Error("x"), { name: "Unknown", $metadata: { httpStatusCode: 429 } }),
      "throttled",
    ],
    [
      "a failed condition",
      Object.assign(new Error("x"), { name: "ConditionalCheckFailedException" }),
      undefined,
    ],
    [
      "any other 500 (an endpoint's bug)",
      Object.assign(new Error("x"), { name: "Unknown", $metadata: { httpStatusCode: 500 } }),
      undefined,
    ],
    ["a string", "boom", undefined],
  ])("%s → %s", (_, error, reason) => {
    expect(unavailability(error)).toBe(reason);
  });

  it("a call to a port nobody listens on fails with StoreUnavailableError (cause: the SDK's error), and the observer hears of it", async () => {
    const port = await freePort();
    const client = createDynamoDbClient({ endpoint: `http://127.0.0.1:${port}`, maxAttempts: 1 });
    const seen: StoreUnavailableError[] = [];
    raiseStoreUnavailable(client, (e) => seen.push(e));
    const error = await client
      .send(new GetItemCommand({ TableName: "t", Key: { id: { S: "x" } } }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error).toMatchObject({ reason: "unreachable", code: "UNAVAILABLE" });
    expect(((error as Error).cause as { code?: string }).code).toBe("ECONNREFUSED");
    expect(seen).toEqual([error]);
    // The probe says the same, on its own single-attempt client.
    await expect(storeProbe({ endpoint: `http://127.0.0.1:${port}` }, "t").probe()).rejects.toMatchObject({
      code: "ECONNREFUSED",
    });
  });

  it("a store that keeps throttling: StoreUnavailableError 'throttled'; a store that answers anything: the probe passes", async () => {
    let throttle = true;
    server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        const [status, type] = throttle
          ? [400, "ProvisionedThroughputExceededException"]
          : [400, "ResourceNotFoundException"];
        res
          .writeHead(status, { "content-type": "application/x-amz-json-1.0", "x-amzn-ErrorType": type })
          .end(JSON.stringify({ __type: `com.amazonaws.dynamodb.v20120810#${type}`, message: "m" }));
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = createDynamoDbClient({ endpoint, maxAttempts: 1 });
    raiseStoreUnavailable(client);
    await expect(
      client.send(new GetItemCommand({ TableName: "t", Key: { id: { S: "x" } } })),
    ).rejects.toMatchObject({ name: "StoreUnavailableError", reason: "throttled" });
    await expect(storeProbe({ endpoint }, "t").probe()).rejects.toMatchObject({
      name: "ProvisionedThroughputExceededException",
    });
    throttle = false;
    await expect(storeProbe({ endpoint }, "t").probe()).resolves.toBeUndefined();
    // A condition failure or a missing table is an answer, passed on as it is.
    await expect(
      client.send(new GetItemCommand({ TableName: "t", Key: { id: { S: "x" } } })),
    ).rejects.toMatchObject({ name: "ResourceNotFoundException" });
  });
});
