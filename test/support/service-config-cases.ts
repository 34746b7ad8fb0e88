/**
 * Environments for the configuration readers' tests (src/service/config.ts): the deployment's
 * defaults, a valid gRPC front's and child-task steps' environment, and the problems a refused one
 * reports.
 */
import { expect } from "vitest";
import { DEFAULT_CHILD_TASK_SETTINGS } from "../../src/app/child-task/settings.js";
import { ENV } from "../../src/service/config.js";
import { ConfigError } from "../../src/service/env-reader.js";

export const DEPLOYMENT_DEFAULTS = {
  maxParallel: DEFAULT_CHILD_TASK_SETTINGS.maxParallel,
  updateTimeoutSeconds: DEFAULT_CHILD_TASK_SETTINGS.updateTimeoutSeconds,
  preflightTimeoutSeconds: DEFAULT_CHILD_TASK_SETTINGS.preflightTimeoutSeconds,
  readinessTimeoutSeconds: DEFAULT_CHILD_TASK_SETTINGS.readinessTimeoutSeconds,
};
export const CHILD_TASK_NAMES = [
  ENV.childTaskMaxParallel,
  ENV.updateTimeoutSeconds,
  ENV.preflightTimeoutSeconds,
  ENV.readinessTimeoutSeconds,
];
export const ARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:Flow-prod-child-task";
export const KEY_HEX = "0123456789abcdef".repeat(4);
export const POLICY = 'bindings: [{ subjects: ["cn:admin"], roles: [admin] }]';
export const front = {
  FLOW_TABLE_PREFIX: "Flow-prod-",
  FLOW_CHILD_TASK_STATE_MACHINE_ARN: ARN,
  FLOW_AUTHZ_POLICY_TEXT: POLICY,
  FLOW_IMAGE_BUCKET: "flow-prod-images",
};
/** The problems of a reading that must fail. */
export function problems(read: () => unknown): readonly string[] {
  try {
    read();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).name).toBe("ConfigError");
    expect((error as ConfigError).message).toBe((error as ConfigError).problems.join("; "));
    return (error as ConfigError).problems;
  }
  throw new Error("the reading succeeded");
}
