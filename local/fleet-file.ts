/**
 * The fleet file (`--fleet FILE`): how the simulated BMCs behave.
 *
 *   {
 *     "defaults":   { "updateMs": 500, "outcome": "succeed" },
 *     "racks":      { "<rackId>":      { "outcome": "fail" } },
 *     "components": { "<componentId>": { "outcome": "hang", "updateMs": 2000 } }
 *   }
 *
 * Every part is optional; `{}` means every BMC succeeds after 500 ms. The most specific entry wins,
 * field by field: a component's own entry, then its rack's, then the defaults. With the file above,
 * a component of that rack with no entry of its own fails after 500 ms (outcome from the rack,
 * updateMs from the defaults).
 *
 * Outcomes: `succeed`; `fail` (reports a failed update); `hang` (acks, never reports);
 * `disconnect` (drops off mid-update and stays silent); `wrong-version` (reports success with a
 * version other than the one asked for); `not-ready` (answers the preflight query as not ready,
 * and still flashes when commanded, as with override_readiness_check).
 *
 * Activation (`activation`): what makes a flashed version active. `immediate` (the default: the
 * flash's result reports the new version); `bmc`, `host` or `ac`: the flash stages the version
 * (its result reports the old one running and the new one pending, BMC protocol v3) until a reset
 * of that kind or a stronger one (an AC cycle resets everything; a BMC reset does not touch the
 * host); `type`: the reset each component's type needs (src/domain/operation-rules.ts
 * TYPE_ACTIVATION). `resetMs` (default 100) is how long a reset takes before the BMC answers.
 * `unhealthyAfterFlash: true`: once flashed, the BMC reports its component Critical
 * (UNHEALTHY_REASON) in every answer (BMC protocol v3 `health`), as a GPU lost in a flash would.
 *
 * Ids are UUIDs in any case (stored lowercase); unknown fields are refused so a typo fails loudly.
 */
import { readFile } from "node:fs/promises";
import {
  Checker,
  type FileProblem,
  InputFileError,
  parseJson,
  unreadable,
} from "../src/domain/input-file.js";
import { isNilUuid, isUuid } from "../src/domain/uuid.js";

export const BMC_OUTCOMES = ["succeed", "fail", "hang", "disconnect", "wrong-version", "not-ready"] as const;
export type BmcOutcome = (typeof BMC_OUTCOMES)[number];

export const FLEET_ACTIVATIONS = ["immediate", "bmc", "host", "ac", "type"] as const;
export type FleetActivation = (typeof FLEET_ACTIVATIONS)[number];

export interface BmcBehaviour {
  outcome: BmcOutcome;
  /** How long a flash takes, from the ack to the result (or to the drop, for `disconnect`). */
  updateMs: number;
  /** What activates a flashed version; absent: `immediate`. */
  activation?: FleetActivation;
  /** How long a reset takes, from its ack to the BMC's answer; absent: DEFAULT_RESET_MS. */
  resetMs?: number;
  /** Once flashed, the BMC reports its component unhealthy (Critical). */
  unhealthyAfterFlash?: boolean;
}

export const DEFAULT_RESET_MS = 100;

export interface FleetConfig {
  defaults: BmcBehaviour;
  /** Keyed by lowercase rack id. */
  racks: Record<string, Partial<BmcBehaviour>>;
  /** Keyed by lowercase component id. */
  components: Record<string, Partial<BmcBehaviour>>;
}

export const DEFAULT_BEHAVIOUR: BmcBehaviour = { outcome: "succeed", updateMs: 500 };

/** What the local stack uses without `--fleet`: every BMC succeeds after a short update. */
export function defaultFleetConfig(): FleetConfig {
  return { defaults: { ...DEFAULT_BEHAVIOUR }, racks: {}, components: {} };
}

/** An update longer than a day is a typo, not a simulation. */
export const MAX_UPDATE_MS = 86_400_000;

export class FleetFileError extends InputFileError {
  constructor(file: string, problems: readonly FileProblem[]) {
    super(file, problems);
    this.name = "FleetFileError";
  }
}

/** The behaviour of one component: component entry, then rack entry, then defaults, per field. */
export function behaviourFor(config: FleetConfig, rackId: string, componentId: string): BmcBehaviour {
  const component = config.components[componentId.toLowerCase()] ?? {};
  const rack = config.racks[rackId.toLowerCase()] ?? {};
  const behaviour: BmcBehaviour = {
    outcome: component.outcome ?? rack.outcome ?? config.defaults.outcome,
    updateMs: component.updateMs ?? rack.updateMs ?? config.defaults.updateMs,
  };
  const activation = component.activation ?? rack.activation ?? config.defaults.activation;
  if (activation !== undefined) behaviour.activation = activation;
  const resetMs = component.resetMs ?? rack.resetMs ?? config.defaults.resetMs;
  if (resetMs !== undefined) behaviour.resetMs = resetMs;
  const unhealthy =
    component.unhealthyAfterFlash ?? rack.unhealthyAfterFlash ?? config.defaults.unhealthyAfterFlash;
  if (unhealthy !== undefined) behaviour.unhealthyAfterFlash = unhealthy;
  return behaviour;
}

export async function loadFleetFile(path: string): Promise<FleetConfig> {
  const text = await readFile(path, "utf8").catch((error: unknown) => {
    throw new FleetFileError(path, [unreadable(error)]);
  });
  return parseFleet(text, path);
}

/** Parses the file's text; `file` is only used in messages. Throws FleetFileError. */
export function parseFleet(text: string, file: string): FleetConfig {
  const parsed = parseJson(text);
  if (!parsed.ok) throw new FleetFileError(file, [parsed.problem]);
  const result = validateFleet(parsed.value);
  if (!result.ok) throw new FleetFileError(file, result.problems);
  return result.config;
}

const BEHAVIOUR_FIELDS = ["outcome", "updateMs", "activation", "resetMs", "unhealthyAfterFlash"];

export function validateFleet(
  value: unknown,
): { ok: true; config: FleetConfig } | { ok: false; problems: FileProblem[] } {
  const c = new Checker();
  const config = defaultFleetConfig();
  const root = c.object(value, "(root)", ["defaults", "racks", "components"]);
  if (root) {
    if (root.defaults !== undefined) {
      Object.assign(config.defaults, readBehaviour(c, root.defaults, "defaults"));
    }
    for (const section of ["racks", "components"] as const) {
      if (root[section] === undefined) continue;
      const entries = c.object(root[section], section);
      if (!entries) continue;
      for (const [key, raw] of Object.entries(entries)) {
        // JSON paths quote keys that are not identifiers: racks["4f6f…"].outcome
        const at = `${section}[${JSON.stringify(key)}]`;
        const id = isUuid(key) && !isNilUuid(key) ? key.toLowerCase() : undefined;
        if (id === undefined)
          c.problem(at, `key must be a ${section === "racks" ? "rack" : "component"} id (a UUID)`);
        const behaviour = readBehaviour(c, raw, at);
        if (id === undefined) continue;
        if (config[section][id] !== undefined) {
          c.problem(at, `duplicate entry: the id differs from another one only in case`);
          continue;
        }
        config[section][id] = behaviour;
      }
    }
  }
  return c.problems.length > 0 ? { ok: false, problems: c.problems } : { ok: true, config };
}

function readBehaviour(c: Checker, raw: unknown, at: string): Partial<BmcBehaviour> {
  const o = c.object(raw, at, BEHAVIOUR_FIELDS);
  const behaviour: Partial<BmcBehaviour> = {};
  if (!o) return behaviour;
  if (o.outcome !== undefined) {
    const outcome = c.oneOf(o.outcome, `${at}.outcome`, BMC_OUTCOMES);
    if (outcome !== undefined) behaviour.outcome = outcome;
  }
  for (const field of ["updateMs", "resetMs"] as const) {
    if (o[field] === undefined) continue;
    const ms = c.nonNegativeInteger(o[field], `${at}.${field}`);
    if (ms !== undefined && ms > MAX_UPDATE_MS) {
      c.problem(`${at}.${field}`, `must be at most ${MAX_UPDATE_MS} (one day; got ${ms})`);
    } else if (ms !== undefined) behaviour[field] = ms;
  }
  if (o.unhealthyAfterFlash !== undefined) {
    if (typeof o.unhealthyAfterFlash === "boolean") behaviour.unhealthyAfterFlash = o.unhealthyAfterFlash;
    else c.problem(`${at}.unhealthyAfterFlash`, "must be true or false");
  }
  if (o.activation !== undefined) {
    const activation = c.oneOf(o.activation, `${at}.activation`, FLEET_ACTIVATIONS);
    if (activation !== undefined) behaviour.activation = activation;
  }
  return behaviour;
}
