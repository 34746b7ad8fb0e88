/**
 * Throttling. (1) ProvisionedThroughputExceededException injected INSIDE the SDK's retry loop (a
 * middleware after the retry middleware, on every fourth attempt, twelve in all) against moto: the client built by
 * src/adapters/aws-config.ts (adaptive retry, 8 attempts) retries each one with backoff, no error
 * reaches the dispatcher, and the run completes exactly. (2) Throttling that outlasts the SDK's
 * retries (aws-sdk-client-mock on the document client, so the rejection skips the SDK's retry):
 * the pass fails and is logged, nothing is half-done, and the next pass completes the run.
 * The first test's client runs the SDK's adaptive strategy on scaled delays (`retryDelayScale`):
 * at the SDK's own pacing its back-off and rate limiter made the file take 30 s.
 */

import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  BatchGetCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { awsClientConfig } from "../../src/adapters/aws-config.js";
import { createDynamoStores, type TableNames } from "../../src/adapters/dynamodb/index.js";
import { systemClock } from "../../src/adapters/system-clock.js";
import { createDispatcher } from "../../src/app/dispatcher.js";
import type { Logger } from "../../src/app/observability.js";
import type { Run } from "../../src/domain/model.js";
import { runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { FakeSubmitter, waitMs } from "../support/fake-submitter.js";
import { freshTables, TEST_CREDENTIALS, TEST_REGION, testClient } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

/** The SDK's retry pacing, shortened (src/adapters/aws-config.ts `retryDelayScale`). */
const RETRY_DELAY_SCALE = 0.02;

let admin: DynamoDBClient;
let names: TableNames;
let drop: () => Promise<void>;

beforeAll(async () => {
  admin = testClient(testEndpoint());
  ({ names, drop } = await freshTables(admin, "throttle"));
});
afterAll(async () => {
  await drop();
  admin.destroy();
});

function throttle(): Error {
  return Object.assign(
    new Error("The level of configured provisioned throughput for the table was exceeded."),
    {
      name: "ProvisionedThroughputExceededException",
      $fault: "client",
      $metadata: { httpStatusCode: 400 },
    },
  );
}

function capturingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const put = (level: string) => (message: string) => void lines.push(`${level} ${message}`);
  return { lines, info: put("info"), warn: put("warn"), error: put("error") };
}

describe("dispatcher under DynamoDB throttling", () => {
  it("throttled attempts are retried by the SDK with backoff; the run completes with exact counts and no duplicate task", async () => {
    // The product's client configuration (adaptive retries, 8 attempts) on the test endpoint, its
    // back-off and rate limiter on a fiftieth of the SDK's delays: the same retries, in less time.
    const client = new DynamoDBClient(
      awsClientConfig({
        endpoint: testEndpoint(),
        region: TEST_REGION,
        credentials: TEST_CREDENTIALS,
        retryDelayScale: RETRY_DELAY_SCALE,
      }),
    );
    let calls = 0;
    let attempts = 0;
    let throttled = 0;
    client.middlewareStack.add(
      (next) => async (args) => {
        calls++;
        return next(args);
      },
      { step: "initialize", name: "countCalls" },
    );
    // finalizeRequest at normal priority sits inside the retry middleware: it sees every attempt.
    client.middlewareStack.add(
      (next) => async (args) => {
        attempts++;
        if (attempts % 4 === 0 && throttled < 12) {
          throttled++;
          throw throttle();
        }
        return next(args);
      },
      { step: "finalizeRequest", name: "injectThrottling" },
    );
    const stores = createDynamoStores(client, names);
    const id = uuid(1, "f0000000");
    const { run, targets } = runWithTargets(id, { phaseSizes: [3, 3], maxConcurrent: 2 });
    await stores.runs.createRun(run, targets);
    const submitter = new FakeSubmitter({
      runs: stores.runs,
      clock: Date.now,
      behaviour: () => ({ kind: "complete", afterMs: 2 }),
    });
    const logger = capturingLogger();
    const dispatcher = createDispatcher({ runs: stores.runs, submitter, clock: systemClock, logger });

    let final: Run | undefined;
    for (let i = 0; i < 40; i++) {
      const tick = await dispatcher.tick();
      expect(tick.failed).toBe(0);
      await waitMs(10);
      await submitter.settle();
      final = await stores.runs.getRun(id);
      if (final?.status === "COMPLETED") break;
    }
    expect(throttled).toBe(12);
    // Every throttled attempt was followed by another attempt of the same call, inside the SDK.
    expect(attempts).toBeGreaterThanOrEqual(calls + throttled);
    expect(logger.lines.filter((l) => !l.startsWith("info"))).toEqual([]);
    expect(final).toMatchObject({ status: "COMPLETED", inFlight: 0 });
    expect(final?.counters).toEqual([
      { completed: 3, failed: 0, terminated: 0, skipped: 0 },
      { completed: 3, failed: 0, terminated: 0, skipped: 0 },
    ]);
    expect(submitter.duplicateStarts()).toEqual([]);
    expect(submitter.starts.size).toBe(6);
    client.destroy();
  }, 120_000);

  it("throttling that outlasts the retries fails the pass (logged), leaves nothing half-done, and the next pass completes", async () => {
    const client = new DynamoDBClient(
      awsClientConfig({
        endpoint: testEndpoint(),
        region: TEST_REGION,
        credentials: TEST_CREDENTIALS,
      }),
    );
    const stores = createDynamoStores(client, names);
    const id = uuid(2, "f0000000");
    const { run, targets } = runWithTargets(id, { phaseSizes: [2], maxConcurrent: 2 });
    await stores.runs.createRun(run, targets);

    const realSend = stores.doc.send.bind(stores.doc) as (command: unknown) => Promise<unknown>;
    const mock = mockClient(stores.doc);
    const passThrough = <I>(Command: new (input: I) => unknown) =>
      mock.on(Command as never).callsFake((input: I) => realSend(new Command(input)));
    for (const Command of [GetCommand, PutCommand, QueryCommand, UpdateCommand, BatchGetCommand])
      passThrough(Command as never);
    // The claim transaction is throttled twice (as if the SDK had given up twice), then goes through.
    mock
      .on(TransactWriteCommand)
      .rejectsOnce(throttle())
      .rejectsOnce(throttle())
      .callsFake((input) => realSend(new TransactWriteCommand(input)));

    const submitter = new FakeSubmitter({
      runs: stores.runs,
      clock: Date.now,
      behaviour: () => ({ kind: "complete", afterMs: 2 }),
    });
    const logger = capturingLogger();
    const dispatcher = createDispatcher({ runs: stores.runs, submitter, clock: systemClock, logger });

    const first = await dispatcher.tick();
    expect(first.failed).toBe(1);
    expect(logger.lines).toContain("error dispatch pass failed");
    // Nothing half-done: no target moved, no slot taken, no task started.
    expect(await stores.runs.getRun(id)).toMatchObject({ inFlight: 0 });
    expect(submitter.starts.size).toBe(0);

    for (let i = 0; i < 20; i++) {
      await dispatcher.tick();
      await waitMs(10);
      await submitter.settle();
      if ((await stores.runs.getRun(id))?.status === "COMPLETED") break;
    }
    const final = await stores.runs.getRun(id);
    expect(final).toMatchObject({ status: "COMPLETED", inFlight: 0 });
    expect(final?.counters[0]).toEqual({ completed: 2, failed: 0, terminated: 0, skipped: 0 });
    expect(submitter.duplicateStarts()).toEqual([]);
    mock.restore();
    client.destroy();
  });
});
