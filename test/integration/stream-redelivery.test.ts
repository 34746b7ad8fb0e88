/**
 * The stream evaluator fed by the local stream poller from moto's real stream records, with
 * redelivery as the Lambda event source mapping can produce it: every batch delivered twice, split
 * into single records, reordered, and the previous batch replayed. The run is driven ONLY by the
 * stream (its INSERT starts it; each finished target wakes it). Then the whole history is replayed
 * again in random order and random splits (seeded: a failure prints the seed to replay): counters, terminal states and the run item are exact and
 * unchanged, and no target got a second child task.
 */

import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type StreamPoller, startStreamPoller } from "../../local/stream-poller.js";
import type { DynamoStores, TableNames } from "../../src/adapters/dynamodb/index.js";
import { streamBatchHandler } from "../../src/adapters/dynamodb/stream-records.js";
import { systemClock } from "../../src/adapters/system-clock.js";
import { createDispatcher } from "../../src/app/dispatcher.js";
import { createStreamEvaluator } from "../../src/app/stream-evaluator.js";
import type { Run } from "../../src/domain/model.js";
import { runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { FakeSubmitter } from "../support/fake-submitter.js";
import { freshStores } from "../support/moto.js";
import { until } from "../support/poll.js";
import { testRandom } from "../support/seeded-random.js";
import { testEndpoint } from "../support/test-endpoint.js";

let client: DynamoDBClient;
let names: TableNames;
let drop: () => Promise<void>;
let stores: DynamoStores;

beforeAll(async () => {
  ({ client, names, stores, drop } = await freshStores(testEndpoint(), "stream"));
});
afterAll(() => drop());

describe("stream evaluator: redelivery", () => {
  it("duplicated, split, reordered and replayed batches leave counters and terminal states exact", async () => {
    const random = testRandom();
    const id = uuid(1, "e0000000");
    const { run, targets } = runWithTargets(id, { phaseSizes: [3, 3], maxConcurrent: 2 });
    run.config.autoAdvance = true;
    const failing = new Set([targets[1]!.rackId, targets[4]!.rackId]);
    const submitter = new FakeSubmitter({
      runs: stores.runs,
      clock: Date.now,
      behaviour: (rackId) =>
        failing.has(rackId)
          ? { kind: "fail", afterMs: 5, message: "flash failed" }
          : { kind: "complete", afterMs: 5 },
    });
    const dispatcher = createDispatcher({ runs: stores.runs, submitter, clock: systemClock });
    let processed = 0;
    const handle = streamBatchHandler(
      createStreamEvaluator({
        process: async (runId) => {
          processed++;
          return dispatcher.dispatchRun(runId);
        },
      }),
    );

    const history: DynamoDBRecord[] = [];
    let previous: DynamoDBRecord[] = [];
    const mangle = async (event: DynamoDBStreamEvent) => {
      history.push(...event.Records);
      const records = event.Records;
      await handle({ Records: records }); // as delivered
      await handle({ Records: [...records].reverse() }); // duplicated, reordered
      for (const r of records) await handle({ Records: [r] }); // split
      if (previous.length > 0) await handle({ Records: previous }); // the batch before, replayed
      previous = records;
      return { batchItemFailures: [] };
    };
    let poller: StreamPoller | undefined;
    try {
      poller = await startStreamPoller({
        client,
        tableNames: [names.runs, names.targets],
        handler: mangle,
        startingPosition: "TRIM_HORIZON",
        intervalMs: 50,
      });
      await stores.runs.createRun(run, targets);
      const finished = await until(
        "the run to finish through stream wake-ups alone",
        async () => {
          const r = await stores.runs.getRun(id);
          return r !== undefined && !["PENDING", "RUNNING"].includes(r.status) ? r : undefined;
        },
        45_000,
      );
      expect(finished).toMatchObject({
        status: "COMPLETED_WITH_FAILURES",
        statusMessage: "operation run completed with failed targets",
        inFlight: 0,
        currentPhaseIndex: 1,
      });
      expect(finished.counters).toEqual([
        { completed: 2, failed: 1, terminated: 0, skipped: 0 },
        { completed: 2, failed: 1, terminated: 0, skipped: 0 },
      ]);
    } finally {
      await poller?.stop();
    }
    await submitter.settle();
    expect(processed).toBeGreaterThan(0);
    expect(
      history.some(
        (r) =>
          r.eventSourceARN?.includes("/stream/") &&
          typeof r.dynamodb?.ApproximateCreationDateTime === "number",
      ),
    ).toBe(true);

    const before = (await stores.runs.getRun(id)) as Run;
    const targetsBefore = (
      await stores.runs.listTargets(id, { phaseFrom: 0, phaseTo: 1, page: { offset: 0, limit: 100 } })
    )?.targets;
    // The whole history again, shuffled, in random splits, twice.
    for (let round = 0; round < 2; round++) {
      const all = random.shuffle(history);
      while (all.length > 0) {
        const batch = all.splice(0, 1 + random.int(7));
        const response = await handle({ Records: batch });
        expect(response.batchItemFailures).toEqual([]);
      }
    }
    expect(await stores.runs.getRun(id)).toEqual(before);
    expect(
      (await stores.runs.listTargets(id, { phaseFrom: 0, phaseTo: 1, page: { offset: 0, limit: 100 } }))
        ?.targets,
    ).toEqual(targetsBefore);
    expect(submitter.duplicateStarts()).toEqual([]);
    expect(submitter.starts.size).toBe(6);
  });
});
