/** The admin service's operation rules both ways; the rules about rules are the domain's. */

import {
  DEFAULT_RULE_ID,
  type OperationRule,
  type RuleDefinition,
  type RuleInput,
  validateRule,
} from "../../../domain/operation-rules.js";
import type * as admin from "../../../gen/flowadmin/v1/admin.js";
import {
  acScopeFromProto,
  acScopeToProto,
  componentTypeToProto,
  ruleActionFromProto,
  ruleActionToProto,
} from "./enums.js";
import { componentTypesFromProto } from "./firmware-request.js";
import { decoding, validated } from "./violations.js";
import { msToDate, uuidToProto } from "./well-known.js";

/** CreateOperationRule → the validated definition and where it goes (every violation at once). */
export function createRuleFromProto(req: admin.CreateOperationRuleRequest): {
  definition: RuleDefinition;
  id?: string;
  expectedVersion?: number;
} {
  const decoded = decoding((v) => {
    const input: RuleInput = {
      name: req.name,
      description: req.description,
      readinessTimeoutSeconds: req.readinessTimeoutSeconds,
      stages: req.stages.map((stage, i) => ({
        name: stage.name,
        componentTypes: componentTypesFromProto(stage.componentTypes, `stages[${i}].component_types`, v),
        maxParallel: stage.maxParallel,
        steps: stage.steps.map((step, k) => ({
          action: ruleActionFromProto(step.action, `stages[${i}].steps[${k}].action`, v) ?? "UNKNOWN",
          timeoutSeconds: step.timeoutSeconds,
          sleepSeconds: step.sleepSeconds,
          ...(step.externalCheck === undefined ? {} : { externalCheck: step.externalCheck }),
          ...(step.externalCheckTimeoutSeconds === undefined
            ? {}
            : { externalCheckTimeoutSeconds: step.externalCheckTimeoutSeconds }),
          ...(step.acScope === undefined
            ? {}
            : {
                acScope: acScopeFromProto(step.acScope, `stages[${i}].steps[${k}].ac_scope`, v) ?? "UNKNOWN",
              }),
          ...(step.retry === undefined
            ? {}
            : {
                retry: {
                  maxRetries: step.retry.maxRetries,
                  intervalSeconds: step.retry.intervalSeconds,
                  backoffRate: step.retry.backoffRate,
                },
              }),
        })),
      })),
    };
    const id = req.id === undefined ? undefined : v.uuid("id", req.id.id);
    return { input, id };
  });
  const definition = validated(validateRule(decoded.input));
  return {
    definition,
    ...(decoded.id === undefined ? {} : { id: decoded.id }),
    ...(req.expectedVersion === undefined ? {} : { expectedVersion: req.expectedVersion }),
  };
}

export function ruleIdFromProto(req: admin.GetOperationRuleRequest): { id: string; version?: number } {
  return decoding((v) => {
    const id = v.uuid("id", req.id?.id ?? "") ?? "";
    if (req.version !== undefined && req.version < 1)
      v.add("version", `must be 1 or more (got ${req.version})`);
    return req.version === undefined ? { id } : { id, version: req.version };
  });
}

export function ruleToProto(rule: OperationRule): admin.OperationRule {
  return {
    id: uuidToProto(rule.id),
    version: rule.version,
    name: rule.name,
    description: rule.description,
    stages: rule.stages.map((stage) => ({
      name: stage.name,
      componentTypes: stage.componentTypes.map(componentTypeToProto),
      maxParallel: stage.maxParallel,
      steps: stage.steps.map((step) => ({
        action: ruleActionToProto(step.action),
        timeoutSeconds: step.timeoutSeconds,
        retry: step.retry && { ...step.retry },
        sleepSeconds: step.sleepSeconds,
        ...(step.externalCheck === undefined
          ? {}
          : {
              externalCheck: step.externalCheck.name,
              externalCheckTimeoutSeconds: step.externalCheck.timeoutSeconds,
            }),
        ...(step.acScope === undefined ? {} : { acScope: acScopeToProto(step.acScope) }),
      })),
    })),
    readinessTimeoutSeconds: rule.readinessTimeoutSeconds,
    createdAt: rule.createdAt === 0 ? undefined : msToDate(rule.createdAt),
    builtIn: rule.id === DEFAULT_RULE_ID,
  };
}
