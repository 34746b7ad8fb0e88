/**
 * The rule file (`flowctl rule create -f FILE`): an operation rule in YAML or JSON, read with the
 * run file's reader (every problem with its key path, unknown keys refused). The service checks
 * the rules about rules (one UPDATE_FIRMWARE per stage, a type in one stage, …) and answers with
 * every violation at once; this file only maps the readable form onto the request:
 *
 *   name: compute-first
 *   description: trays before switches
 *   readinessTimeout: 5m                 # optional: how long to wait for components to be ready
 *   stages:
 *     - name: compute
 *       componentTypes: [COMPUTE]
 *       maxParallel: 9                   # optional; 0 or absent: the deployment's
 *       steps:
 *         - action: verify-reachability
 *         - action: update-firmware
 *           timeout: 20m                 # optional; absent: the deployment's
 *           retry: { maxRetries: 2, interval: 30s, backoffRate: 2 }
 *         - action: verify-version
 *         - action: sleep
 *           duration: 1m
 *         - action: check-health
 *           externalCheck: dcgm-diag         # optional: the deployment's external health check
 *           externalCheckTimeout: 30m        # optional; absent: the check's configured timeout
 *         - action: ac-cycle
 *           acScope: rack                    # optional: rack (through the power shelf) or tray (default)
 *         - action: wait-bring-up
 */
import { readFile } from "node:fs/promises";
import type * as pb from "../src/gen/flow/v1/flow.js";
import * as admin from "../src/gen/flowadmin/v1/admin.js";
import { UsageError } from "./errors.js";
import { yaml } from "./output.js";
import { describe, type FileProblem, join, type Obj, Reader } from "./run-file/reader.js";

const ACTIONS: Record<string, admin.RuleAction> = {
  UPDATE_FIRMWARE: admin.RuleAction.RULE_ACTION_UPDATE_FIRMWARE,
  VERIFY_VERSION: admin.RuleAction.RULE_ACTION_VERIFY_VERSION,
  VERIFY_REACHABILITY: admin.RuleAction.RULE_ACTION_VERIFY_REACHABILITY,
  SLEEP: admin.RuleAction.RULE_ACTION_SLEEP,
  RESET_BMC: admin.RuleAction.RULE_ACTION_RESET_BMC,
  POWER_CYCLE_HOST: admin.RuleAction.RULE_ACTION_POWER_CYCLE_HOST,
  AC_CYCLE: admin.RuleAction.RULE_ACTION_AC_CYCLE,
  WAIT_BRING_UP: admin.RuleAction.RULE_ACTION_WAIT_BRING_UP,
  CHECK_HEALTH: admin.RuleAction.RULE_ACTION_CHECK_HEALTH,
};

/** The names a rule file writes its actions with: `update-firmware`, `ac-cycle`, … */
const ACTION_NAMES = Object.keys(ACTIONS)
  .map((a) => a.toLowerCase().replace(/_/g, "-"))
  .join(", ");

/** The rule's fields of a CreateOperationRuleRequest (id and expected version are flags). */
export type RuleFields = Omit<admin.CreateOperationRuleRequest, "id" | "expectedVersion">;

/** Whole seconds of a duration (`90s`, `5m`); a fraction of a second is refused. */
function seconds(r: Reader, value: unknown, path: string): number | undefined {
  const ns = r.duration(value, path);
  if (ns === undefined) return undefined;
  if (ns % 1_000_000_000n !== 0n) return r.add(path, `must be whole seconds (got ${describe(value)})`);
  return Number(ns / 1_000_000_000n);
}

/** `acScope: rack | tray` (any case): what an AC_CYCLE step power-cycles. */
function readAcScope(r: Reader, raw: unknown, path: string): admin.AcCycleScope | undefined {
  const name = typeof raw === "string" ? raw.trim().toLowerCase() : "";
  if (name === "rack") return admin.AcCycleScope.AC_CYCLE_SCOPE_RACK;
  if (name === "tray") return admin.AcCycleScope.AC_CYCLE_SCOPE_TRAY;
  return r.add(path, `must be rack or tray (got ${describe(raw)})`);
}

function readStep(r: Reader, raw: unknown, path: string): admin.RuleStep | undefined {
  const o = r.object(raw, path, [
    "action",
    "timeout",
    "retry",
    "duration",
    "externalCheck",
    "externalCheckTimeout",
    "acScope",
  ]);
  if (o === undefined) return undefined;
  const name = typeof o.action === "string" ? o.action.trim().toUpperCase().replace(/-/g, "_") : "";
  const action = ACTIONS[name];
  if (action === undefined) {
    r.add(join(path, "action"), `must be one of ${ACTION_NAMES} (got ${describe(o.action)})`);
  }
  let retry: admin.RuleRetry | undefined;
  if (o.retry !== undefined) {
    const p = join(path, "retry");
    const ro = r.object(o.retry, p, ["maxRetries", "interval", "backoffRate"]);
    if (ro !== undefined) {
      const maxRetries =
        typeof ro.maxRetries === "number"
          ? ro.maxRetries
          : r.add(join(p, "maxRetries"), `must be a number (got ${describe(ro.maxRetries)})`);
      const interval = ro.interval === undefined ? 0 : seconds(r, ro.interval, join(p, "interval"));
      const backoffRate =
        ro.backoffRate === undefined
          ? 1
          : typeof ro.backoffRate === "number"
            ? ro.backoffRate
            : r.add(join(p, "backoffRate"), `must be a number (got ${describe(ro.backoffRate)})`);
      if (maxRetries !== undefined && interval !== undefined && backoffRate !== undefined) {
        retry = { maxRetries, intervalSeconds: interval, backoffRate };
      }
    }
  }
  const timeoutSeconds = o.timeout === undefined ? 0 : seconds(r, o.timeout, join(path, "timeout"));
  const sleepSeconds = o.duration === undefined ? 0 : seconds(r, o.duration, join(path, "duration"));
  const externalCheck =
    o.externalCheck === undefined ? undefined : r.string(o.externalCheck, join(path, "externalCheck"));
  const externalCheckTimeoutSeconds =
    o.externalCheckTimeout === undefined
      ? undefined
      : seconds(r, o.externalCheckTimeout, join(path, "externalCheckTimeout"));
  const acScope = o.acScope === undefined ? undefined : readAcScope(r, o.acScope, join(path, "acScope"));
  if (action === undefined || timeoutSeconds === undefined || sleepSeconds === undefined) return undefined;
  return {
    ...(acScope === undefined ? {} : { acScope }),
    action,
    timeoutSeconds,
    retry,
    sleepSeconds,
    ...(externalCheck === undefined ? {} : { externalCheck }),
    ...(externalCheckTimeoutSeconds === undefined ? {} : { externalCheckTimeoutSeconds }),
  };
}

function readStage(r: Reader, raw: unknown, path: string): admin.RuleStage | undefined {
  const o = r.object(raw, path, ["name", "componentTypes", "maxParallel", "steps"]);
  if (o === undefined) return undefined;
  const name = o.name === undefined ? "" : r.string(o.name, join(path, "name"));
  const types = r.list(o.componentTypes, join(path, "componentTypes"));
  const componentTypes: pb.ComponentType[] = [];
  types?.forEach((t, i) => {
    const type = r.componentType(t, `${join(path, "componentTypes")}[${i}]`);
    if (type !== undefined) componentTypes.push(type);
  });
  let maxParallel: number | undefined = 0;
  if (o.maxParallel !== undefined) {
    maxParallel =
      typeof o.maxParallel === "number"
        ? o.maxParallel
        : r.add(join(path, "maxParallel"), `must be a number (got ${describe(o.maxParallel)})`);
  }
  const stepsRaw = r.list(o.steps, join(path, "steps"));
  const steps = (stepsRaw ?? []).flatMap((s, k) => readStep(r, s, `${join(path, "steps")}[${k}]`) ?? []);
  if (name === undefined || maxParallel === undefined) return undefined;
  return { name, componentTypes, maxParallel, steps };
}

export function readRuleFile(r: Reader, raw: unknown): RuleFields | undefined {
  const o: Obj | undefined = r.object(raw, "", ["name", "description", "readinessTimeout", "stages"]);
  if (o === undefined) return undefined;
  const name = r.string(o.name, "name", { nonEmpty: true });
  const description = o.description === undefined ? "" : r.string(o.description, "description");
  const readinessTimeoutSeconds =
    o.readinessTimeout === undefined ? 0 : seconds(r, o.readinessTimeout, "readinessTimeout");
  const stagesRaw = r.list(o.stages, "stages");
  const stages = (stagesRaw ?? []).flatMap((s, i) => readStage(r, s, `stages[${i}]`) ?? []);
  if (name === undefined || description === undefined || readinessTimeoutSeconds === undefined)
    return undefined;
  return { name, description, stages, readinessTimeoutSeconds };
}

function invalid(path: string, problems: readonly FileProblem[]): UsageError {
  return new UsageError(
    `${path} is not a valid rule file:\n${problems.map((p) => `${path}: ${p.path}: ${p.rule}`).join("\n")}`,
  );
}

export async function loadRuleFile(path: string): Promise<RuleFields> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw invalid(path, [{ path: "(root)", rule: `cannot be read: ${(err as Error).message}` }]);
  }
  const { isDocument, parseDocument } = yaml();
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (!isDocument(doc) || doc.errors.length > 0) {
    const problems = doc.errors.map((e) => ({
      path: "(root)",
      rule: `not valid YAML or JSON: ${e.message.split("\n")[0]?.trim() ?? ""}`,
    }));
    throw invalid(path, problems);
  }
  const r = new Reader();
  const fields = readRuleFile(r, doc.toJS({ maxAliasCount: 100 }) as unknown);
  if (r.problems.length > 0 || fields === undefined) throw invalid(path, r.problems);
  return fields;
}
