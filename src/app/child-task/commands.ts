/**
 * Sending a batch of BMC commands (a wave's step, the preflight's queries) through the task's
 * command set (src/domain/command-sets.ts): the batch's entries in ONE write, then each command not
 * answered yet published. A retried step publishes its unanswered commands again under the same
 * request ids, which the BMC deduplicates (docs/bmc-protocol.md, Idempotency: a flash running or
 * done is not started again), so a step that published everything writes nothing more. Only a
 * step some of whose publishes failed marks the ones that went out (ONE more write) before it
 * fails, so its retry (BmcPublishError's, while IoT throttles) sends only the rest. Marking the
 * published commands on every step would cost a write on every wave's path for a retry's sake.
 * A closed set (its task was ended from outside its execution) takes nothing: TaskEnded, and
 * nothing is published.
 *
 * A step sent by its own wait (AwaitWave's Lambda, `wait` below) writes the wait's task token in
 * that same write: one write a step for its commands and its wake-up. Nothing is published before
 * the token is stored, so no report can come before it; a retried wait (a new token) keeps the
 * entries, replaces the token, republishes only what is unanswered and unpublished, and wakes the
 * execution itself if they were all answered already.
 */
import {
  type CommandAddress,
  type CommandFamily,
  type CommandSet,
  commandRequestId,
  entryKey,
  newEntry,
  type WaitToStore,
  wakeDue,
  wakeOutput,
} from "../../domain/command-sets.js";
import { StepError } from "../../domain/step-errors.js";
import type { StepDeps } from "./deps.js";

export interface CommandToSend {
  componentId: string;
  address: CommandAddress;
}

/**
 * What a wait's step throws when its task token may not be stored or its own wake-up failed
 * (the commands, if any, are out): AwaitWave falls back to WaitForWave's poll, whose check tells
 * sent from never sent. A store outage is StoreUnavailableError, retried first.
 */
export class WaitNotStoredError extends Error {
  override name = "WaitNotStored";
  constructor(cause: unknown) {
    super(`the wait could not be stored or woken: ${(cause as Error)?.message ?? String(cause)}`);
  }
}

export const waitStep = async <T>(run: () => Promise<T>): Promise<T> => {
  try {
    return await run();
  } catch (error) {
    if ((error as Error | null)?.name === "StoreUnavailableError") throw error;
    throw new WaitNotStoredError(error);
  }
};

/**
 * Opens the batch's entries (`window` for those not there yet) and publishes those not marked
 * published nor answered with `publish(componentId, requestId)`. Returns the set as stored.
 * Throws TaskEnded, having published nothing, when the set is closed. The batch's commands are
 * in one record: their addresses' part of the update set (or none).
 *
 * With `wait` (AwaitWave's Lambda sending its step): the wait's token is stored on the record in
 * the same write, for every command of the batch; once they are published, a record whose
 * entries were all answered already (a retried wait) wakes the execution here.
 */
export async function sendCommands(
  deps: Pick<StepDeps, "commands" | "clock"> & Partial<Pick<StepDeps, "waveWaker">>,
  taskId: string,
  family: CommandFamily,
  commands: readonly CommandToSend[],
  window: { sentAt: number; deadline: number },
  publish: (componentId: string, requestId: string) => Promise<void>,
  wait?: Omit<WaitToStore, "keys">,
  rackId?: string,
): Promise<CommandSet> {
  const part = commands[0]?.address.part;
  const keys = commands.map((c) => entryKey(c.address, c.componentId));
  // Without a waker (a deployment with no callbacks) no token is worth storing.
  const wake = wait === undefined || deps.waveWaker === undefined ? undefined : { ...wait, keys };
  const set = await deps.commands.open(
    taskId,
    family,
    Object.fromEntries(commands.map((c) => newEntry(c.address, c.componentId, window))),
    part,
    wake,
    rackId,
  );
  if (set.closedAt !== undefined) throw new StepError("TaskEnded", `task ${taskId} already ended`);
  const due = commands.filter((c) => {
    const entry = set.entries[entryKey(c.address, c.componentId)];
    return (
      entry !== undefined &&
      entry.publishedAt === undefined &&
      entry.result === undefined &&
      entry.status === undefined
    );
  });
  const sent = await Promise.allSettled(
    due.map((c) => publish(c.componentId, commandRequestId(c.address, c.componentId))),
  );
  const failed = sent.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed === undefined) {
    const waker = deps.waveWaker;
    if (wake !== undefined && waker !== undefined && wakeDue(set) !== undefined)
      await waitStep(() => waker.wake(wake.token, wakeOutput(set)));
    return set;
  }
  const published = due.filter((_, i) => sent[i]?.status === "fulfilled");
  await deps.commands.markPublished(
    taskId,
    family,
    published.map((c) => entryKey(c.address, c.componentId)),
    deps.clock(),
    part,
  );
  throw failed.reason;
}

/**
 * A callback state's step (AwaitWave, AwaitPreflight: a `.waitForTaskToken` Task): stores the
 * execution's task token on the record with the entries it waits for (one write, which reads back
 * what is stored), so the receiver wakes the execution when it stores the last of them
 * (receiving.ts). Answers that came before this write (a fast BMC) are seen here, and the step
 * wakes the execution itself. No record (nothing was sent) and a closed one (its task ended from
 * outside: the execution is being stopped) wake nothing early; nor does anything without a waker:
 * the state's timeout runs its check, as the poll's Wait did. A token it could not store (but a
 * store outage's StoreUnavailableError) or a wake-up that failed throws WaitNotStored: the poll.
 */
export async function awaitEntries(
  deps: Pick<StepDeps, "commands" | "waveWaker">,
  taskId: string,
  family: CommandFamily,
  wake: WaitToStore,
  part?: number,
): Promise<{ woken: boolean }> {
  const waker = deps.waveWaker;
  if (waker === undefined || wake.keys.length === 0) return { woken: false };
  const set = await waitStep(() => deps.commands.awaitAnswers(taskId, family, wake, part));
  if (set === undefined || wakeDue(set) === undefined) return { woken: false };
  await waitStep(() => waker.wake(wake.token, wakeOutput(set)));
  return { woken: true };
}
