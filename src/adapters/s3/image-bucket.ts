/**
 * ImageObjectStore on S3: the firmware image catalog's bucket (infra/ creates it: versioned,
 * encrypted, public access blocked, TLS only; locally, moto serves it).
 *
 * URLs are SigV4 presigned: a PUT URL signs the Content-Length, so S3 refuses a body of another
 * size; a GET URL lets a BMC (or its agent) fetch one object with no credential of its own until
 * it expires. A URL signed with temporary credentials (a Lambda's or a task's role) stops working
 * when those credentials expire, whatever its own expiry (at most SigV4's 7 days), which bounds
 * the GET URLs of a very long wave to the role session's lifetime.
 *
 * Path-style addressing against a custom endpoint (moto, LocalStack): virtual-hosted names like
 * `bucket.127.0.0.1` do not resolve.
 */
import { createHash } from "node:crypto";
import type { Readable } from "node:stream";
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import type { ImageObjectStore } from "../../app/ports.js";
import { type AwsOptions, awsClientConfig } from "../aws-config.js";
import { isNamed } from "../dynamodb/db.js";

/** SigV4's longest presigned URL lifetime. */
export const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;

export function createS3Client(options: AwsOptions = {}): S3Client {
  const config = awsClientConfig(options);
  return new S3Client({ ...config, forcePathStyle: config.endpoint !== undefined });
}

export class S3ImageObjectStore implements ImageObjectStore {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
  ) {}

  presignPut(key: string, sizeBytes: number, expiresInSeconds: number): Promise<string> {
    return getSignedUrl(
      this.s3,
      new PutObjectCommand({ Bucket: this.bucket, Key: key, ContentLength: sizeBytes }),
      { expiresIn: bounded(expiresInSeconds), signableHeaders: new Set(["content-length"]) },
    );
  }

  presignGet(key: string, expiresInSeconds: number): Promise<string> {
    return getSignedUrl(this.s3, new GetObjectCommand({ Bucket: this.bucket, Key: key }), {
      expiresIn: bounded(expiresInSeconds),
    });
  }

  async sizeOf(key: string): Promise<number | undefined> {
    try {
      const out = await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return out.ContentLength;
    } catch (error) {
      if (isNamed(error, "NotFound") || isNamed(error, "NoSuchKey")) return undefined;
      throw error;
    }
  }

  /** Every object whose key starts with `prefix`, with its size (one listing per 1,000 keys). */
  async sizesUnder(prefix: string): Promise<Map<string, number>> {
    const sizes = new Map<string, number>();
    let ContinuationToken: string | undefined;
    do {
      const out = await this.s3.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken }),
      );
      for (const object of out.Contents ?? []) {
        if (object.Key !== undefined) sizes.set(object.Key, object.Size ?? 0);
      }
      ContinuationToken = out.IsTruncated ? out.NextContinuationToken : undefined;
    } while (ContinuationToken !== undefined);
    return sizes;
  }

  async sha256Of(key: string): Promise<string> {
    const out = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    const hash = createHash("sha256");
    for await (const chunk of out.Body as Readable) hash.update(chunk as Buffer);
    return hash.digest("hex");
  }

  async copy(from: string, to: string): Promise<void> {
    await this.s3.send(
      new CopyObjectCommand({
        Bucket: this.bucket,
        Key: to,
        CopySource: `${this.bucket}/${from.split("/").map(encodeURIComponent).join("/")}`,
      }),
    );
  }

  async delete(key: string): Promise<void> {
    await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  async deleteAllVersions(key: string): Promise<number> {
    let deleted = 0;
    // A version listing is by prefix: keep only this key's own versions (not images/X/<sha>…).
    for (;;) {
      const out = await this.s3.send(
        new ListObjectVersionsCommand({ Bucket: this.bucket, Prefix: key, MaxKeys: 1000 }),
      );
      const versions = [...(out.Versions ?? []), ...(out.DeleteMarkers ?? [])]
        .filter((v) => v.Key === key && v.VersionId !== undefined)
        .map((v) => ({ Key: key, VersionId: v.VersionId as string }));
      if (versions.length === 0) return deleted;
      const result = await this.s3.send(
        new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: versions, Quiet: true } }),
      );
      const failed = result.Errors ?? [];
      if (failed.length > 0) {
        throw new Error(
          `deleting ${key}: ${failed.length} version(s) not deleted: ${failed[0]?.Code}: ${failed[0]?.Message}`,
        );
      }
      deleted += versions.length;
    }
  }
}

function bounded(seconds: number): number {
  return Math.max(1, Math.min(MAX_PRESIGN_SECONDS, Math.ceil(seconds)));
}
