/**
 * Claiming under the run's concurrency cap: ready targets of the phase in phase-then-sequence order,
 * each submitted (finish.ts) as soon as its claim commits. Targets that need a new slot are claimed
 * up to the free slots as read; expired CLAIMED targets already hold theirs and are re-claimed
 * whatever the count. The batch is one claimTargets transaction; on a lost race or full slots the
 * claims are made one by one, in order (they race other passes for the same slots and order
 * matters).
 */

import { chooseClaims, domainGate } from "../../domain/failure-domains.js";
import type { Run, Target } from "../../domain/model.js";
import { claimStatusMessage } from "../../domain/run-messages.js";
import { isReady, readyInOrder } from "../../domain/target-machine.js";
import { errorText } from "../observability.js";
import type { ClaimCounts, DispatchContext, PassWrites } from "./deps.js";
import { setStatusMessage, submitOne } from "./finish.js";

/** Targets per claimTargets call: one transaction holds at most 100 items, the run item included. */
const MAX_BATCH_CLAIM = 98;

export async function claimAndSubmit(
  ctx: DispatchContext,
  run: Run,
  claim: { phaseIndex: number; slots: number; until?: number },
  blockedAtStart: Target[],
  readAlready: { now: number; targets: Target[]; held: Target[] } | undefined,
  writes: PassWrites,
): Promise<ClaimCounts & { heldAfter: Target[] }> {
  const { runs, clock, logger, metrics, leaseMs, submitParallelism } = ctx;
  const { phaseIndex } = claim;
  const now = readAlready?.now ?? clock.now();
  const queue =
    readAlready === undefined ? await runs.listQueuedTargets(run.id, phaseIndex, claim.slots) : undefined;
  const ready = readAlready?.targets ?? readyInOrder(queue ?? { held: [], pending: [] }, now);
  const counts: ClaimCounts = { submitted: 0, blocked: 0, failed: 0 };
  // The phase's held targets once the pass is done (for when the run next needs one): those read,
  // less the ones this pass claimed, plus the ones it left BLOCKED or CLAIMED.
  const claimedIds = new Set<string>();
  const heldNow: Target[] = [];
  // PENDING as read, so never claimed before: no task can exist under their keys yet.
  const neverClaimed = new Set(ready.filter((t) => t.status === "PENDING").map((t) => t.id));
  // Each claimed target is submitted at once (at most `submitParallelism` at a time) while the
  // loop goes on claiming, so the first child task starts after one claim, not after all of them.
  const submissions: Promise<void>[] = [];
  let active = 0;
  const waiting: (() => void)[] = [];
  const submitSoon = (target: Target) => {
    submissions.push(
      (async () => {
        while (active >= submitParallelism) await new Promise<void>((resolve) => waiting.push(resolve));
        active++;
        try {
          const submitted = await submitOne(ctx, run, target, neverClaimed.has(target.id), writes);
          counts[submitted.kind] += 1;
          if (submitted.held !== undefined) heldNow.push(submitted.held);
        } catch (error) {
          heldNow.push(target);
          // The target stays CLAIMED; when its lease runs out a later pass re-claims it and
          // submits again under the same idempotency key.
          logger.warn("target submission failed; retried after the claim lease", {
            runId: run.id,
            targetId: target.id,
            error: errorText(error),
          });
        } finally {
          active--;
          waiting.shift()?.();
        }
      })(),
    );
  };

  // At most the free slots as read: a slot freed since then wakes another pass through the stream,
  // which will read it. Not trying past the count keeps the pass short and spares the store a
  // transaction that can only fail. Expired claims keep their slot and are always re-claimed.
  //
  // The batch is claimed in ONE transaction (claimTargets: 10 targets + the run = 11 items), so a
  // refill costs one write, not one per slot. It is all or nothing: if another pass moved one of
  // its targets ('lost-race') or took some of the slots read ('slots-full'), the pass falls back
  // to claiming one by one over the same ready list, exactly as before batching, and so claims
  // what is still free.
  //
  // With a failure-domain spread, a target whose domain is full (as read, plus this pass's own
  // claims) is skipped and the next one taken (src/domain/failure-domains.ts); the claim's
  // conditional write holds the cap against racing passes.
  const batch = chooseClaims(run, ready, claim.slots, MAX_BATCH_CLAIM);
  const slotsForBatch = claim.slots - batch.filter((t) => t.status !== "CLAIMED").length;
  try {
    const batched =
      batch.length === 0 ? undefined : await runs.claimTargets(batch, leaseMs, clock.now(), claim.until);
    if (batched?.outcome === "claimed") {
      writes.marks += 1;
      for (const target of batched.claimed) {
        claimedIds.add(target.id);
        submitSoon(target);
      }
      if (batch.length === MAX_BATCH_CLAIM) {
        // A full batch may have left ready targets behind (phases hold at most 100): one by one.
        const inBatch = new Set(batch.map((t) => t.id));
        await claimOneByOne(
          ready.filter((t) => !inBatch.has(t.id)),
          slotsForBatch,
        );
      }
    } else if (
      batched !== undefined &&
      batched.outcome !== "run-not-active" &&
      batched.outcome !== "window-closed"
    ) {
      await claimOneByOne(ready, claim.slots);
    }
  } finally {
    await Promise.all(submissions);
  }

  async function claimOneByOne(targets: Target[], slots: number): Promise<void> {
    let slotsLeft = slots;
    const domains = domainGate(run);
    for (const target of targets) {
      const needsSlot = target.status !== "CLAIMED";
      if (needsSlot && (slotsLeft <= 0 || !domains.hasRoom(target))) continue;
      const at = clock.now();
      const outcome = await runs.claimTarget(target, leaseMs, at, claim.until);
      if (outcome === "claimed") {
        writes.marks += 1;
        claimedIds.add(target.id);
        if (needsSlot) {
          slotsLeft--;
          domains.take(target);
        }
        submitSoon({ ...target, status: "CLAIMED", leaseExpiresAt: at + leaseMs, updatedAt: at });
      } else if (outcome === "domain-full") {
        domains.markFull(target);
      } else if (outcome === "slots-full") {
        slotsLeft = 0;
      } else if (outcome === "run-not-active" || outcome === "window-closed") {
        break;
      }
      // 'lost-race': another pass took or moved it; nothing to do.
    }
  }
  metrics.add("TargetsDispatched", counts.submitted);
  metrics.add("RackConflicts", counts.blocked);

  const stillWaiting = blockedAtStart.filter((t) => !isReady(t, now)).length + counts.blocked;
  const message = claimStatusMessage(counts.submitted, stillWaiting);
  if (message !== "") await setStatusMessage(ctx, run, message, writes);
  const held = readAlready?.held ?? queue?.held ?? [];
  return { ...counts, heldAfter: [...held.filter((t) => !claimedIds.has(t.id)), ...heldNow] };
}
