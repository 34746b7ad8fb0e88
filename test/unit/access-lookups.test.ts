/**
 * What authorization reads before deciding a call on a run or a task (src/app/access.ts): every
 * rack of the run (all phases) placed by datacenter, row, NVLink domain and name, the run's reason,
 * the task's rack; a rack gone from the inventory placed by its id alone; unknown run or task:
 * undefined.
 */
import { describe, expect, it } from "vitest";
import { createAccessLookups, rackPlace } from "../../src/app/access.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import { runningTask } from "../support/domain-fixtures.js";
import { runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { memoryTaskStore } from "../support/memory-child-task.js";
import { memoryInventory } from "../support/memory-inventory.js";
import { MemoryRunStore } from "../support/memory-stores.js";
import { runInState } from "../support/run-states.js";

const RUN = uuid(1, "c0a70000");

describe("access lookups", () => {
  it("a run's racks across every phase, placed; its reason; a rack not in inventory by its id", async () => {
    const runs = new MemoryRunStore();
    const { run, targets } = runInState(RUN, {
      phases: [["COMPLETED"], ["PENDING", "PENDING"]],
      status: "PAUSED",
      reason: "SAFETY_GATE",
    });
    await runs.createRun(run, targets);
    const [first, second, third] = targets.map((t) => t.rackId);
    const racks: InventoryRack[] = [
      {
        id: first!,
        name: "r-a",
        location: { datacenter: "dc1", row: "A", position: 1 },
        nvlDomain: { id: "n1", name: "nvl-1" },
        components: [],
      },
      { id: second!, name: "r-b", components: [] },
    ];
    const tasks = memoryTaskStore();
    const lookups = createAccessLookups({
      runs,
      tasks,
      inventory: memoryInventory(racks),
      clock: { now: () => 0 },
    });
    expect(await lookups.runRacks(RUN)).toEqual({
      reason: "SAFETY_GATE",
      racks: [
        { name: "r-a", datacenter: "dc1", row: "A", nvlDomain: "nvl-1" },
        { name: "r-b" },
        { name: third },
      ],
    });
    expect(await lookups.runRacks(uuid(2, "c0a70000"))).toBeUndefined();
  });

  it("a run of more targets than one page: every rack, page by page (a scope check must see them all)", async () => {
    const runs = new MemoryRunStore();
    const { run, targets } = runWithTargets(RUN, { phaseSizes: [1200, 1300] });
    await runs.createRun(run, targets);
    const lookups = createAccessLookups({
      runs,
      tasks: memoryTaskStore(),
      inventory: memoryInventory([]),
      clock: { now: () => 0 },
    });
    const found = await lookups.runRacks(RUN);
    expect(found?.racks).toHaveLength(2500);
    expect(found?.racks.map((r) => r.name)).toEqual([...new Set(targets.map((t) => t.rackId))]);
  });

  it("a task's rack; an unknown task: undefined", async () => {
    const tasks = memoryTaskStore();
    const rack: InventoryRack = { id: "rack-1", name: "r-1", components: [] };
    await tasks.createTask(runningTask({ id: "t-1", rackId: "rack-1" }));
    const lookups = createAccessLookups({
      runs: new MemoryRunStore(),
      tasks,
      inventory: memoryInventory([rack]),
      clock: { now: () => 0 },
    });
    expect(await lookups.taskRacks("t-1")).toEqual([rackPlace(rack)]);
    expect(await lookups.taskRacks("t-2")).toBeUndefined();
  });
});
