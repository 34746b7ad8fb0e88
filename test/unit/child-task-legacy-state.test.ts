/**
 * An execution that started before operation rules keeps its definition and its state across a
 * deploy: the steps read that state as the default rule's, and pass today's through unchanged.
 */
import { describe, expect, it } from "vitest";
import {
  currentCursor,
  currentGroups,
  currentWave,
  DEFAULT_CHILD_TASK_SETTINGS,
  type UpgradeGroup,
  type WaveCursor,
  type WaveState,
} from "../../src/app/child-task/settings.js";
import { nextCursor } from "../../src/app/child-task/waves.js";

const settings = { ...DEFAULT_CHILD_TASK_SETTINGS, maxParallel: 2 };

describe("child-task state from before operation rules", () => {
  it("old groups become one update step each, in waves of the deployment's maxParallel", () => {
    const old = [{ type: "NVSWITCH", componentIds: ["n1", "n2", "n3"] }] as unknown as UpgradeGroup[];
    const groups = currentGroups(old, settings);
    expect(groups).toEqual([
      {
        stage: 0,
        name: "nvswitch",
        componentIds: ["n1", "n2", "n3"],
        maxParallel: 2,
        steps: [{ action: "UPDATE_FIRMWARE", timeoutSeconds: 0, sleepSeconds: 0 }],
      },
    ]);
    expect(currentGroups(groups, settings)).toEqual(groups);
    // …and an old cursor walks them as the old loop did: wave 0, wave 1, then done.
    const cursor = currentCursor({ group: 0, wave: 0, more: true } as WaveCursor);
    expect(cursor).toEqual({
      group: 0,
      wave: 0,
      more: true,
      step: 0,
      attempt: 0,
      retry: false,
      waitSeconds: 0,
    });
    expect(nextCursor(groups, cursor)).toMatchObject({
      group: 0,
      wave: 1,
      step: 0,
      more: true,
      retry: false,
    });
    expect(nextCursor(groups, { ...cursor, wave: 1 })).toMatchObject({ group: 1, wave: 0, more: false });
  });

  it("an old wave is an update wave of one type and one version", () => {
    const old = {
      type: "COMPUTE",
      componentIds: ["a", "b"],
      targetVersion: "2.0",
      done: false,
      deadline: 9,
      polls: 1,
      waitSeconds: 5,
    } as unknown as WaveState;
    expect(currentWave(old, settings)).toMatchObject({
      action: "UPDATE_FIRMWARE",
      attempt: 0,
      stage: 0,
      step: 0,
      timeoutSeconds: settings.updateTimeoutSeconds,
      types: { a: "COMPUTE", b: "COMPUTE" },
      versions: { a: "2.0", b: "2.0" },
    });
    // A wave of this branch's first form (versions, no action) keeps its versions.
    const versioned = { ...old, versions: { a: "2.1", b: "2.2" } } as unknown as WaveState;
    expect(currentWave(versioned, settings).versions).toEqual({ a: "2.1", b: "2.2" });
    const current = currentWave(old, settings);
    expect(currentWave(current, settings)).toBe(current);
  });
});
