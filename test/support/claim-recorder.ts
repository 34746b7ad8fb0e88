/**
 * Every claim of a target, read from a stack's targets table stream: its run, target, phase and the
 * time the claim was judged by (the `updatedAt` it wrote). A claim and a re-claim of an expired
 * lease both write CLAIMED with updatedAt = the claim's time, so both are recorded. It reads from
 * LATEST: a stack restarted on the same tables records into the same list after `recordClaims`
 * is called again with it.
 *
 *   const claims: Claim[] = [];
 *   let recorder = await recordClaims(s, claims);
 *   ...
 *   await recorder.stop();
 */
import type { DynamoDBRecord } from "aws-lambda";
import { startStreamPoller } from "../../local/stream-poller.js";
import { testClient } from "./moto.js";
import type { TestStack } from "./stack.js";

export interface Claim {
  runId: string;
  targetId: string;
  phaseIndex: number;
  at: number;
}

export interface ClaimRecorder {
  /** Stops reading the stream and closes its client; the claims stay in the list. */
  stop(): Promise<void>;
}

/** Appends every claim on `stack`'s targets table from now on to `claims`. */
export async function recordClaims(stack: TestStack, claims: Claim[]): Promise<ClaimRecorder> {
  const client = testClient(stack.local.awsEndpoint);
  const poller = await startStreamPoller({
    client,
    tableName: stack.local.tables.targets,
    startingPosition: "LATEST",
    async handler(event) {
      for (const record of event.Records as DynamoDBRecord[]) {
        const image = record.dynamodb?.NewImage;
        const old = record.dynamodb?.OldImage;
        if (
          image?.status?.S === "CLAIMED" &&
          (old?.status?.S !== "CLAIMED" || old?.updatedAt?.N !== image.updatedAt?.N)
        ) {
          claims.push({
            runId: image.runId?.S ?? "",
            targetId: image.targetId?.S ?? "",
            phaseIndex: Number(image.phaseIndex?.N),
            at: Number(image.updatedAt?.N),
          });
        }
      }
      return undefined;
    },
  });
  return {
    async stop() {
      await poller.stop();
      client.destroy();
    },
  };
}
