/**
 * The rollout benchmark's model of a rack (bench/lib/rack-model.ts), which bench:fleet spreads over
 * every simulated child task: on a GB200-shaped demo rack it gives what bench:rollout counts on the
 * local stack when every wait is woken (docs/benchmarks.md), for each path of the definition, and
 * each extra check of a flash step adds its three states and two invocations. The production
 * schedule (bench/lib/production-model.ts) says how many checks a 10-minute flash takes: one with
 * AwaitWave's heartbeat, two without; and the bench's older paths (bench/lib/rollout-paths.ts)
 * are the definition without the heartbeat.
 */
import { describe, expect, it } from "vitest";
import { modelProductionWave, reportWritesOfFlash } from "../../bench/lib/production-model.js";
import { modelRack, ROLLOUT_MAX_PARALLEL } from "../../bench/lib/rack-model.js";
import { definitionFor } from "../../bench/lib/rollout-paths.js";
import { UPDATE_ONLY_RULE } from "../../bench/lib/rollout-rules.js";
import { generateDemoFleet } from "../../local/demo-fleet.js";
import { loadChildTaskDefinition } from "../../src/adapters/stepfunctions/asl.js";
import { DEFAULT_CHILD_TASK_SETTINGS } from "../../src/app/child-task/settings.js";
import { DEFAULT_RULE } from "../../src/domain/operation-rules.js";

const rack = generateDemoFleet({ racks: 1 })[0];
const components = rack?.components ?? [];

describe("the rack model", () => {
  it("a 39-BMC rack under the default rule: 18 steps, 25 transitions, 22 task-steps invocations, 507 IoT messages when every wait is woken (each step judged in the wait that sends the next, the waits going on to each other)", () => {
    expect(components).toHaveLength(39);
    const model = modelRack(DEFAULT_RULE, components, {
      maxParallel: ROLLOUT_MAX_PARALLEL,
      checksPerFlashStep: 1,
      path: "after",
    });
    expect(model).toEqual({
      steps: 18,
      flashSteps: 6,
      // 7 a task (the first step's sending AwaitWave among them), 1 a step; invocations 4 a
      // task, 1 a step.
      transitions: 7 + 18,
      taskSteps: 4 + 18,
      iotMessages: 507,
      commands: 156,
      reports: 351,
      bmcResultUnshared: 1 + 6 * (5 + 2 + 1),
    });
  });

  it("the path with WaveDone? between the waits: 44 transitions (a WaveDone? a step and the first wait's), the same 22 invocations", () => {
    const model = modelRack(DEFAULT_RULE, components, {
      maxParallel: ROLLOUT_MAX_PARALLEL,
      checksPerFlashStep: 1,
      path: "choice",
    });
    expect([model.transitions, model.taskSteps]).toEqual([8 + 18 * 2, 22]);
  });

  it("the path before (a SendWave and a MoreWaves? per step): 96 transitions, 57 task-steps invocations", () => {
    const model = modelRack(DEFAULT_RULE, components, {
      maxParallel: ROLLOUT_MAX_PARALLEL,
      checksPerFlashStep: 1,
      path: "before",
    });
    expect([model.transitions, model.taskSteps]).toEqual([96, 57]);
  });

  it("the path before the heartbeat has the states of the path before AwaitWave judged (a CheckWave a step): 60 transitions, 39 invocations at one check a step", () => {
    const model = modelRack(DEFAULT_RULE, components, {
      maxParallel: ROLLOUT_MAX_PARALLEL,
      checksPerFlashStep: 1,
      path: "timeout",
    });
    expect([model.transitions, model.taskSteps]).toEqual([60, 39]);
  });

  it("a second check per flash step (a 10-minute flash without the heartbeat) adds 3 transitions and 2 invocations per flash step", () => {
    const model = modelRack(DEFAULT_RULE, components, {
      maxParallel: ROLLOUT_MAX_PARALLEL,
      checksPerFlashStep: 2,
      path: "after",
    });
    // A check more: CheckWave, WaveDone? and the AwaitWave that waits again.
    expect([model.transitions, model.taskSteps]).toEqual([25 + 6 * 3, 22 + 6 * 2]);
  });

  it("the update step alone: 6 steps, 13 transitions, 10 task-steps invocations, 312 IoT messages", () => {
    const model = modelRack(UPDATE_ONLY_RULE, components, {
      maxParallel: ROLLOUT_MAX_PARALLEL,
      checksPerFlashStep: 1,
      path: "after",
    });
    expect([model.steps, model.transitions, model.taskSteps, model.iotMessages]).toEqual([6, 13, 10, 312]);
  });

  it("waves of the deployment's maxParallel: in waves of 8, the 18 compute trays are 3 waves and the 9 switch trays 2, each wave through its stage's 3 steps", () => {
    const model = modelRack(DEFAULT_RULE, components, {
      maxParallel: 8,
      checksPerFlashStep: 1,
      path: "after",
    });
    expect(model.steps).toBe((1 + 2 + 3 + 1 + 1 + 1) * 3);
  });

  it("an AC cycle of the whole rack is one reset a wave, to the power shelf; of each tray, one a component", () => {
    // A tray's AC cycle is the step without acScope (TRAY is the default, kept as no scope).
    const rule = (acScope?: "RACK") => ({
      stages: [
        {
          name: "compute",
          componentTypes: ["COMPUTE" as const],
          maxParallel: 0,
          steps: [
            {
              action: "AC_CYCLE" as const,
              timeoutSeconds: 600,
              sleepSeconds: 0,
              ...(acScope ? { acScope } : {}),
            },
            { action: "WAIT_BRING_UP" as const, timeoutSeconds: 600, sleepSeconds: 0 },
          ],
        },
      ],
    });
    const options = { maxParallel: ROLLOUT_MAX_PARALLEL, checksPerFlashStep: 1, path: "after" as const };
    const trays = modelRack(rule(), components, options);
    const whole = modelRack(rule("RACK"), components, options);
    // The preflight's 39 queries, then the 18 trays' resets (or one), then their 18 queries.
    expect([trays.commands, trays.reports]).toEqual([39 + 18 + 18, 39 + 18 * 2 + 18]);
    expect([whole.commands, whole.reports]).toEqual([39 + 1 + 18, 39 + 1 * 2 + 18]);
    expect([whole.steps, whole.transitions]).toEqual([trays.steps, trays.transitions]);
  });
});

describe("the production schedule of a 10-minute flash reporting at 25/50/75 %", () => {
  it("one check with AwaitWave's heartbeat (every report within the 300-s heartbeat), two with its timeout alone", () => {
    const wave = modelProductionWave(DEFAULT_CHILD_TASK_SETTINGS);
    expect([wave.checksPerWave, wave.noHeartbeatChecksPerWave]).toEqual([1, 2]);
    // A flash reporting less often than the heartbeat (30-s polls, 150-s heartbeat): checked early again.
    const short = modelProductionWave({ ...DEFAULT_CHILD_TASK_SETTINGS, maxPollSeconds: 20 });
    expect(short.checksPerWave).toBeGreaterThan(1);
  });

  it("its set is written five times (the ack, each progress, the result) where a 300-ms flash's is twice (its progress, within a second of the ack, is not written)", () => {
    expect(modelProductionWave(DEFAULT_CHILD_TASK_SETTINGS).reportWritesPerFlash).toBe(5);
    expect(reportWritesOfFlash(600_000)).toBe(5);
    expect(reportWritesOfFlash(300)).toBe(2);
    // Progress 1.5 s apart: the first past the second after the ack is written, the next within 5 s not.
    expect(reportWritesOfFlash(6_000)).toBe(3);
  });
});

describe("the bench's paths", () => {
  it("the older paths are the definition without AwaitWave's heartbeat: its timeout awaitSeconds, caught alone", () => {
    const current = loadChildTaskDefinition();
    for (const path of ["timeout", "before"] as const) {
      const wait = definitionFor(path, current).States.AwaitWave as Record<string, unknown>;
      expect(wait.TimeoutSecondsPath, path).toBe("$.plan.wave.awaitSeconds");
      expect(wait.HeartbeatSecondsPath, path).toBeUndefined();
      expect((wait.Catch as { ErrorEquals: string[] }[])[0]?.ErrorEquals, path).toEqual(["States.Timeout"]);
    }
    expect(definitionFor("after", current)).toBe(current);
    // "choice": one AwaitWave, its Next WaveDone?, which routes the judge's marks; no error exits.
    const choice = definitionFor("choice", current).States;
    expect(choice.AwaitNextWave).toBeUndefined();
    expect(choice.AwaitWave?.Next).toBe("WaveDone?");
    const shape = JSON.stringify(choice, (key, value) => (key === "Comment" ? undefined : value));
    expect(shape).not.toMatch(/exitsAsErrors|OutcomeRecorded|StepHandedOver|AwaitNextWave/);
    expect(
      ((choice["WaveDone?"]?.Choices ?? []) as { Variable: string }[]).map((c) => c.Variable).slice(0, 3),
    ).toEqual(["$.plan.ended", "$.plan.wave.ended", "$.plan.wave.checkNeeded"]);
    expect(definitionFor("timeout", current).States.CheckWave?.Parameters?.sendNext).toBe(true);
    expect(definitionFor("before", current).States.CheckWave?.Parameters?.sendNext).toBeUndefined();
  });
});
