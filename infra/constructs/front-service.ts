/**
 * The gRPC front's deployment: its VPC (a new one, or the one context names), its image (the
 * Dockerfile's build, or a registry image context names) and the Fargate service behind the
 * internal load balancer (grpc-front.ts) with the environment src/service/grpc-front.ts reads.
 * Built in the stack's own scope, under the ids the stack has always given them; the stack grants
 * the task role what it calls.
 */
import type { Stack } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import { Platform } from "aws-cdk-lib/aws-ecr-assets";
import * as ecs from "aws-cdk-lib/aws-ecs";
import { ENV } from "../../src/service/config.js";
import { type FlowDeployConfig, PROJECT_ROOT } from "../config.js";
import { GRPC_PORT, GrpcFront } from "./grpc-front.js";

/** Used when context certificateArn is absent: synth works, a deploy fails at the listener. */
export const PLACEHOLDER_CERTIFICATE_ID = "00000000-0000-0000-0000-000000000000";

export interface FrontServiceProps {
  readonly config: FlowDeployConfig;
  readonly prod: boolean;
  /** The build's variables (table prefix, version, commit, time). */
  readonly build: Record<string, string>;
  readonly childTaskArn: string;
  readonly childTaskSettings: Record<string, string>;
  readonly secretsKeyArn: string;
  readonly requestMacKeyArn: string;
  readonly imageBucket: Record<string, string>;
  /** The name of the access policy's SSM parameter (checked at synth); absent: the front refuses to start. */
  readonly accessPolicyParameter: string | undefined;
  readonly checksEnvironment: Record<string, string>;
}

export function frontService(stack: Stack, props: FrontServiceProps): GrpcFront {
  const {
    config,
    prod,
    build,
    childTaskArn,
    childTaskSettings,
    imageBucket,
    accessPolicyParameter,
    checksEnvironment,
  } = props;
  const vpc = config.vpcId
    ? ec2.Vpc.fromLookup(stack, "Vpc", { vpcId: config.vpcId })
    : newVpc(stack, prod, config.customResources);
  const image = config.containerImage
    ? ecs.ContainerImage.fromRegistry(config.containerImage)
    : ecs.ContainerImage.fromAsset(PROJECT_ROOT, {
        file: "Dockerfile",
        platform: Platform.LINUX_ARM64,
        buildArgs: {
          FLOW_VERSION: config.version,
          FLOW_GIT_COMMIT: config.gitCommit,
          FLOW_BUILD_TIME: config.buildTime,
        },
      });
  return new GrpcFront(stack, "Front", {
    vpc,
    image,
    certificateArn:
      config.certificateArn ??
      `arn:${stack.partition}:acm:${config.region}:${config.account}:certificate/${PLACEHOLDER_CERTIFICATE_ID}`,
    clientCidr: config.clientCidr ?? vpc.vpcCidrBlock,
    environment: {
      ...build,
      [ENV.childTaskStateMachineArn]: childTaskArn,
      ...childTaskSettings,
      [ENV.secretsKmsKeyId]: props.secretsKeyArn,
      [ENV.requestMacKmsKeyId]: props.requestMacKeyArn,
      ...imageBucket,
      [ENV.port]: String(GRPC_PORT),
      [ENV.host]: "0.0.0.0",
      // The internal ALB terminates the client's TLS with the deployment's certificate and
      // speaks TLS again to the task, which makes its own key and certificate at start; the
      // task's security group admits only the load balancer.
      [ENV.tlsSelfSigned]: "true",
      // Server reflection reads the .proto files the image ships (Dockerfile: WORKDIR /app, COPY proto).
      [ENV.protoDir]: "/app/proto",
      // Off unless the deployment asks (context serverReflection=true): it advertises the admin service.
      ...(config.serverReflection ? { [ENV.serverReflection]: "true" } : {}),
      // With a trust store the listener verifies client certificates and forwards the verified
      // one; only then may the task read it as the caller (it is reachable through the ALB alone).
      ...(config.mtlsTrustStoreArn === undefined ? {} : { [ENV.trustLoadBalancerClientCert]: "true" }),
      // Who may do what: the parameter's name, not the policy, so a changed policy is a new
      // parameter version the tasks poll, not a new task definition. Without it the front
      // refuses to start (secure by default).
      ...(accessPolicyParameter === undefined ? {} : { [ENV.authzPolicyParameter]: accessPolicyParameter }),
      // The external health checks a rule may name (the front checks the names at create).
      ...checksEnvironment,
    },
    minTasks: config.serviceMinTasks,
    maxTasks: config.serviceMaxTasks,
    retain: prod,
    ...(config.mtlsTrustStoreArn === undefined ? {} : { trustStoreArn: config.mtlsTrustStoreArn }),
  });
}

function newVpc(stack: Stack, prod: boolean, customResources: boolean): ec2.Vpc {
  const vpc = new ec2.Vpc(stack, "Vpc", {
    maxAzs: 2,
    // A Lambda-backed custom resource (the feature flag in cdk.json turns it on).
    restrictDefaultSecurityGroup: customResources,
    natGateways: prod ? 2 : 1,
    subnetConfiguration: [
      { name: "public", subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
      { name: "private", subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 22 },
    ],
    // DynamoDB traffic from the tasks stays off the NAT gateways (cheaper, and no internet hop).
    gatewayEndpoints: { DynamoDb: { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB } },
  });
  vpc.addFlowLog("FlowLog", { trafficType: ec2.FlowLogTrafficType.REJECT });
  return vpc;
}
