/**
 * Sending a batch of commands (src/app/child-task/commands.ts), on the in-memory command sets: the
 * entries in one write; every command not answered published, again by a retried step under the
 * same request ids (the BMC deduplicates them); the published ones marked only when some publish
 * failed, so that retry sends only the rest; a closed set publishes nothing.
 */
import { describe, expect, it } from "vitest";
import { sendCommands } from "../../src/app/child-task/commands.js";
import { entryKey, updateAddress } from "../../src/domain/command-sets.js";
import { StepError } from "../../src/domain/step-errors.js";
import { memoryCommandSetStore } from "../support/memory-child-task.js";

const TASK = "t-1";
const address = updateAddress(TASK, 0, 2);
const batch = ["c1", "c2", "c3"].map((componentId) => ({ componentId, address }));
const window = { sentAt: 1_000, deadline: 61_000 };

function sender(failing: ReadonlySet<string> = new Set()) {
  const commands = memoryCommandSetStore();
  const published: [string, string][] = [];
  const send = () =>
    sendCommands(
      { commands, clock: () => 1_500 },
      TASK,
      "u",
      batch,
      window,
      async (componentId, requestId) => {
        if (failing.has(componentId)) throw new Error(`publish to ${componentId} refused`);
        published.push([componentId, requestId]);
      },
    );
  return { commands, published, send };
}

describe("sendCommands", () => {
  it("everything published: one write, nothing marked; a retried step sends the unanswered again under the same request ids", async () => {
    const { commands, published, send } = sender();
    const set = await send();
    expect(Object.keys(set.entries)).toHaveLength(3);
    expect(commands.writes).toBe(1);
    const first = [...published];
    expect(first.map(([c]) => c)).toEqual(["c1", "c2", "c3"]);
    expect((await commands.get(TASK, "u", 2))?.entries[entryKey(address, "c1")]?.publishedAt).toBeUndefined();

    // c2 answered meanwhile: the retry sends c1 and c3 again, as they were, and c2 not at all.
    await commands.record(
      TASK,
      "u",
      { [entryKey(address, "c2")]: { result: { value: { ok: true, version: "2" }, at: 1_200 } } },
      { part: 2 },
    );
    published.length = 0;
    await send();
    expect(published).toEqual([first[0], first[2]]);
    // The retry's open keeps the first window.
    expect((await commands.get(TASK, "u", 2))?.entries[entryKey(address, "c1")]).toMatchObject(window);
  });

  it("a publish failed: the others are marked before the step fails, and its retry sends only the rest", async () => {
    const failing = new Set(["c2"]);
    const { commands, published, send } = sender(failing);
    await expect(send()).rejects.toThrow("publish to c2 refused");
    expect(commands.writes).toBe(2); // the entries, then the two published marked
    const stored = await commands.get(TASK, "u", 2);
    expect(stored?.entries[entryKey(address, "c1")]?.publishedAt).toBe(1_500);
    expect(stored?.entries[entryKey(address, "c2")]?.publishedAt).toBeUndefined();
    failing.clear();
    published.length = 0;
    await send();
    expect(published.map(([c]) => c)).toEqual(["c2"]);
  });

  it("a closed set: TaskEnded, nothing published", async () => {
    const { commands, published, send } = sender();
    await commands.close(TASK, 900, [2]);
    await expect(send()).rejects.toEqual(new StepError("TaskEnded", `task ${TASK} already ended`));
    expect(published).toEqual([]);
  });
});
