/**
 * The per-rack figures bench:rollout measured for the built-in default rule on the child-task
 * definition as it is, kept in bench/rollout-rack.json (written by a run of the default rule;
 * `--no-record` leaves it). bench:fleet reads the DynamoDB requests of a rack's child task from it:
 * the one per-rack figure the definition's shape does not fix (bench/lib/rack-model.ts counts the
 * states, invocations and messages), so it follows the last measurement instead of a number copied
 * by hand.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Figures } from "./rollout-figures.js";
import { PART } from "./rollout-parts.js";

export const ROLLOUT_RACK_FILE = join(dirname(fileURLToPath(import.meta.url)), "..", "rollout-rack.json");

export interface RackRecord {
  /** When it was measured (ISO date) and how: racks, at what concurrency, how many runs' median. */
  measuredAt: string;
  racks: number;
  concurrency: number;
  repeat: number;
  rule: "default";
  /** DynamoDB requests per rack: as measured on the local stack, and modelled for 10-minute flashes. */
  requests: { measured: number; tenMinuteFlashes: number };
  /** Of them, the run's (create, claim, submit, run bookkeeping: the dispatcher's and the API's). */
  runRequests: number;
  lambda: { measured: number; tenMinuteFlashes: number };
  transitions: { measured: number; tenMinuteFlashes: number };
  cost10min: number;
}

/** The parts bench:rollout files a run's own requests under (the rest is the child task's). */
const RUN_PARTS: string[] = [PART.create, PART.claim, PART.submit, PART.bookkeeping];

export function rackRecord(
  f: Figures,
  sitting: { concurrency: number; repeat: number },
  racks: number,
): RackRecord {
  // A sum of per-rack figures of one decimal each, kept at one decimal (no float tail in the file).
  const runRequests =
    Math.round(
      Object.entries(f.parts)
        .filter(([part]) => RUN_PARTS.includes(part))
        .reduce((sum, [, p]) => sum + p.requests, 0) * 10,
    ) / 10;
  const m = f.cost.model;
  return {
    measuredAt: new Date().toISOString().slice(0, 10),
    racks,
    concurrency: sitting.concurrency,
    repeat: sitting.repeat,
    rule: "default",
    requests: { measured: f.perRack.requests, tenMinuteFlashes: m.requests },
    runRequests,
    lambda: { measured: f.perRack.lambda, tenMinuteFlashes: m.taskSteps + f.perRack.bmcResult },
    transitions: { measured: f.perRack.transitions, tenMinuteFlashes: m.transitions },
    cost10min: m.total,
  };
}

export function readRackRecord(path = ROLLOUT_RACK_FILE): RackRecord {
  return JSON.parse(readFileSync(path, "utf8")) as RackRecord;
}
