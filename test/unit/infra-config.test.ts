import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DUMMY_ACCOUNT, DUMMY_REGION, readDeployConfig } from "../../infra/config.js";
import { readChildTaskAsl } from "../../infra/constructs/child-task.js";
import { ticksPerMinute } from "../../infra/constructs/ticker.js";
import { flattenCfnReference } from "../../infra/nag.js";
import { standaloneAppProps } from "../../infra/standalone.js";

const ctx =
  (values: Record<string, unknown>) =>
  (key: string): unknown =>
    values[key];

describe("infra config: context → deploy config", () => {
  it("no context → stage dev, dummy account and region, and the placeholders listed", () => {
    const config = readDeployConfig(ctx({}));
    expect(config.stage).toBe("dev");
    expect(config.account).toBe(DUMMY_ACCOUNT);
    expect(config.region).toBe(DUMMY_REGION);
    expect(config.placeholders).toEqual(["account", "region", "certificateArn"]);
    expect(config.tickIntervalSeconds).toBe(10);
    expect([config.serviceMinTasks, config.serviceMaxTasks]).toEqual([1, 2]);
  });

  it("prod defaults to two to six tasks; numbers may come as strings from -c", () => {
    const config = readDeployConfig(
      ctx({ stage: "prod", account: "123456789012", region: "eu-west-1", tickIntervalSeconds: "5" }),
    );
    expect([config.serviceMinTasks, config.serviceMaxTasks]).toEqual([2, 6]);
    expect(config.tickIntervalSeconds).toBe(5);
    expect(config.placeholders).toEqual(["certificateArn"]);
  });

  it.each([
    [{ stage: "Prod!" }, "context stage must match ^[a-z][a-z0-9-]{0,15}$, got Prod!"],
    [{ account: "12345" }, "context account must be 12 digits, got 12345"],
    [{ tickIntervalSeconds: 0 }, "context tickIntervalSeconds must be an integer from 1 to 60, got 0"],
    [{ tickIntervalSeconds: "2.5" }, "context tickIntervalSeconds must be an integer from 1 to 60, got 2.5"],
    [{ certificateArn: "my-cert" }, "context certificateArn must be an ACM certificate ARN, got my-cert"],
    [{ vpcId: "vpc-1" }, "context vpcId needs context account and region (the VPC is looked up there)"],
    [
      { serviceMinTasks: 4, serviceMaxTasks: 3 },
      "context serviceMaxTasks (3) must be at least serviceMinTasks (4)",
    ],
    [{ alarmEmail: 42 }, "context alarmEmail must be a string"],
    [{ customResources: "no" }, "context customResources must be true or false, got no"],
    [
      { customResources: false },
      "context customResources=false needs context iotDataEndpoint (without it a custom resource looks the endpoint up)",
    ],
    [{ eventBusName: "my bus" }, "context eventBusName must be an EventBridge bus name or ARN, got my bus"],
    [
      { mtlsTrustStoreArn: "flow-clients" },
      "context mtlsTrustStoreArn must be an ELBv2 trust store ARN (arn:aws:elasticloadbalancing:<region>:<account>:truststore/<name>/<id>), got flow-clients",
    ],
    [{ childTaskMaxParallel: 0 }, "context childTaskMaxParallel must be an integer from 1 to 1000, got 0"],
    [
      { updateTimeoutSeconds: 86_401 },
      "context updateTimeoutSeconds must be an integer from 1 to 86400, got 86401",
    ],
    [
      { preflightTimeoutSeconds: "1m" },
      "context preflightTimeoutSeconds must be an integer from 1 to 86400, got 1m",
    ],
    [
      { readinessTimeoutSeconds: -5 },
      "context readinessTimeoutSeconds must be an integer from 1 to 86400, got -5",
    ],
    [
      { buildTime: "yesterday" },
      "context buildTime must be an RFC 3339 time such as 2026-12-04T21:00:00Z (got yesterday)",
    ],
    [
      { buildTime: "2026-13-45T99:00:00Z" },
      "context buildTime must be an RFC 3339 time such as 2026-12-04T21:00:00Z (got 2026-13-45T99:00:00Z)",
    ],
  ])("rejects %o", (values, message) => {
    expect(() => readDeployConfig(ctx(values))).toThrowError(message);
  });

  it("the run events go to the default bus unless a bus is named; mutual TLS at the load balancer only with a trust store", () => {
    expect(readDeployConfig(ctx({})).eventBusName).toBe("default");
    expect(readDeployConfig(ctx({})).mtlsTrustStoreArn).toBeUndefined();
    const arn = "arn:aws:events:eu-west-1:123456789012:event-bus/ops";
    expect(readDeployConfig(ctx({ eventBusName: arn })).eventBusName).toBe(arn);
    const store = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:truststore/flow/0123456789abcdef";
    expect(readDeployConfig(ctx({ mtlsTrustStoreArn: store })).mtlsTrustStoreArn).toBe(store);
  });

  it("the build time is the context's, else the synth's own time", () => {
    const synthAt = Date.parse("2026-12-04T21:30:00.000Z");
    expect(readDeployConfig(ctx({}), () => synthAt).buildTime).toBe("2026-12-04T21:30:00.000Z");
    expect(readDeployConfig(ctx({ buildTime: "2026-12-01T08:00:00+01:00" }), () => synthAt).buildTime).toBe(
      "2026-12-01T08:00:00+01:00",
    );
  });

  it("customResources: true unless false is given, as a JSON boolean or the string -c passes", () => {
    expect(readDeployConfig(ctx({})).customResources).toBe(true);
    expect(readDeployConfig(ctx({ customResources: "true" })).customResources).toBe(true);
    for (const off of [false, "false"]) {
      expect(readDeployConfig(ctx({ customResources: off, iotDataEndpoint: "x" })).customResources).toBe(
        false,
      );
    }
  });

  it("serverReflection: off unless the context turns it on; anything but a boolean refused", () => {
    expect(readDeployConfig(ctx({})).serverReflection).toBe(false);
    for (const on of [true, "true"])
      expect(readDeployConfig(ctx({ serverReflection: on })).serverReflection).toBe(true);
    expect(() => readDeployConfig(ctx({ serverReflection: "yes" }))).toThrow(
      "context serverReflection must be true or false, got yes",
    );
  });

  it("legacyBmcTopics: off unless the context turns it on; anything but a boolean refused", () => {
    expect(readDeployConfig(ctx({})).legacyBmcTopics).toBe(false);
    for (const on of [true, "true"])
      expect(readDeployConfig(ctx({ legacyBmcTopics: on })).legacyBmcTopics).toBe(true);
    expect(() => readDeployConfig(ctx({ legacyBmcTopics: "yes" }))).toThrow(
      "context legacyBmcTopics must be true or false, got yes",
    );
  });

  it("without the CLI, the app gets cdk.json's context and ./cdk.out; under the CLI, nothing", () => {
    const standalone = standaloneAppProps({});
    expect(standalone.context).toMatchObject({ stage: "dev", tickIntervalSeconds: 10 });
    expect(standalone.outdir).toMatch(/cdk\.out$/);
    expect(standaloneAppProps({ CDK_OUTDIR: "/tmp/x" })).toEqual({});
  });
});

describe("ticker: passes per minute", () => {
  it.each([
    [10, 6],
    [7, 9],
    [60, 1],
    [1, 60],
    [15, 4],
  ])("interval %i s → %i passes", (interval, ticks) => {
    expect(ticksPerMinute(interval)).toBe(ticks);
  });

  it("rejects 0 and 61 seconds", () => {
    expect(() => ticksPerMinute(0)).toThrowError(
      "ticker interval must be an integer from 1 to 60 seconds, got 0",
    );
    expect(() => ticksPerMinute(61)).toThrowError(
      "ticker interval must be an integer from 1 to 60 seconds, got 61",
    );
  });
});

describe("child-task ASL: read and checked at synth", () => {
  const dir = mkdtempSync(join(tmpdir(), "flow-asl-"));
  const write = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it("a missing file names the path and the placeholder", () => {
    const path = join(dir, "absent.asl.json");
    expect(() => readChildTaskAsl(path)).toThrowError(
      `child-task state machine definition not found at ${path}: write state-machines/child-task.asl.json (its Lambda resource as the placeholder \${TaskStepsFunctionArn}) before synthesizing`,
    );
  });

  it("invalid JSON, no States, and no placeholder are each an error", () => {
    const bad = write("bad.json", "{");
    expect(() => readChildTaskAsl(bad)).toThrowError(`${bad} is not valid JSON`);
    const noStates = write("nostates.json", '{"StartAt":"A"}');
    expect(() => readChildTaskAsl(noStates)).toThrowError(
      `${noStates} is not a state machine definition (no StartAt/States)`,
    );
    const noPlaceholder = write(
      "noph.json",
      '{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:lambda:x","End":true}}}',
    );
    expect(() => readChildTaskAsl(noPlaceholder)).toThrowError(
      `${noPlaceholder} never uses the placeholder \${TaskStepsFunctionArn}`,
    );
  });

  it("a good file comes back as compact JSON of the same value", () => {
    const value = {
      StartAt: "A",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the ASL placeholder, literal by design
      States: { A: { Type: "Task", Resource: "${TaskStepsFunctionArn}", End: true } },
    };
    const path = write("good.json", JSON.stringify(value, null, 2));
    expect(JSON.parse(readChildTaskAsl(path))).toEqual(value);
  });
});

describe("cdk-nag finding ids: flattened like cdk-nag flattens them", () => {
  it("GetAtt, Ref, Join and Sub", () => {
    expect(
      flattenCfnReference({ "Fn::Join": ["", [{ "Fn::GetAtt": ["DataRuns1", "Arn"] }, "/index/*"]] }),
    ).toBe("<DataRuns1.Arn>/index/*");
    expect(
      flattenCfnReference({
        "Fn::Join": [":", ["arn", { Ref: "AWS::Partition" }, "states", "execution", "x:*"]],
      }),
    ).toBe("arn:<AWS::Partition>:states:execution:x:*");
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a CloudFormation Fn::Sub string, literal by design
    expect(flattenCfnReference({ "Fn::Sub": "arn:${AWS::Partition}:iot" })).toBe("arn:<AWS::Partition>:iot");
    expect(flattenCfnReference("*")).toBe("*");
  });
});
