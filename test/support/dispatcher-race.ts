/**
 * The race suites' harness: several dispatchers passing over one run at once against moto, every
 * storage call delayed at random, and an observer that snapshots the run while they race.
 */
import { QueryCommand } from "@aws-sdk/lib-dynamodb";
import type { DynamoStores, TableNames } from "../../src/adapters/dynamodb/index.js";
import { systemClock } from "../../src/adapters/system-clock.js";
import { createDispatcher } from "../../src/app/dispatcher.js";
import type { Run } from "../../src/domain/model.js";
import { type FakeSubmitter, waitMs, withRandomDelays } from "./fake-submitter.js";
import type { SeededRandom } from "./seeded-random.js";

/**
 * `dispatchers` dispatchers pass over run `runId` at once, each with its storage calls delayed at
 * random (0..10 ms before and after, from `random`) and a random pause (0..15 ms) between its
 * passes, until a pass finds the run finished or inactive, or `budgetMs` is spent; then the
 * submitter settles. Meanwhile, every 5 ms, `observe` gets the run's targets in flight (CLAIMED or
 * SUBMITTED, one consistent query of the run's partition: a snapshot on serialized moto) and the
 * run as read right after. Resolves with the number of snapshots observed.
 */
export async function raceDispatchers(options: {
  stores: DynamoStores;
  names: TableNames;
  submitter: FakeSubmitter;
  random: SeededRandom;
  runId: string;
  dispatchers: number;
  budgetMs: number;
  observe: (inFlight: Record<string, unknown>[], run: Run | undefined) => void;
}): Promise<{ observations: number }> {
  const { stores, submitter, random, runId } = options;
  let observations = 0;
  let done = false;
  const observer = (async () => {
    while (!done) {
      const out = await stores.doc.send(
        new QueryCommand({
          TableName: options.names.targets,
          KeyConditionExpression: "runId = :r",
          ExpressionAttributeValues: { ":r": runId },
          ConsistentRead: true,
        }),
      );
      const inFlight = (out.Items ?? []).filter((i) => i.status === "CLAIMED" || i.status === "SUBMITTED");
      options.observe(inFlight, await stores.runs.getRun(runId));
      observations++;
      await waitMs(5);
    }
  })();

  const deadline = Date.now() + options.budgetMs;
  const workers = Array.from({ length: options.dispatchers }, async () => {
    const dispatcher = createDispatcher({
      runs: withRandomDelays(stores.runs, 10, random),
      submitter,
      clock: systemClock,
    });
    for (;;) {
      const result = await dispatcher.dispatchRun(runId);
      if (result.decision === "finished" || result.decision === "inactive" || Date.now() > deadline) return;
      await waitMs(random.int(15));
    }
  });
  await Promise.all(workers);
  await submitter.settle();
  done = true;
  await observer;
  return { observations };
}
