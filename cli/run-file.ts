/**
 * The run file: an operation run's request in readable names, YAML or JSON (`flowctl run create -f`).
 * The schema is documented with examples in docs/cli.md; the short version:
 *
 *   name: bmc-7.2-canary                   # required
 *   description: BMC 7.2 on 30% of the fleet
 *   selector: { percentage: 30%, seed: canary-1 }     # percentage required (1..100), seed optional
 *   options:
 *     maxConcurrentTargets: 4              # required, > 0
 *     gates:                               # required, at least one
 *       - failureCount: 3                  #   > 0
 *         scope: cumulativeRun             #   currentPhase (default) | cumulativeRun
 *       - failureRate: 20%                 #   1..100
 *     phases: { percentage: [10, 30, 60] } # or { equal: 3 } or { count: [2, 3] }; default one phase
 *     autoAdvance: false
 *     ordering: { random: { seed: x } }    # default random with a generated seed
 *     conflictRetry: { retryTimeout: 1h, initialRetryDelay: 30s, maxRetryDelay: 5m }
 *   operation:
 *     upgradeFirmware:                     # required: the only operation there is
 *       targetVersion: 7.2.0
 *       targets: { racks: [rack-a01, { externalId: EXT-A02, componentTypes: [COMPUTE] }] }
 *     excludeRuns: [<run uuid>]
 *     defaultScope: { componentTypes: [COMPUTE] }   # only without `targets`
 *
 * Every problem is reported at once, each naming the file and the key:
 *
 *   run.yaml: options.maxConcurrentTargets: must be a positive integer (got 0)
 *   run.yaml: options.gates[1]: must set exactly one of failureCount, failureRate
 *
 * Unknown keys are refused (a typo such as `maxConcurentTargets` must not silently vanish). The
 * rules checked here are the ones a file can break on its own; what needs the inventory (an empty
 * plan, a phase with zero racks) is left to the service, whose answer flowctl prints field by field.
 */
import { readFile } from "node:fs/promises";
import { isDocument, parseDocument } from "yaml";
import * as pb from "../src/gen/flow/v1/flow.js";
import { durationToNs, formatDuration, nsToDuration, parseDurationNs } from "./durations.js";
import { componentTypes, orderingStrategies } from "./names.js";

export interface FileProblem {
  /** Key path in the file: `options.gates[1].scope`; `(root)` for the whole document. */
  path: string;
  rule: string;
}

/** A run file that cannot be used. Its message lists every problem, one per line. */
export class RunFileError extends Error {
  constructor(
    readonly file: string,
    readonly problems: readonly FileProblem[],
  ) {
    super(problems.map((p) => `${file}: ${p.path}: ${p.rule}`).join("\n"));
    this.name = "RunFileError";
  }
}

export async function loadRunFile(path: string): Promise<pb.CreateOperationRunRequest> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === "ENOENT" ? "file not found" : code === "EISDIR" ? "is a directory" : (err as Error).message;
    throw new RunFileError(path, [{ path: "(root)", rule: `cannot be read: ${why}` }]);
  }
  return parseRunFile(text, path);
}

/** Parses a run file's text (YAML 1.2, so JSON too); `file` is only used in messages. */
export function parseRunFile(text: string, file: string): pb.CreateOperationRunRequest {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (!isDocument(doc) || doc.errors.length > 0) {
    const problems = doc.errors.map((e) => ({
      path: "(root)",
      rule: `not valid YAML or JSON: ${oneLine(e.message)}`,
    }));
    throw new RunFileError(file, problems);
  }
  const r = new Reader();
  const request = readRequest(r, doc.toJS({ maxAliasCount: 100 }) as unknown);
  if (r.problems.length > 0) throw new RunFileError(file, r.problems);
  return request!;
}

/** The first line of a YAML error, without the code excerpt it introduces: `… at line 2, column 1`. */
function oneLine(message: string): string {
  return message.split("\n")[0]!.trim().replace(/:$/, "");
}

// ---------------------------------------------------------------------------------------------
// Reading, with every problem recorded against its key path

type Obj = Record<string, unknown>;

class Reader {
  readonly problems: FileProblem[] = [];

  /** Records a problem; returns undefined so a reader can `return r.add(...)` in one line. */
  add(path: string, rule: string): undefined {
    this.problems.push({ path: path === "" ? "(root)" : path, rule });
    return undefined;
  }

  /** A mapping whose keys are all in `allowed`; unknown keys are reported and ignored. */
  object(value: unknown, path: string, allowed: readonly string[]): Obj | undefined {
    if (value === null || typeof value !== "object" || Array.isArray(value) || value instanceof Date) {
      this.add(path, `must be a mapping with keys ${allowed.join(", ")} (got ${describe(value)})`);
      return undefined;
    }
    for (const key of Object.keys(value)) {
      if (!allowed.includes(key))
        this.add(join(path, key), `unknown key (expected one of ${allowed.join(", ")})`);
    }
    return value as Obj;
  }

  /** The one key of `oneOf` that `obj` sets, or undefined after reporting none or several. */
  exactlyOne(obj: Obj, path: string, oneOf: readonly string[]): string | undefined {
    const set = oneOf.filter((k) => obj[k] !== undefined);
    if (set.length === 1) return set[0];
    this.add(
      path,
      set.length === 0
        ? `must set one of ${oneOf.join(", ")}`
        : `must set exactly one of ${oneOf.join(", ")} (got ${set.join(" and ")})`,
    );
    return undefined;
  }

  list(value: unknown, path: string, options: { nonEmpty?: boolean } = {}): unknown[] | undefined {
    if (!Array.isArray(value)) {
      this.add(path, `must be a list (got ${describe(value)})`);
      return undefined;
    }
    if (options.nonEmpty === true && value.length === 0) {
      this.add(path, "must not be empty");
      return undefined;
    }
    return value;
  }

  string(value: unknown, path: string, options: { nonEmpty?: boolean } = {}): string | undefined {
    // YAML reads `version: 7.2` as a number; a version is text, so numbers are taken as written.
    if (typeof value === "number" && Number.isFinite(value)) return String(value);
    if (typeof value !== "string") {
      this.add(path, `must be a string (got ${describe(value)})`);
      return undefined;
    }
    if (options.nonEmpty === true && value.trim() === "") {
      this.add(path, "must not be empty");
      return undefined;
    }
    return value;
  }

  positiveInt(value: unknown, path: string): number | undefined {
    if (typeof value === "number" && Number.isInteger(value) && value > 0 && value <= 2_147_483_647)
      return value;
    this.add(path, `must be a positive integer (got ${describe(value)})`);
    return undefined;
  }

  /** `30`, `30%` and `"30 %"` are all 30; whole numbers from 1 to 100. */
  percentage(value: unknown, path: string): number | undefined {
    let n: number | undefined;
    if (typeof value === "number") n = value;
    else if (typeof value === "string") {
      const m = /^\s*(\d+(?:\.\d+)?)\s*%?\s*$/.exec(value);
      if (m !== null) n = Number(m[1]);
    }
    if (n !== undefined && Number.isInteger(n) && n >= 1 && n <= 100) return n;
    this.add(path, `must be a whole percentage from 1 to 100, e.g. 30 or 30% (got ${describe(value)})`);
    return undefined;
  }

  boolean(value: unknown, path: string): boolean | undefined {
    if (typeof value === "boolean") return value;
    this.add(path, `must be true or false (got ${describe(value)})`);
    return undefined;
  }

  /** A positive duration: `30s`, `5m`, `1h30m`, `250ms`. */
  duration(value: unknown, path: string): bigint | undefined {
    const ns = typeof value === "string" ? parseDurationNs(value) : undefined;
    if (ns === undefined) {
      this.add(path, `must be a duration with a unit, e.g. 30s, 5m, 1h30m (got ${describe(value)})`);
      return undefined;
    }
    if (ns <= 0n) {
      this.add(path, `must be longer than zero (got ${describe(value)})`);
      return undefined;
    }
    return ns;
  }

  uuid(value: unknown, path: string): string | undefined {
    if (typeof value === "string" && UUID.test(value) && !/^[0-]+$/.test(value)) return value.toLowerCase();
    this.add(path, `must be a UUID, e.g. 4f6f1a9e-0000-4000-8000-000000000001 (got ${describe(value)})`);
    return undefined;
  }

  componentType(value: unknown, path: string): pb.ComponentType | undefined {
    const type = typeof value === "string" ? componentTypes.parse(value) : undefined;
    if (type === undefined) {
      this.add(path, `must be one of ${componentTypes.names.join(", ")} (got ${describe(value)})`);
    }
    return type;
  }

  timestamp(value: unknown, path: string): Date | undefined {
    if (value instanceof Date && !Number.isNaN(value.getTime())) return value;
    if (typeof value === "string" && RFC3339.test(value.trim())) {
      const d = new Date(value.trim());
      if (!Number.isNaN(d.getTime())) return d;
    }
    this.add(path, `must be an RFC 3339 timestamp, e.g. 2026-11-20T08:00:00Z (got ${describe(value)})`);
    return undefined;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

/** How a bad value is quoted in a message: `0`, `"abc"`, `a list`, `nothing`. */
function describe(value: unknown): string {
  if (value === undefined || value === null) return "nothing";
  if (Array.isArray(value)) return "a list";
  if (value instanceof Date) return value.toISOString();
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") return JSON.stringify(value);
  return String(value);
}

// ---------------------------------------------------------------------------------------------
// The schema

const TOP_KEYS = ["name", "description", "selector", "options", "operation"] as const;

function readRequest(r: Reader, root: unknown): pb.CreateOperationRunRequest | undefined {
  const obj = r.object(root, "", TOP_KEYS);
  if (obj === undefined) return undefined;
  const name =
    obj.name === undefined ? r.add("name", "is required") : r.string(obj.name, "name", { nonEmpty: true });
  const description = obj.description === undefined ? "" : (r.string(obj.description, "description") ?? "");
  const selector = required(r, obj, "selector", readSelector);
  const options = required(r, obj, "options", readOptions);
  const operation = required(r, obj, "operation", readOperation);
  return {
    name: name?.trim() ?? "",
    description,
    configuration: { selector, options, operation },
  };
}

function required<T>(
  r: Reader,
  obj: Obj,
  key: string,
  read: (r: Reader, value: unknown, path: string) => T | undefined,
): T | undefined {
  if (obj[key] === undefined || obj[key] === null) {
    r.add(key, "is required");
    return undefined;
  }
  return read(r, obj[key], key);
}

function readSelector(r: Reader, value: unknown, path: string): pb.OperationRunSelector | undefined {
  const obj = r.object(value, path, ["percentage", "seed"]);
  if (obj === undefined) return undefined;
  const percentage =
    obj.percentage === undefined
      ? r.add(join(path, "percentage"), "is required (1 to 100: the share of candidate racks to select)")
      : r.percentage(obj.percentage, join(path, "percentage"));
  const seed = obj.seed === undefined ? "" : (r.string(obj.seed, join(path, "seed")) ?? "");
  return { selector: { $case: "percentage", value: { percentage: percentage ?? 0, seed } } };
}

const OPTION_KEYS = [
  "maxConcurrentTargets",
  "gates",
  "phases",
  "autoAdvance",
  "ordering",
  "conflictRetry",
] as const;

function readOptions(r: Reader, value: unknown, path: string): pb.OperationRunOptions | undefined {
  const obj = r.object(value, path, OPTION_KEYS);
  if (obj === undefined) return undefined;
  const maxPath = join(path, "maxConcurrentTargets");
  const maxConcurrentTargets =
    obj.maxConcurrentTargets === undefined
      ? r.add(maxPath, "is required (how many racks may be updated at the same time)")
      : r.positiveInt(obj.maxConcurrentTargets, maxPath);

  const gatesPath = join(path, "gates");
  let gates: pb.OperationRunSafetyGate[] = [];
  if (obj.gates === undefined) r.add(gatesPath, "is required: at least one gate, e.g. - failureCount: 1");
  else {
    const list = r.list(obj.gates, gatesPath, { nonEmpty: true });
    gates = (list ?? []).map((g, i) => readGate(r, g, `${gatesPath}[${i}]`)).filter((g) => g !== undefined);
  }

  const autoAdvance =
    obj.autoAdvance === undefined ? false : (r.boolean(obj.autoAdvance, join(path, "autoAdvance")) ?? false);
  const plan = obj.phases === undefined ? undefined : readPhases(r, obj.phases, join(path, "phases"));
  const phasePolicy =
    plan === undefined && obj.autoAdvance === undefined
      ? undefined
      : { plan, advancePolicy: { autoAdvance } };

  return {
    maxConcurrentTargets: maxConcurrentTargets ?? 0,
    safetyPolicy: { gates },
    conflictPolicy:
      obj.conflictRetry === undefined
        ? undefined
        : readConflictRetry(r, obj.conflictRetry, join(path, "conflictRetry")),
    orderingPolicy:
      obj.ordering === undefined ? undefined : readOrdering(r, obj.ordering, join(path, "ordering")),
    phasePolicy,
  };
}

/** Gate scopes by their readable names; `CURRENT_PHASE` and `current-phase` work too. */
const GATE_SCOPES: Readonly<Record<string, pb.OperationRunSafetyGateScope>> = {
  currentphase: pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE,
  cumulativerun: pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN,
};

function readGate(r: Reader, value: unknown, path: string): pb.OperationRunSafetyGate | undefined {
  const obj = r.object(value, path, ["failureCount", "failureRate", "scope"]);
  if (obj === undefined) return undefined;
  let scope = pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE;
  if (obj.scope !== undefined) {
    const key = typeof obj.scope === "string" ? obj.scope.toLowerCase().replace(/[^a-z]/g, "") : "";
    const found = GATE_SCOPES[key];
    if (found === undefined)
      r.add(join(path, "scope"), `must be currentPhase or cumulativeRun (got ${describe(obj.scope)})`);
    else scope = found;
  }
  const kind = r.exactlyOne(obj, path, ["failureCount", "failureRate"]);
  if (kind === "failureCount") {
    const count = r.positiveInt(obj.failureCount, join(path, "failureCount"));
    return count === undefined
      ? undefined
      : { gate: { $case: "failureCount", value: { scope, failureThresholdCount: count } } };
  }
  if (kind === "failureRate") {
    const percent = r.percentage(obj.failureRate, join(path, "failureRate"));
    return percent === undefined
      ? undefined
      : { gate: { $case: "failureRate", value: { scope, failureThresholdPercent: percent } } };
  }
  return undefined;
}

function readPhases(r: Reader, value: unknown, path: string): pb.OperationRunPhasePolicy["plan"] {
  const obj = r.object(value, path, ["equal", "percentage", "count"]);
  if (obj === undefined) return undefined;
  const kind = r.exactlyOne(obj, path, ["equal", "percentage", "count"]);
  if (kind === "equal") {
    const phaseCount = r.positiveInt(obj.equal, join(path, "equal"));
    return phaseCount === undefined ? undefined : { $case: "equal", value: { phaseCount } };
  }
  if (kind === "percentage") {
    const p = join(path, "percentage");
    const list = r.list(obj.percentage, p, { nonEmpty: true });
    if (list === undefined) return undefined;
    const phases = list.map((v, i) => r.percentage(v, `${p}[${i}]`));
    if (phases.some((v) => v === undefined)) return undefined;
    const sum = (phases as number[]).reduce((a, b) => a + b, 0);
    if (sum !== 100) {
      r.add(p, `must add up to 100 (got ${(phases as number[]).join(" + ")} = ${sum})`);
      return undefined;
    }
    return {
      $case: "percentage",
      value: { phases: (phases as number[]).map((percentage) => ({ percentage })) },
    };
  }
  if (kind === "count") {
    const p = join(path, "count");
    const list = r.list(obj.count, p, { nonEmpty: true });
    if (list === undefined) return undefined;
    const counts = list.map((v, i) => r.positiveInt(v, `${p}[${i}]`));
    if (counts.some((v) => v === undefined)) return undefined;
    return { $case: "count", value: { phases: (counts as number[]).map((count) => ({ count })) } };
  }
  return undefined;
}

function readOrdering(r: Reader, value: unknown, path: string): pb.OperationRunOrderingPolicy | undefined {
  const obj = r.object(value, path, ["random", "physicalLocation"]);
  if (obj === undefined) return undefined;
  // `random:` with nothing after it is YAML null: random ordering with a generated seed.
  if (obj.random === null) return { ordering: { $case: "random", value: { seed: "" } } };
  const kind = r.exactlyOne(obj, path, ["random", "physicalLocation"]);
  if (kind === "random") {
    const p = join(path, "random");
    const random = r.object(obj.random, p, ["seed"]);
    if (random === undefined) return undefined;
    const seed = random.seed === undefined ? "" : r.string(random.seed, join(p, "seed"));
    return seed === undefined ? undefined : { ordering: { $case: "random", value: { seed } } };
  }
  if (kind === "physicalLocation") {
    const p = join(path, "physicalLocation");
    const strategy =
      typeof obj.physicalLocation === "string" ? orderingStrategies.parse(obj.physicalLocation) : undefined;
    if (strategy === undefined) {
      r.add(
        p,
        `must be one of ${orderingStrategies.names.join(", ")} (got ${describe(obj.physicalLocation)})`,
      );
      return undefined;
    }
    return { ordering: { $case: "physicalLocation", value: { strategy } } };
  }
  return undefined;
}

const RETRY_KEYS = ["retryTimeout", "initialRetryDelay", "maxRetryDelay"] as const;

function readConflictRetry(
  r: Reader,
  value: unknown,
  path: string,
): pb.OperationRunConflictPolicy | undefined {
  const obj = r.object(value, path, RETRY_KEYS);
  if (obj === undefined) return undefined;
  const [timeout, initial, max] = RETRY_KEYS.map((k) =>
    obj[k] === undefined ? undefined : r.duration(obj[k], join(path, k)),
  );
  if (initial !== undefined && max !== undefined && max < initial) {
    r.add(join(path, "maxRetryDelay"), `must be at least initialRetryDelay (${obj.initialRetryDelay})`);
  }
  const d = (ns: bigint | undefined) => (ns === undefined ? undefined : nsToDuration(ns));
  return {
    strategy: {
      $case: "retry",
      value: { retryTimeout: d(timeout), initialRetryDelay: d(initial), maxRetryDelay: d(max) },
    },
  };
}

function readOperation(r: Reader, value: unknown, path: string): pb.OperationRunOperation | undefined {
  const obj = r.object(value, path, ["upgradeFirmware", "excludeRuns", "defaultScope"]);
  if (obj === undefined) return undefined;
  const fwPath = join(path, "upgradeFirmware");
  const firmware =
    obj.upgradeFirmware === undefined
      ? r.add(fwPath, "is required (upgradeFirmware is the only operation a run can perform)")
      : readFirmware(r, obj.upgradeFirmware ?? {}, fwPath);

  const excludePath = join(path, "excludeRuns");
  const excludeOperationRunIds =
    obj.excludeRuns === undefined
      ? []
      : (r.list(obj.excludeRuns, excludePath) ?? [])
          .map((v, i) => r.uuid(v, `${excludePath}[${i}]`))
          .filter((id) => id !== undefined)
          .map((id) => ({ id }));

  let defaultScopeComponentFilter: pb.ComponentFilter | undefined;
  if (obj.defaultScope !== undefined) {
    const scopePath = join(path, "defaultScope");
    if (firmware?.targetSpec !== undefined) {
      r.add(scopePath, "is only allowed without upgradeFirmware.targets (it narrows the default scope)");
    }
    defaultScopeComponentFilter = readDefaultScope(r, obj.defaultScope, scopePath);
  }
  const targetScope =
    excludeOperationRunIds.length === 0 && defaultScopeComponentFilter === undefined
      ? undefined
      : { excludeOperationRunIds, defaultScopeComponentFilter };
  return {
    operation: firmware === undefined ? undefined : { $case: "upgradeFirmware", value: firmware },
    targetScope,
  };
}

function readDefaultScope(r: Reader, value: unknown, path: string): pb.ComponentFilter | undefined {
  const obj = r.object(value, path, ["componentTypes", "componentIds"]);
  if (obj === undefined) return undefined;
  const kind = r.exactlyOne(obj, path, ["componentTypes", "componentIds"]);
  if (kind === "componentTypes") {
    const types = readTypes(r, obj.componentTypes, join(path, "componentTypes"), true);
    return types === undefined ? undefined : { filter: { $case: "types", value: { types } } };
  }
  if (kind === "componentIds") {
    const p = join(path, "componentIds");
    const ids = (r.list(obj.componentIds, p, { nonEmpty: true }) ?? []).map((v, i) =>
      r.uuid(v, `${p}[${i}]`),
    );
    if (ids.length === 0 || ids.some((id) => id === undefined)) return undefined;
    return {
      filter: {
        $case: "components",
        value: { targets: (ids as string[]).map((id) => ({ identifier: { $case: "id", value: { id } } })) },
      },
    };
  }
  return undefined;
}

function readTypes(
  r: Reader,
  value: unknown,
  path: string,
  nonEmpty = false,
): pb.ComponentType[] | undefined {
  const list = r.list(value, path, { nonEmpty });
  if (list === undefined) return undefined;
  const types = list.map((v, i) => r.componentType(v, `${path}[${i}]`));
  return types.some((t) => t === undefined) ? undefined : (types as pb.ComponentType[]);
}

const FIRMWARE_KEYS = [
  "targetVersion",
  "description",
  "targets",
  "startTime",
  "endTime",
  "queue",
  "ruleId",
  "subTargets",
  "overrideReadinessCheck",
  "overrideVersionCheck",
  "authentication",
] as const;

function readFirmware(r: Reader, value: unknown, path: string): pb.UpgradeFirmwareRequest | undefined {
  const obj = r.object(value, path, FIRMWARE_KEYS);
  if (obj === undefined) return undefined;
  const at = (k: string) => join(path, k);
  const optional = <T>(k: string, read: (v: unknown, p: string) => T | undefined): T | undefined =>
    obj[k] === undefined ? undefined : read(obj[k], at(k));
  const startTime = optional("startTime", (v, p) => r.timestamp(v, p));
  const endTime = optional("endTime", (v, p) => r.timestamp(v, p));
  if (startTime !== undefined && endTime !== undefined && endTime <= startTime) {
    r.add(at("endTime"), "must be later than startTime");
  }
  const ruleId = optional("ruleId", (v, p) => r.uuid(v, p));
  return {
    targetSpec: optional("targets", (v, p) => readTargets(r, v, p)),
    targetVersion: optional("targetVersion", (v, p) => r.string(v, p, { nonEmpty: true })),
    startTime,
    endTime,
    description: optional("description", (v, p) => r.string(v, p)) ?? "",
    queueOptions: optional("queue", (v, p) => readQueue(r, v, p)),
    ruleId: ruleId === undefined ? undefined : { id: ruleId },
    subTargets:
      optional("subTargets", (v, p) =>
        r
          .list(v, p)
          ?.map((s, i) => r.string(s, `${p}[${i}]`))
          .filter((s) => s !== undefined),
      ) ?? [],
    overrideReadinessCheck: optional("overrideReadinessCheck", (v, p) => r.boolean(v, p)) ?? false,
    overrideVersionCheck: optional("overrideVersionCheck", (v, p) => r.boolean(v, p)) ?? false,
    authenticationData: optional("authentication", (v, p) => readAuthentication(r, v, p)),
  };
}

function readQueue(r: Reader, value: unknown, path: string): pb.QueueOptions | undefined {
  const obj = r.object(value, path, ["strategy", "timeout"]);
  if (obj === undefined) return undefined;
  let conflictStrategy = pb.ConflictStrategy.CONFLICT_STRATEGY_UNSPECIFIED;
  if (obj.strategy !== undefined) {
    const s = typeof obj.strategy === "string" ? obj.strategy.toLowerCase() : "";
    if (s === "queue") conflictStrategy = pb.ConflictStrategy.CONFLICT_STRATEGY_QUEUE;
    else if (s === "reject") conflictStrategy = pb.ConflictStrategy.CONFLICT_STRATEGY_REJECT;
    else r.add(join(path, "strategy"), `must be queue or reject (got ${describe(obj.strategy)})`);
  }
  let queueTimeoutSeconds = 0;
  if (obj.timeout !== undefined) {
    const ns = r.duration(obj.timeout, join(path, "timeout"));
    if (ns !== undefined) {
      if (ns % 1_000_000_000n !== 0n)
        r.add(join(path, "timeout"), `must be whole seconds (got ${describe(obj.timeout)})`);
      else queueTimeoutSeconds = Number(ns / 1_000_000_000n);
    }
  }
  return { conflictStrategy, queueTimeoutSeconds };
}

function readAuthentication(
  r: Reader,
  value: unknown,
  path: string,
): pb.FirmwareAuthenticationData | undefined {
  const obj = r.object(value, path, ["shared", "perComponent"]);
  if (obj === undefined) return undefined;
  const kind = r.exactlyOne(obj, path, ["shared", "perComponent"]);
  if (kind === "shared") {
    const shared = r.string(obj.shared, join(path, "shared"), { nonEmpty: true });
    return shared === undefined ? undefined : { value: { $case: "shared", value: shared } };
  }
  if (kind === "perComponent") {
    const p = join(path, "perComponent");
    const per = r.object(obj.perComponent, p, ["compute", "nvswitch", "powershelf"]);
    if (per === undefined) return undefined;
    const field = (k: string) =>
      per[k] === undefined ? undefined : r.string(per[k], join(p, k), { nonEmpty: true });
    return {
      value: {
        $case: "perComponent",
        value: { compute: field("compute"), nvswitch: field("nvswitch"), powershelf: field("powershelf") },
      },
    };
  }
  return undefined;
}

function readTargets(r: Reader, value: unknown, path: string): pb.OperationTargetSpec | undefined {
  const obj = r.object(value, path, ["racks", "components", "nvlDomains"]);
  if (obj === undefined) return undefined;
  const kind = r.exactlyOne(obj, path, ["racks", "components", "nvlDomains"]);
  if (kind === undefined) return undefined;
  const p = join(path, kind);
  const list = r.list(obj[kind], p, { nonEmpty: true });
  if (list === undefined) return undefined;
  if (kind === "racks") {
    const targets = list.map((v, i) => readRackTarget(r, v, `${p}[${i}]`));
    return { targets: { $case: "racks", value: { targets: targets.filter((t) => t !== undefined) } } };
  }
  if (kind === "nvlDomains") {
    const targets = list.map((v, i) => readDomainTarget(r, v, `${p}[${i}]`));
    return { targets: { $case: "nvlDomains", value: { targets: targets.filter((t) => t !== undefined) } } };
  }
  const targets = list.map((v, i) => readComponentTarget(r, v, `${p}[${i}]`));
  return { targets: { $case: "components", value: { targets: targets.filter((t) => t !== undefined) } } };
}

/** A rack by name (`rack-a01` alone is a name), `{ id }`, `{ name }` or `{ externalId }`. */
function readRackTarget(r: Reader, value: unknown, path: string): pb.RackTarget | undefined {
  if (typeof value === "string") {
    const name = r.string(value, path, { nonEmpty: true });
    return name === undefined
      ? undefined
      : { identifier: { $case: "name", value: name }, componentTypes: [] };
  }
  const obj = r.object(value, path, ["id", "name", "externalId", "componentTypes"]);
  if (obj === undefined) return undefined;
  const componentTypeList =
    obj.componentTypes === undefined ? [] : readTypes(r, obj.componentTypes, join(path, "componentTypes"));
  const kind = r.exactlyOne(obj, path, ["id", "name", "externalId"]);
  let identifier: pb.RackTarget["identifier"];
  if (kind === "id") {
    const id = r.uuid(obj.id, join(path, "id"));
    if (id !== undefined) identifier = { $case: "id", value: { id } };
  } else if (kind === "name" || kind === "externalId") {
    const text = r.string(obj[kind], join(path, kind), { nonEmpty: true });
    if (text !== undefined) identifier = { $case: kind, value: text };
  }
  return identifier === undefined || componentTypeList === undefined
    ? undefined
    : { identifier, componentTypes: componentTypeList };
}

function readDomainTarget(r: Reader, value: unknown, path: string): pb.NVLDomainTarget | undefined {
  if (typeof value === "string") {
    const name = r.string(value, path, { nonEmpty: true });
    return name === undefined
      ? undefined
      : { identifier: { $case: "name", value: name }, componentTypes: [] };
  }
  const obj = r.object(value, path, ["id", "name", "componentTypes"]);
  if (obj === undefined) return undefined;
  const componentTypeList =
    obj.componentTypes === undefined ? [] : readTypes(r, obj.componentTypes, join(path, "componentTypes"));
  const kind = r.exactlyOne(obj, path, ["id", "name"]);
  let identifier: pb.NVLDomainTarget["identifier"];
  if (kind === "id") {
    const id = r.uuid(obj.id, join(path, "id"));
    if (id !== undefined) identifier = { $case: "id", value: { id } };
  } else if (kind === "name") {
    const name = r.string(obj.name, join(path, "name"), { nonEmpty: true });
    if (name !== undefined) identifier = { $case: "name", value: name };
  }
  return identifier === undefined || componentTypeList === undefined
    ? undefined
    : { identifier, componentTypes: componentTypeList };
}

/** A component by `{ id }` or by `{ type, externalId }` (its serial number, say). */
function readComponentTarget(r: Reader, value: unknown, path: string): pb.ComponentTarget | undefined {
  const obj = r.object(value, path, ["id", "type", "externalId"]);
  if (obj === undefined) return undefined;
  if (obj.id !== undefined) {
    if (obj.type !== undefined || obj.externalId !== undefined) {
      r.add(path, "must set either id, or type and externalId, not both");
      return undefined;
    }
    const id = r.uuid(obj.id, join(path, "id"));
    return id === undefined ? undefined : { identifier: { $case: "id", value: { id } } };
  }
  if (obj.type === undefined || obj.externalId === undefined) {
    r.add(path, "must set id, or both type and externalId");
    return undefined;
  }
  const type = r.componentType(obj.type, join(path, "type"));
  const externalId = r.string(obj.externalId, join(path, "externalId"), { nonEmpty: true });
  return type === undefined || externalId === undefined
    ? undefined
    : { identifier: { $case: "external", value: { type, id: externalId } } };
}

// ---------------------------------------------------------------------------------------------
// Back to the readable form

/**
 * A configuration in run-file form: what `run get` and `run create --dry-run` print, and what
 * `parseRunFile` reads back to the same request (generated seeds and defaulted durations included,
 * so a dry run's output can be saved and replayed to freeze exactly the same plan).
 * Authentication data never comes back from the service, so it never appears here.
 */
export function runFileFromConfig(
  name: string,
  description: string,
  config: pb.OperationRunConfiguration | undefined,
): Record<string, unknown> {
  const doc: Record<string, unknown> = { name };
  if (description !== "") doc.description = description;
  const sel = config?.selector?.selector;
  if (sel?.$case === "percentage") {
    doc.selector = compact({ percentage: `${sel.value.percentage}%`, seed: sel.value.seed || undefined });
  }
  const o = config?.options;
  if (o !== undefined) {
    const options: Record<string, unknown> = { maxConcurrentTargets: o.maxConcurrentTargets };
    options.gates = (o.safetyPolicy?.gates ?? []).map(gateToFile);
    const plan = o.phasePolicy?.plan;
    if (plan?.$case === "equal") options.phases = { equal: plan.value.phaseCount };
    if (plan?.$case === "percentage")
      options.phases = { percentage: plan.value.phases.map((p) => p.percentage) };
    if (plan?.$case === "count") options.phases = { count: plan.value.phases.map((p) => p.count) };
    if (o.phasePolicy?.advancePolicy !== undefined)
      options.autoAdvance = o.phasePolicy.advancePolicy.autoAdvance;
    const ordering = o.orderingPolicy?.ordering;
    if (ordering?.$case === "random")
      options.ordering = { random: compact({ seed: ordering.value.seed || undefined }) };
    if (ordering?.$case === "physicalLocation") {
      options.ordering = { physicalLocation: orderingStrategies.name(ordering.value.strategy) };
    }
    const retry = o.conflictPolicy?.strategy;
    if (retry?.$case === "retry") {
      options.conflictRetry = compact({
        retryTimeout: durationText(retry.value.retryTimeout),
        initialRetryDelay: durationText(retry.value.initialRetryDelay),
        maxRetryDelay: durationText(retry.value.maxRetryDelay),
      });
    }
    doc.options = options;
  }
  const op = config?.operation;
  if (op !== undefined) {
    const operation: Record<string, unknown> = {};
    if (op.operation?.$case === "upgradeFirmware")
      operation.upgradeFirmware = firmwareToFile(op.operation.value);
    const scope = op.targetScope;
    if (scope !== undefined && scope.excludeOperationRunIds.length > 0) {
      operation.excludeRuns = scope.excludeOperationRunIds.map((u) => u.id);
    }
    const filter = scope?.defaultScopeComponentFilter?.filter;
    if (filter?.$case === "types") {
      operation.defaultScope = { componentTypes: filter.value.types.map((t) => componentTypes.name(t)) };
    }
    if (filter?.$case === "components") {
      operation.defaultScope = {
        componentIds: filter.value.targets.map((t) =>
          t.identifier?.$case === "id" ? t.identifier.value.id : `${t.identifier?.value.id}`,
        ),
      };
    }
    doc.operation = operation;
  }
  return doc;
}

function durationText(d: pb.OperationRunConflictRetryPolicy["retryTimeout"]): string | undefined {
  return d === undefined || durationToNs(d) === 0n ? undefined : formatDuration(d);
}

function gateToFile(g: pb.OperationRunSafetyGate): Record<string, unknown> {
  const scopeName = (s: pb.OperationRunSafetyGateScope) =>
    s === pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN
      ? "cumulativeRun"
      : "currentPhase";
  if (g.gate?.$case === "failureCount") {
    return { failureCount: g.gate.value.failureThresholdCount, scope: scopeName(g.gate.value.scope) };
  }
  if (g.gate?.$case === "failureRate") {
    return { failureRate: `${g.gate.value.failureThresholdPercent}%`, scope: scopeName(g.gate.value.scope) };
  }
  return {};
}

function firmwareToFile(fw: pb.UpgradeFirmwareRequest): Record<string, unknown> {
  const out: Record<string, unknown> = compact({
    targetVersion: fw.targetVersion,
    description: fw.description || undefined,
    startTime: fw.startTime?.toISOString(),
    endTime: fw.endTime?.toISOString(),
    ruleId: fw.ruleId?.id,
    subTargets: fw.subTargets.length > 0 ? fw.subTargets : undefined,
    overrideReadinessCheck: fw.overrideReadinessCheck || undefined,
    overrideVersionCheck: fw.overrideVersionCheck || undefined,
  });
  if (fw.queueOptions !== undefined) {
    const q = fw.queueOptions;
    out.queue = compact({
      strategy:
        q.conflictStrategy === pb.ConflictStrategy.CONFLICT_STRATEGY_QUEUE
          ? "queue"
          : q.conflictStrategy === pb.ConflictStrategy.CONFLICT_STRATEGY_REJECT
            ? "reject"
            : undefined,
      timeout: q.queueTimeoutSeconds > 0 ? `${q.queueTimeoutSeconds}s` : undefined,
    });
  }
  const spec = fw.targetSpec?.targets;
  const types = (list: pb.ComponentType[]) =>
    list.length === 0 ? undefined : list.map((t) => componentTypes.name(t));
  if (spec?.$case === "racks") {
    out.targets = {
      racks: spec.value.targets.map((t) => {
        const id = t.identifier;
        const ref =
          id?.$case === "id"
            ? { id: id.value.id }
            : id?.$case === "externalId"
              ? { externalId: id.value }
              : { name: id?.value };
        return compact({ ...ref, componentTypes: types(t.componentTypes) });
      }),
    };
  }
  if (spec?.$case === "nvlDomains") {
    out.targets = {
      nvlDomains: spec.value.targets.map((t) =>
        compact({
          ...(t.identifier?.$case === "id" ? { id: t.identifier.value.id } : { name: t.identifier?.value }),
          componentTypes: types(t.componentTypes),
        }),
      ),
    };
  }
  if (spec?.$case === "components") {
    out.targets = {
      components: spec.value.targets.map((t) =>
        t.identifier?.$case === "external"
          ? { type: componentTypes.name(t.identifier.value.type), externalId: t.identifier.value.id }
          : { id: t.identifier?.value.id },
      ),
    };
  }
  return out;
}

function compact<T extends Record<string, unknown>>(obj: T): T {
  for (const key of Object.keys(obj)) if (obj[key] === undefined) delete obj[key];
  return obj;
}
