/**
 * Deployment configuration, read once from CDK context (`cdk.json` or `-c key=value`), validated,
 * failing with the context key's name in the message. Nothing here reads the environment or calls
 * AWS: `cdk synth` must work offline with no credentials, so every account-specific fact is either
 * context or a dummy that a deploy would reject (and a warning says so, see `placeholders`).
 *
 * Example: `npx cdk deploy -c stage=prod -c account=123456789012 -c region=eu-west-1 \
 *   -c certificateArn=arn:aws:acm:eu-west-1:123456789012:certificate/… -c vpcId=vpc-0abc…`
 */
import { fileURLToPath } from "node:url";
import {
  DEFAULT_CHILD_TASK_SETTINGS,
  DEPLOYMENT_SETTING_BOUNDS,
  type DeploymentChildTaskSettings,
} from "../src/app/child-task/settings.js";

/** The project root (…/infra/config.ts → …/). Entry files, the Dockerfile and ASL are found from here. */
export const PROJECT_ROOT = fileURLToPath(new URL("..", import.meta.url));

/** Used for synth only. A deploy with them fails at the first API call, which is the point. */
export const DUMMY_ACCOUNT = "000000000000";
export const DUMMY_REGION = "us-east-1";

export interface FlowDeployConfig {
  /** `prod` retains data and turns on deletion protection; anything else is disposable. */
  readonly stage: string;
  readonly account: string;
  readonly region: string;
  /** Look up an existing VPC instead of creating one (needs real account/region and credentials). */
  readonly vpcId?: string;
  /** ACM certificate for the internal load balancer's HTTPS listener. */
  readonly certificateArn?: string;
  /** Who may reach the load balancer on 443; defaults to the VPC's CIDR. */
  readonly clientCidr?: string;
  /**
   * A prebuilt image URI (e.g. an ECR image pushed by your pipeline). When set the stack uses it
   * instead of building `Dockerfile` at deploy time; the unit tests set it so they need no Docker
   * build context staging.
   */
  readonly containerImage?: string;
  /** The account's IoT data endpoint; looked up by a custom resource at deploy time when absent. */
  readonly iotDataEndpoint?: string;
  /**
   * Lambda-backed custom resources (the IoT endpoint look-up, the new VPC's default-security-group
   * lock-down). `false` leaves every one out, for an endpoint that cannot invoke a Lambda while it
   * deploys (moto without Docker: `npm run deploy:local`); it then needs `iotDataEndpoint`.
   */
  readonly customResources: boolean;
  /** Alarm notifications: an e-mail address subscribed to a new topic, or an existing topic. */
  readonly alarmEmail?: string;
  readonly alarmTopicArn?: string;
  /**
   * The EventBridge bus the run history is published to (a name in this account and region, or a
   * bus ARN); default `default`, the account's default bus. The publisher may put events on it
   * and on no other.
   */
  readonly eventBusName: string;
  /**
   * An ELBv2 trust store (its ARN): the load balancer's listener then requires and verifies client
   * certificates (mutual TLS, verify mode) and forwards the verified one, which the front records
   * as the caller of run changes. Absent: no client certificates; callers are the names clients
   * declare, recorded as unauthenticated.
   */
  readonly mtlsTrustStoreArn?: string;
  /**
   * Context `serverReflection` (default false): the front serves gRPC server reflection, which
   * lists every service (the admin service included) to any client that reaches the listener.
   */
  readonly serverReflection: boolean;
  /**
   * Context `legacyBmcTopics` (default false): the child task also publishes every BMC command on
   * the v1–v3 per-component topic (`flow/bmc/<id>/cmd`), for BMCs not yet behind a rack-scoped
   * agent; its role may then publish there too. Each command is published twice.
   */
  readonly legacyBmcTopics: boolean;
  /**
   * The access policy file (who may do what, docs/security.md), context `accessPolicyFile`: the
   * stack checks it at synth (every problem named) and hands its text to the front's task
   * definition; a changed policy is a new revision, rolled out task by task. Absent: the front
   * refuses to start (secure by default), and synth warns.
   */
  readonly accessPolicyFile?: string;
  /**
   * The external health checks file (JSON by name, each a `lambda` ARN or an `https` endpoint,
   * docs/firmware-policy.md), context `externalChecksFile`: checked at synth, its text handed to
   * the front (the names a rule may use) and to task-steps (which may invoke the Lambdas). Absent:
   * none, and a rule naming one is refused.
   */
  readonly externalChecksFile?: string;
  /** Dispatcher tick inside the once-a-minute ticker; must divide into a minute sensibly (1–60 s). */
  readonly tickIntervalSeconds: number;
  readonly serviceMinTasks: number;
  readonly serviceMaxTasks: number;
  /** Reported by the Version RPC. */
  readonly version: string;
  readonly gitCommit: string;
  /**
   * When this build was made, RFC 3339 (context `buildTime`; default: the synth's own time, which
   * is when the Lambda bundles and the front's image are built).
   */
  readonly buildTime: string;
  /**
   * The child task's deployment settings (context `childTaskMaxParallel`, `updateTimeoutSeconds`,
   * `preflightTimeoutSeconds`, `readinessTimeoutSeconds`), checked against the bounds the
   * deployables check at cold start.
   */
  readonly childTask: DeploymentChildTaskSettings;
  /** Context keys that fell back to a synth-only placeholder (warned about, not an error). */
  readonly placeholders: readonly string[];
}

export class DeployConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DeployConfigError";
  }
}

/** What `node.tryGetContext` returns: strings from `-c`, any JSON value from cdk.json. */
export type ContextReader = (key: string) => unknown;

function optionalString(read: ContextReader, key: string): string | undefined {
  const value = read(key);
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") throw new DeployConfigError(`context ${key} must be a string`);
  return value.trim() || undefined;
}

function rfc3339(read: ContextReader, key: string): string | undefined {
  const value = optionalString(read, key);
  if (value === undefined) return undefined;
  if (
    !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value) ||
    Number.isNaN(Date.parse(value))
  ) {
    throw new DeployConfigError(
      `context ${key} must be an RFC 3339 time such as 2026-12-04T21:00:00Z (got ${value})`,
    );
  }
  return value;
}

function flag(read: ContextReader, key: string, fallback: boolean): boolean {
  const value = read(key);
  if (value === undefined || value === null || value === "") return fallback;
  // `-c key=false` arrives as the string "false", cdk.json as a JSON boolean.
  if (value === true || value === "true") return true;
  if (value === false || value === "false") return false;
  throw new DeployConfigError(`context ${key} must be true or false, got ${String(value)}`);
}

function integer(read: ContextReader, key: string, fallback: number, min: number, max: number): number {
  const raw = read(key);
  if (raw === undefined || raw === null || raw === "") return fallback;
  const value = typeof raw === "number" ? raw : Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new DeployConfigError(
      `context ${key} must be an integer from ${min} to ${max}, got ${String(raw)}`,
    );
  }
  return value;
}

/** The context key of each child-task deployment setting. */
export const CHILD_TASK_CONTEXT: Readonly<Record<keyof DeploymentChildTaskSettings, string>> = {
  maxParallel: "childTaskMaxParallel",
  updateTimeoutSeconds: "updateTimeoutSeconds",
  preflightTimeoutSeconds: "preflightTimeoutSeconds",
  readinessTimeoutSeconds: "readinessTimeoutSeconds",
};

function childTaskSettings(read: ContextReader): DeploymentChildTaskSettings {
  const value = (key: keyof DeploymentChildTaskSettings): number => {
    const [min, max] = DEPLOYMENT_SETTING_BOUNDS[key];
    return integer(read, CHILD_TASK_CONTEXT[key], DEFAULT_CHILD_TASK_SETTINGS[key], min, max);
  };
  return {
    maxParallel: value("maxParallel"),
    updateTimeoutSeconds: value("updateTimeoutSeconds"),
    preflightTimeoutSeconds: value("preflightTimeoutSeconds"),
    readinessTimeoutSeconds: value("readinessTimeoutSeconds"),
  };
}

export function readDeployConfig(read: ContextReader, now: () => number = Date.now): FlowDeployConfig {
  const placeholders: string[] = [];
  const stage = optionalString(read, "stage") ?? "dev";
  if (!/^[a-z][a-z0-9-]{0,15}$/.test(stage)) {
    throw new DeployConfigError(`context stage must match ^[a-z][a-z0-9-]{0,15}$, got ${stage}`);
  }
  let account = optionalString(read, "account");
  if (!account) {
    account = DUMMY_ACCOUNT;
    placeholders.push("account");
  } else if (!/^\d{12}$/.test(account)) {
    throw new DeployConfigError(`context account must be 12 digits, got ${account}`);
  }
  let region = optionalString(read, "region");
  if (!region) {
    region = DUMMY_REGION;
    placeholders.push("region");
  }
  const certificateArn = optionalString(read, "certificateArn");
  if (!certificateArn) placeholders.push("certificateArn");
  else if (!certificateArn.startsWith("arn:")) {
    throw new DeployConfigError(
      `context certificateArn must be an ACM certificate ARN, got ${certificateArn}`,
    );
  }
  const vpcId = optionalString(read, "vpcId");
  if (vpcId && placeholders.includes("account")) {
    throw new DeployConfigError(
      "context vpcId needs context account and region (the VPC is looked up there)",
    );
  }
  const iotDataEndpoint = optionalString(read, "iotDataEndpoint");
  const customResources = flag(read, "customResources", true);
  if (!customResources && !iotDataEndpoint) {
    throw new DeployConfigError(
      "context customResources=false needs context iotDataEndpoint (without it a custom resource looks the endpoint up)",
    );
  }
  const serviceMinTasks = integer(read, "serviceMinTasks", stage === "prod" ? 2 : 1, 1, 100);
  const serviceMaxTasks = integer(read, "serviceMaxTasks", stage === "prod" ? 6 : 2, 1, 100);
  if (serviceMaxTasks < serviceMinTasks) {
    throw new DeployConfigError(
      `context serviceMaxTasks (${serviceMaxTasks}) must be at least serviceMinTasks (${serviceMinTasks})`,
    );
  }
  const eventBusName = optionalString(read, "eventBusName") ?? "default";
  if (
    !/^([A-Za-z0-9._\-/]{1,256}|arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/[A-Za-z0-9._\-/]{1,256})$/.test(
      eventBusName,
    )
  ) {
    throw new DeployConfigError(
      `context eventBusName must be an EventBridge bus name or ARN, got ${eventBusName}`,
    );
  }
  const mtlsTrustStoreArn = optionalString(read, "mtlsTrustStoreArn");
  if (
    mtlsTrustStoreArn &&
    !/^arn:aws[a-z-]*:elasticloadbalancing:[a-z0-9-]+:\d{12}:truststore\/.+$/.test(mtlsTrustStoreArn)
  ) {
    throw new DeployConfigError(
      `context mtlsTrustStoreArn must be an ELBv2 trust store ARN (arn:aws:elasticloadbalancing:<region>:<account>:truststore/<name>/<id>), got ${mtlsTrustStoreArn}`,
    );
  }
  const accessPolicyFile = optionalString(read, "accessPolicyFile");
  const externalChecksFile = optionalString(read, "externalChecksFile");
  return {
    ...(accessPolicyFile === undefined ? {} : { accessPolicyFile }),
    ...(externalChecksFile === undefined ? {} : { externalChecksFile }),
    stage,
    account,
    region,
    vpcId,
    certificateArn,
    clientCidr: optionalString(read, "clientCidr"),
    containerImage: optionalString(read, "containerImage"),
    iotDataEndpoint,
    customResources,
    legacyBmcTopics: flag(read, "legacyBmcTopics", false),
    alarmEmail: optionalString(read, "alarmEmail"),
    alarmTopicArn: optionalString(read, "alarmTopicArn"),
    eventBusName,
    mtlsTrustStoreArn,
    serverReflection: flag(read, "serverReflection", false),
    tickIntervalSeconds: integer(read, "tickIntervalSeconds", 10, 1, 60),
    serviceMinTasks,
    serviceMaxTasks,
    version: optionalString(read, "version") ?? "0.1.0",
    gitCommit: optionalString(read, "gitCommit") ?? "unknown",
    buildTime: rfc3339(read, "buildTime") ?? new Date(now()).toISOString(),
    childTask: childTaskSettings(read),
    placeholders,
  };
}

export const isProd = (config: Pick<FlowDeployConfig, "stage">): boolean => config.stage === "prod";
