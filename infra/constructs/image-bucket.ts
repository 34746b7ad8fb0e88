/**
 * The firmware image catalog's bucket (docs/firmware-images.md): the image bytes; their records
 * are items in the Inventory table.
 *
 *   uploads/<upload id>   staged by a presigned PUT, verified and deleted by the front; what an
 *                         abandoned upload leaves expires after a day (lifecycle rule)
 *   images/<TYPE>/<sha256> the registered images, content-addressed, never overwritten with other
 *                         bytes (the key is their digest); read by BMCs through presigned GETs
 *
 * Versioned, SSE-S3 encrypted (a presigned GET needs no KMS grant for the BMC's download),
 * public access blocked, TLS only, server access logs to a bucket of their own. Grants per
 * principal, by prefix: the front presigns PUTs into uploads/ and verifies, copies and deletes
 * there, and may presign GETs of images/; the child task's steps presign GETs of images/ only.
 */
import { Duration, RemovalPolicy } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as s3 from "aws-cdk-lib/aws-s3";
import { Construct } from "constructs";
import { acknowledge, acknowledgeWildcardResources } from "../nag.js";

export interface FirmwareImageBucketProps {
  /** Production: the buckets (and every image) survive a stack deletion. */
  readonly retain: boolean;
}

export class FirmwareImageBucket extends Construct {
  readonly bucket: s3.Bucket;
  readonly accessLogs: s3.Bucket;

  constructor(scope: Construct, id: string, props: FirmwareImageBucketProps) {
    super(scope, id);
    const removalPolicy = props.retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    this.accessLogs = new s3.Bucket(this, "AccessLogs", {
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
      lifecycleRules: [{ expiration: Duration.days(365) }],
      removalPolicy,
    });
    acknowledge(
      this.accessLogs,
      "This bucket IS the image bucket's server access log destination; logging it again adds nothing.",
      "AwsSolutions-S1",
    );
    this.bucket = new s3.Bucket(this, "Bucket", {
      versioned: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      serverAccessLogsBucket: this.accessLogs,
      serverAccessLogsPrefix: "images/",
      lifecycleRules: [
        { id: "abandoned-uploads", prefix: "uploads/", expiration: Duration.days(1) },
        { id: "incomplete-multipart", abortIncompleteMultipartUploadAfter: Duration.days(1) },
        // A staged object deleted after verification leaves a delete marker and its bytes as a
        // noncurrent version: gone after a week.
        { id: "noncurrent", noncurrentVersionExpiration: Duration.days(7) },
      ],
      removalPolicy,
    });
  }

  private objects(prefix: "uploads" | "images"): string {
    return this.bucket.arnForObjects(`${prefix}/*`);
  }

  /**
   * The front: PUT (presigned for the client, and the verified copy), GET (the read-back digest,
   * HEAD, the copy's source) and DELETE under uploads/; PUT and GET under images/; ListBucket so
   * a missing staged object reads as 404, not 403.
   */
  grantUploads(role: iam.Role): void {
    const uploads = this.objects("uploads");
    const images = this.objects("images");
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: "FirmwareImageUploads",
        actions: ["s3:PutObject", "s3:GetObject", "s3:DeleteObject"],
        resources: [uploads],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: "FirmwareImagesRegister",
        actions: ["s3:PutObject", "s3:GetObject"],
        resources: [images],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: "FirmwareImageBucketList",
        actions: ["s3:ListBucket"],
        resources: [this.bucket.bucketArn],
      }),
    );
    acknowledgeWildcardResources(
      role,
      "Scoped wildcards: the staging prefix uploads/ (any upload id) and the registered images/ (any type and digest) of the firmware image bucket.",
      [uploads, images],
    );
  }

  /** The child task's steps: presigned GETs of registered images, nothing else. */
  grantDownloads(role: iam.Role): void {
    const images = this.objects("images");
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: "FirmwareImagesRead", actions: ["s3:GetObject"], resources: [images] }),
    );
    acknowledgeWildcardResources(
      role,
      "Scoped wildcard: the registered images/ of the firmware image bucket (any type and digest), read only.",
      [images],
    );
  }
}
