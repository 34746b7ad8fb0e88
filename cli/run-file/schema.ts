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
 *       - failureRate: 20%                 #   1..100 of the planned racks
 *       - observedFailureRate: { percent: 50, minFinished: 5, scope: currentPhase }
 *                                          #   1..100 of the finished racks, once minFinished (default 5) have
 *     phases: { percentage: [10, 30, 60] } # or { equal: 3 } or { count: [2, 3] }; default one phase
 *                                          # + minSoak: 30s, minSoakPerPhase: [1h, 0s] (soaks.ts)
 *     autoAdvance: false
 *     ordering: { random: { seed: x } }    # default random with a generated seed
 *     conflictRetry: { retryTimeout: 1h, initialRetryDelay: 30s, maxRetryDelay: 5m }
 *     maintenanceWindows: [{ cron: "0 2 * * *", duration: 2h }]   # claim only inside one (UTC)
 *     failureDomainSpread: { domain: row, maxInFlight: 1 }   # or nvlDomain, or attribute + attribute: name
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
 *   run.yaml: options.gates[1]: must set exactly one of failureCount, failureRate, observedFailureRate
 *
 * Unknown keys are refused (a typo such as `maxConcurentTargets` must not silently vanish). The
 * rules checked here are the ones a file can break on its own; what needs the inventory (an empty
 * plan, a phase with zero racks) is left to the service, whose answer flowctl prints field by field.
 */

import * as pb from "../../src/gen/flow/v1/flow.js";
import { nsToDuration } from "../durations.js";
import { failureDomainNames, gateScopeNames, orderingStrategies } from "../names.js";
import { readFirmware, readTypes } from "./firmware.js";
import { describe, join, type Obj, type Reader } from "./reader.js";
import { readSoaks, SOAK_KEYS } from "./soaks.js";
import { readMaintenanceWindows } from "./windows.js";

const TOP_KEYS = ["name", "description", "selector", "options", "operation"] as const;

export function readRequest(r: Reader, root: unknown): pb.CreateOperationRunRequest | undefined {
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
    // Not part of the run file: `flowctl run create` sets one per invocation.
    clientRequestId: "",
    retry: undefined,
    rollback: undefined,
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
  "maintenanceWindows",
  "failureDomainSpread",
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
  const phases =
    obj.phases === undefined ? undefined : r.object(obj.phases, join(path, "phases"), PHASE_KEYS);
  const plan = phases === undefined ? undefined : readPhases(r, phases, join(path, "phases"));
  const soaks = phases === undefined ? {} : readSoaks(r, phases, join(path, "phases"));
  const phasePolicy =
    plan === undefined && obj.autoAdvance === undefined && Object.keys(soaks).length === 0
      ? undefined
      : { plan, advancePolicy: { autoAdvance }, ...soaks };

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
    maintenanceWindows:
      obj.maintenanceWindows === undefined
        ? []
        : readMaintenanceWindows(r, obj.maintenanceWindows, join(path, "maintenanceWindows")),
    failureDomainSpread:
      obj.failureDomainSpread === undefined
        ? undefined
        : readSpread(r, obj.failureDomainSpread, join(path, "failureDomainSpread")),
  };
}

/** `{ domain: row, maxInFlight: 1 }`, or `{ domain: attribute, attribute: datacenter, maxInFlight: 2 }`. */
function readSpread(r: Reader, value: unknown, path: string): pb.OperationRunFailureDomainSpread | undefined {
  const obj = r.object(value, path, ["domain", "attribute", "maxInFlight"]);
  if (obj === undefined) return undefined;
  let domain: pb.OperationRunFailureDomainSpread_Domain | undefined;
  if (obj.domain === undefined)
    r.add(join(path, "domain"), `is required: ${failureDomainNames.names.join(", ")}`);
  else {
    domain = failureDomainNames.parse(obj.domain);
    if (domain === undefined)
      r.add(
        join(path, "domain"),
        `must be ${failureDomainNames.names.join(", ")} (got ${describe(obj.domain)})`,
      );
  }
  const attribute =
    obj.attribute === undefined
      ? ""
      : (r.string(obj.attribute, join(path, "attribute"), { nonEmpty: true }) ?? "");
  const maxInFlight =
    obj.maxInFlight === undefined
      ? r.add(join(path, "maxInFlight"), "is required (racks of one domain in flight at once, at least 1)")
      : r.positiveInt(obj.maxInFlight, join(path, "maxInFlight"));
  if (domain === undefined || maxInFlight === undefined) return undefined;
  return { domain, attribute, maxInFlight };
}

function readGate(r: Reader, value: unknown, path: string): pb.OperationRunSafetyGate | undefined {
  const obj = r.object(value, path, ["failureCount", "failureRate", "observedFailureRate", "scope"]);
  if (obj === undefined) return undefined;
  const scope = readScope(
    r,
    obj,
    path,
    pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE,
  );
  const kind = r.exactlyOne(obj, path, ["failureCount", "failureRate", "observedFailureRate"]);
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
  if (kind === "observedFailureRate") {
    const at = join(path, "observedFailureRate");
    const inner = obj.observedFailureRate as Obj | undefined;
    if (obj.scope !== undefined && inner?.scope !== undefined)
      r.add(join(at, "scope"), "is also set beside observedFailureRate: set it once");
    return readObservedRateGate(r, obj.observedFailureRate, at, scope);
  }
  return undefined;
}

/** A gate's `scope` key by name; `fallback` when absent (or after reporting a bad one). */
function readScope(
  r: Reader,
  obj: Obj,
  path: string,
  fallback: pb.OperationRunSafetyGateScope,
): pb.OperationRunSafetyGateScope {
  if (obj.scope === undefined) return fallback;
  const found = gateScopeNames.parse(obj.scope);
  if (found !== undefined) return found;
  r.add(join(path, "scope"), `must be ${gateScopeNames.names.join(" or ")} (got ${describe(obj.scope)})`);
  return fallback;
}

/** `{ percent: 50, minFinished: 5, scope: cumulativeRun }`; minFinished absent = the service's default. */
function readObservedRateGate(
  r: Reader,
  value: unknown,
  path: string,
  outerScope: pb.OperationRunSafetyGateScope,
): pb.OperationRunSafetyGate | undefined {
  const obj = r.object(value, path, ["percent", "minFinished", "scope"]);
  if (obj === undefined) return undefined;
  const scope = readScope(r, obj, path, outerScope);
  const percent =
    obj.percent === undefined
      ? r.add(join(path, "percent"), "is required (the failed share of finished racks that pauses the run)")
      : r.percentage(obj.percent, join(path, "percent"));
  const minFinished =
    obj.minFinished === undefined ? undefined : r.positiveInt(obj.minFinished, join(path, "minFinished"));
  if (percent === undefined || (obj.minFinished !== undefined && minFinished === undefined)) return undefined;
  return {
    gate: {
      $case: "observedFailureRate",
      value: {
        scope,
        failureThresholdPercent: percent,
        ...(minFinished === undefined ? {} : { minFinished }),
      },
    },
  };
}

const PLAN_KEYS = ["equal", "percentage", "count"] as const;
const PHASE_KEYS = [...PLAN_KEYS, ...SOAK_KEYS] as const;

function readPhases(r: Reader, obj: Obj, path: string): pb.OperationRunPhasePolicy["plan"] {
  // Soaks alone keep the default plan (one phase).
  if (PLAN_KEYS.every((k) => obj[k] === undefined) && SOAK_KEYS.some((k) => obj[k] !== undefined)) {
    return undefined;
  }
  const kind = r.exactlyOne(obj, path, PLAN_KEYS);
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
