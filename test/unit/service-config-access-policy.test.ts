/**
 * The front's access policy settings (src/service/config-front.ts): the SSM parameter the CDK app names,
 * exclusive with a file or the document, and how often it is polled, with the exact messages.
 */
import { describe, expect, it } from "vitest";
import { readGrpcFrontConfig } from "../../src/service/config-front.js";
import { ConfigError } from "../../src/service/env-reader.js";

const base = {
  FLOW_TABLE_PREFIX: "Flow-prod-",
  FLOW_CHILD_TASK_STATE_MACHINE_ARN:
    "arn:aws:states:eu-west-1:123456789012:stateMachine:Flow-prod-child-task",
  FLOW_IMAGE_BUCKET: "flow-prod-images",
};
const PARAMETER = "/Flow-prod/access-policy";

function problems(read: () => unknown): readonly string[] {
  try {
    read();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error("expected a ConfigError");
}

describe("front configuration: the access policy's SSM parameter and poll interval", () => {
  it("a parameter by name or ARN, polled every 30 s by default", () => {
    expect(readGrpcFrontConfig({ ...base, FLOW_AUTHZ_POLICY_PARAMETER: PARAMETER })).toMatchObject({
      accessPolicy: { parameter: PARAMETER },
      accessPolicyPollSeconds: 30,
    });
    const arn = "arn:aws:ssm:eu-west-1:123456789012:parameter/Flow-prod/access-policy";
    expect(
      readGrpcFrontConfig({ ...base, FLOW_AUTHZ_POLICY_PARAMETER: arn, FLOW_AUTHZ_POLICY_POLL_SECONDS: "5" }),
    ).toMatchObject({ accessPolicy: { parameter: arn }, accessPolicyPollSeconds: 5 });
  });

  it("a name with other characters is refused, naming the variable and the rule (and then no policy is given)", () => {
    expect(
      problems(() => readGrpcFrontConfig({ ...base, FLOW_AUTHZ_POLICY_PARAMETER: "/flow/policy v2" })),
    ).toEqual([
      'FLOW_AUTHZ_POLICY_PARAMETER: must be an SSM parameter name or ARN (letters, digits, _ . - /) (got "/flow/policy v2")',
      // A refused value counts as no policy at all: the front has none it may start with.
      "FLOW_AUTHZ_POLICY: is required (or FLOW_AUTHZ_POLICY_TEXT, or FLOW_AUTHZ_POLICY_PARAMETER): the front serves no call without an access policy",
    ]);
  });

  it.each(["4", "3601", "30s", "-1"])("poll seconds %s is refused: 5 to 3600 whole seconds", (value) => {
    expect(
      problems(() =>
        readGrpcFrontConfig({
          ...base,
          FLOW_AUTHZ_POLICY_PARAMETER: PARAMETER,
          FLOW_AUTHZ_POLICY_POLL_SECONDS: value,
        }),
      ),
    ).toEqual([`FLOW_AUTHZ_POLICY_POLL_SECONDS: must be an integer from 5 to 3600 (got "${value}")`]);
  });

  it("the poll interval applies to a file too", () => {
    expect(
      readGrpcFrontConfig({
        ...base,
        FLOW_AUTHZ_POLICY: "/etc/flow/policy.yaml",
        FLOW_AUTHZ_POLICY_POLL_SECONDS: "60",
      }),
    ).toMatchObject({ accessPolicy: { file: "/etc/flow/policy.yaml" }, accessPolicyPollSeconds: 60 });
  });

  it("one policy only: a parameter with a file or the document is refused, every one named", () => {
    expect(
      problems(() =>
        readGrpcFrontConfig({
          ...base,
          FLOW_AUTHZ_POLICY_PARAMETER: PARAMETER,
          FLOW_AUTHZ_POLICY: "/p.yaml",
        }),
      ),
    ).toEqual(["FLOW_AUTHZ_POLICY: and FLOW_AUTHZ_POLICY_PARAMETER are exclusive: give one policy"]);
    expect(
      problems(() =>
        readGrpcFrontConfig({
          ...base,
          FLOW_AUTHZ_POLICY_PARAMETER: PARAMETER,
          FLOW_AUTHZ_POLICY: "/p.yaml",
          FLOW_AUTHZ_POLICY_TEXT: "bindings: []",
        }),
      ),
    ).toEqual([
      "FLOW_AUTHZ_POLICY: and FLOW_AUTHZ_POLICY_TEXT, FLOW_AUTHZ_POLICY_PARAMETER are exclusive: give one policy",
    ]);
  });

  it("none at all: refused, naming the three ways to give one", () => {
    expect(problems(() => readGrpcFrontConfig(base))).toEqual([
      "FLOW_AUTHZ_POLICY: is required (or FLOW_AUTHZ_POLICY_TEXT, or FLOW_AUTHZ_POLICY_PARAMETER): the front serves no call without an access policy",
    ]);
  });
});
