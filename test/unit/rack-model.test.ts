/**
 * The rollout benchmark's model of a rack (bench/lib/rack-model.ts), which bench:fleet spreads over
 * every simulated child task: on a GB200-shaped demo rack it gives what bench:rollout counts on the
 * local stack when every wait is woken (docs/benchmarks.md), for both paths of the definition, and
 * each extra check of a flash step adds its three states and two invocations.
 */
import { describe, expect, it } from "vitest";
import { modelRack, ROLLOUT_MAX_PARALLEL } from "../../bench/lib/rack-model.js";
import { UPDATE_ONLY_RULE } from "../../bench/lib/rollout-rules.js";
import { generateDemoFleet } from "../../local/demo-fleet.js";
import { DEFAULT_RULE } from "../../src/domain/operation-rules.js";

const rack = generateDemoFleet({ racks: 1 })[0];
const components = rack?.components ?? [];

describe("the rack model", () => {
  it("a 39-BMC rack under the default rule: 18 steps, 60 transitions, 39 task-steps invocations, 507 IoT messages when every wait is woken", () => {
    expect(components).toHaveLength(39);
    const model = modelRack(DEFAULT_RULE, components, {
      maxParallel: ROLLOUT_MAX_PARALLEL,
      checksPerFlashStep: 1,
      path: "after",
    });
    expect(model).toEqual({
      steps: 18,
      flashSteps: 6,
      transitions: 60,
      taskSteps: 39,
      iotMessages: 507,
      commands: 156,
      reports: 351,
      bmcResultUnshared: 1 + 6 * (5 + 2 + 1),
    });
  });

  it("the path before (a SendWave and a MoreWaves? per step): 96 transitions, 57 task-steps invocations", () => {
    const model = modelRack(DEFAULT_RULE, components, {
      maxParallel: ROLLOUT_MAX_PARALLEL,
      checksPerFlashStep: 1,
      path: "before",
    });
    expect([model.transitions, model.taskSteps]).toEqual([96, 57]);
  });

  it("a second check per flash step (a 10-minute flash) adds 3 transitions and 2 invocations per flash step", () => {
    const model = modelRack(DEFAULT_RULE, components, {
      maxParallel: ROLLOUT_MAX_PARALLEL,
      checksPerFlashStep: 2,
      path: "after",
    });
    expect([model.transitions, model.taskSteps]).toEqual([78, 51]);
  });

  it("the update step alone: 6 steps, 24 transitions, 15 task-steps invocations, 312 IoT messages", () => {
    const model = modelRack(UPDATE_ONLY_RULE, components, {
      maxParallel: ROLLOUT_MAX_PARALLEL,
      checksPerFlashStep: 1,
      path: "after",
    });
    expect([model.steps, model.transitions, model.taskSteps, model.iotMessages]).toEqual([6, 24, 15, 312]);
  });

  it("waves of the deployment's maxParallel: in waves of 8, the 18 compute trays are 3 waves and the 9 switch trays 2, each wave through its stage's 3 steps", () => {
    const model = modelRack(DEFAULT_RULE, components, {
      maxParallel: 8,
      checksPerFlashStep: 1,
      path: "after",
    });
    expect(model.steps).toBe((1 + 2 + 3 + 1 + 1 + 1) * 3);
  });
});
