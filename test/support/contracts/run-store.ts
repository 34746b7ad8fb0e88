/**
 * The RunStore contract (src/app/ports.ts) as one suite, run against every implementation: the
 * in-memory fake (test/unit/memory-stores.test.ts) and DynamoDB on moto
 * (test/integration/store-contracts.test.ts). A fake that passes it behaves, for the use cases,
 * like the real store: same outcomes for the same conditional writes, same counters, same order.
 *
 * The suite makes its own runs with distinct ids and never assumes an empty store: listings are
 * narrowed to the runs of the case at hand (by name for listRuns, by id for the active index).
 *
 * This file is the suite's table of contents, in the order the parts run; each part is a file
 * of its own (run-store-*.ts), and what they share is in run-store-case.ts.
 */
import { describe } from "vitest";
import type { RunStore } from "../../../src/app/ports.js";
import { runStoreCase } from "./run-store-case.js";
import { describeClaimTarget, describeClaimTargets, describeClaimWindow } from "./run-store-claims.js";
import {
  describeCreateAndReads,
  describeCreateWithOrigin,
  describeCreateWithRequestId,
} from "./run-store-create.js";
import { describeListRuns, describeListTargets, describeQueuedTargets } from "./run-store-lists.js";
import { describeSaveAndActiveRuns } from "./run-store-save.js";
import { describePriorVersions, describeTargetTransitions } from "./run-store-transitions.js";

export interface RunStoreSubject {
  runs: RunStore;
}

export function describeRunStoreContract(name: string, setup: () => Promise<RunStoreSubject>): void {
  describe(`RunStore contract: ${name}`, () => {
    const c = runStoreCase(setup);
    describeCreateWithRequestId(c);
    describeCreateAndReads(c);
    describeListRuns(c);
    describeListTargets(c);
    describeSaveAndActiveRuns(c);
    describeQueuedTargets(c);
    describeClaimWindow(c);
    describeClaimTarget(c);
    describeClaimTargets(c);
    describeTargetTransitions(c);
    describeCreateWithOrigin(c);
    describePriorVersions(c);
  });
}
