/**
 * bench:fleet's command line (bench/lib/fleet-args.ts): its defaults, and every value it cannot use
 * refused with the flag named, before anything is simulated.
 */
import { describe, expect, it } from "vitest";
import { parseFleetArgs } from "../../bench/lib/fleet-args.js";

describe("bench:fleet's flags", () => {
  it("defaults: every scenario, the moto check, seed 7, 10-minute child tasks", () => {
    expect(parseFleetArgs([])).toEqual({ quick: false, skipMoto: false, seed: 7, taskMinutes: 10 });
  });

  it("--quick --skip-moto --seed 3 --task-minutes 60 are taken as given", () => {
    expect(parseFleetArgs(["--quick", "--skip-moto", "--seed", "3", "--task-minutes", "60"])).toEqual({
      quick: true,
      skipMoto: true,
      seed: 3,
      taskMinutes: 60,
    });
  });

  it("--task-minutes must be a number of minutes above 0", () => {
    for (const given of ["0", "-5", "ten", "Infinity"]) {
      expect(() => parseFleetArgs(["--task-minutes", given])).toThrow(
        `--task-minutes: must be a number of minutes above 0 (got ${given})`,
      );
    }
    expect(() => parseFleetArgs(["--task-minutes"])).toThrow(
      "--task-minutes: must be a number of minutes above 0 (got )",
    );
  });

  it("--seed must be an integer", () => {
    expect(() => parseFleetArgs(["--seed", "1.5"])).toThrow("--seed: must be an integer (got 1.5)");
    expect(() => parseFleetArgs(["--seed", "x"])).toThrow("--seed: must be an integer (got x)");
    expect(() => parseFleetArgs(["--seed"])).toThrow("--seed: must be an integer (got )");
  });
});
