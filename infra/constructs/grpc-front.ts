/**
 * The gRPC front: the server of src/service/grpc-main.ts on ECS Fargate (ARM64), behind an
 * INTERNAL Application Load Balancer that speaks gRPC end to end.
 *
 *   client ──TLS, HTTP/2──► ALB :443 (HTTPS listener, ACM certificate)
 *          ──TLS, HTTP/2 (gRPC), inside the VPC──► task :50051 (the task's own certificate)
 *
 * The target group has protocol version GRPC, so the ALB keeps HTTP/2 to the targets and checks
 * them with the gRPC health service (`/grpc.health.v1.Health/Check`, healthy = gRPC status 0).
 * The hop to the task is TLS too (target group protocol HTTPS): each task serves a key and a
 * self-signed certificate it makes at start (FLOW_TLS_SELF_SIGNED, src/adapters/grpc/self-signed.ts),
 * which the ALB, as it does for every target, uses without verifying; requests (firmware and BMC
 * credentials among them) never cross the VPC in clear. With a trust store
 * the listener does mutual TLS in verify mode: only clients with a certificate the store's CAs
 * signed get through, and the task learns who they are from the certificate the ALB forwards.
 */
import { Duration, RemovalPolicy, Token } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as ecs from "aws-cdk-lib/aws-ecs";
import * as elbv2 from "aws-cdk-lib/aws-elasticloadbalancingv2";
import * as logs from "aws-cdk-lib/aws-logs";
import * as s3 from "aws-cdk-lib/aws-s3";
import { Construct } from "constructs";
import { acknowledge } from "../nag.js";

export const GRPC_PORT = 50051;
export const GRPC_HEALTH_CHECK_PATH = "/grpc.health.v1.Health/Check";

export interface GrpcFrontProps {
  readonly vpc: ec2.IVpc;
  readonly image: ecs.ContainerImage;
  readonly certificateArn: string;
  /** Who may connect on 443. */
  readonly clientCidr: string;
  readonly environment: Record<string, string>;
  readonly minTasks: number;
  readonly maxTasks: number;
  readonly retain: boolean;
  /**
   * An ELBv2 trust store: the listener requires client certificates it signed and verifies them
   * (mutual TLS, verify mode), and forwards the verified leaf to the task
   * (`X-Amzn-Mtls-Clientcert-Leaf`), which records its subject as the caller of run changes.
   */
  readonly trustStoreArn?: string;
}

export class GrpcFront extends Construct {
  readonly cluster: ecs.Cluster;
  readonly service: ecs.FargateService;
  readonly taskDefinition: ecs.FargateTaskDefinition;
  readonly loadBalancer: elbv2.ApplicationLoadBalancer;
  readonly targetGroup: elbv2.ApplicationTargetGroup;
  readonly listener: elbv2.ApplicationListener;

  constructor(scope: Construct, id: string, props: GrpcFrontProps) {
    super(scope, id);
    const removalPolicy = props.retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const privateSubnets = { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS };

    this.cluster = new ecs.Cluster(this, "Cluster", {
      vpc: props.vpc,
      containerInsightsV2: ecs.ContainerInsights.ENABLED,
    });
    this.taskDefinition = new ecs.FargateTaskDefinition(this, "Task", {
      cpu: 512,
      memoryLimitMiB: 1024,
      runtimePlatform: {
        cpuArchitecture: ecs.CpuArchitecture.ARM64,
        operatingSystemFamily: ecs.OperatingSystemFamily.LINUX,
      },
    });
    const logGroup = new logs.LogGroup(this, "Logs", {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy,
    });
    this.taskDefinition.addContainer("grpc", {
      image: props.image,
      essential: true,
      readonlyRootFilesystem: true,
      environment: props.environment,
      portMappings: [{ containerPort: GRPC_PORT, name: "grpc", protocol: ecs.Protocol.TCP }],
      logging: ecs.LogDrivers.awsLogs({ logGroup, streamPrefix: "grpc" }),
      stopTimeout: Duration.seconds(30),
    });

    const serviceSg = new ec2.SecurityGroup(this, "ServiceSg", {
      vpc: props.vpc,
      description: "gRPC tasks: reachable from the load balancer only",
      allowAllOutbound: true,
    });
    this.service = new ecs.FargateService(this, "Service", {
      cluster: this.cluster,
      taskDefinition: this.taskDefinition,
      desiredCount: props.minTasks,
      vpcSubnets: privateSubnets,
      assignPublicIp: false,
      securityGroups: [serviceSg],
      circuitBreaker: { enable: true, rollback: true },
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
      healthCheckGracePeriod: Duration.seconds(30),
    });
    const scaling = this.service.autoScaleTaskCount({
      minCapacity: props.minTasks,
      maxCapacity: props.maxTasks,
    });
    scaling.scaleOnCpuUtilization("Cpu", {
      targetUtilizationPercent: 60,
      scaleInCooldown: Duration.minutes(5),
      scaleOutCooldown: Duration.minutes(1),
    });

    const albSg = new ec2.SecurityGroup(this, "AlbSg", {
      vpc: props.vpc,
      description: "internal gRPC load balancer: 443 from the client CIDR",
      allowAllOutbound: false,
    });
    albSg.addIngressRule(ec2.Peer.ipv4(props.clientCidr), ec2.Port.tcp(443), "gRPC clients (TLS)");
    this.loadBalancer = new elbv2.ApplicationLoadBalancer(this, "Alb", {
      vpc: props.vpc,
      internetFacing: false,
      vpcSubnets: privateSubnets,
      securityGroup: albSg,
      dropInvalidHeaderFields: true,
      http2Enabled: true,
    });
    const accessLogs = new s3.Bucket(this, "AlbAccessLogs", {
      // ALB access logs support SSE-S3 only (not KMS).
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [{ expiration: Duration.days(90) }],
      removalPolicy,
      autoDeleteObjects: false,
    });
    this.loadBalancer.logAccessLogs(accessLogs, "alb");

    this.targetGroup = new elbv2.ApplicationTargetGroup(this, "Grpc", {
      vpc: props.vpc,
      targetType: elbv2.TargetType.IP,
      port: GRPC_PORT,
      // TLS to the task as well; the health check follows the target group's protocol.
      protocol: elbv2.ApplicationProtocol.HTTPS,
      protocolVersion: elbv2.ApplicationProtocolVersion.GRPC,
      deregistrationDelay: Duration.seconds(30),
      healthCheck: {
        enabled: true,
        protocol: elbv2.Protocol.HTTPS,
        path: GRPC_HEALTH_CHECK_PATH,
        healthyGrpcCodes: "0",
        interval: Duration.seconds(15),
        timeout: Duration.seconds(5),
        healthyThresholdCount: 2,
        unhealthyThresholdCount: 3,
      },
    });
    this.service.attachToApplicationTargetGroup(this.targetGroup);
    this.listener = this.loadBalancer.addListener("Https", {
      port: 443,
      protocol: elbv2.ApplicationProtocol.HTTPS,
      certificates: [elbv2.ListenerCertificate.fromArn(props.certificateArn)],
      sslPolicy: elbv2.SslPolicy.RECOMMENDED_TLS,
      open: false,
      defaultTargetGroups: [this.targetGroup],
      ...(props.trustStoreArn === undefined
        ? {}
        : {
            mutualAuthentication: {
              mutualAuthenticationMode: elbv2.MutualAuthenticationMode.VERIFY,
              trustStore: elbv2.TrustStore.fromTrustStoreArn(this, "TrustStore", props.trustStoreArn),
            },
          }),
    });
    this.loadBalancer.connections.allowTo(serviceSg, ec2.Port.tcp(GRPC_PORT), "ALB to gRPC tasks");

    acknowledge(
      accessLogs,
      "This bucket holds the load balancer's access logs; server access logging for the log bucket itself would only log the log writes.",
      "AwsSolutions-S1",
    );
    acknowledge(
      this.taskDefinition,
      "The environment holds names and ARNs only (table prefix, state machine ARN, function name, key ARN, port, build facts); no secret is passed in the environment.",
      "AwsSolutions-ECS2",
    );
    acknowledge(
      this.taskDefinition.obtainExecutionRole(),
      "ecr:GetAuthorizationToken (pulling the image built from Dockerfile) supports no resource-level permissions.",
      "AwsSolutions-IAM5[Resource::*]",
    );
    if (Token.isUnresolved(props.clientCidr)) {
      acknowledge(
        albSg,
        "Ingress is the VPC's own CIDR (a CloudFormation reference cdk-nag cannot evaluate), not 0.0.0.0/0; the load balancer is internal.",
        "AwsSolutions-EC23",
      );
    }
  }
}
