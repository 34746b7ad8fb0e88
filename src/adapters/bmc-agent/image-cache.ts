/**
 * The agent's firmware image cache on disk (the ImageCache port): each image downloaded once, by
 * its digest, for every BMC of the rack that asks for it, at once or later.
 *
 * The download streams to `<dir>/<sha256>.part` while hashing; only when the digest (and the
 * size, when the command gave one) matches is the file renamed to `<dir>/<sha256>.bin`, so a file
 * under its final name is always verified and no BMC ever gets a byte of an unverified image.
 * A mismatch removes the partial file and is remembered for that URL and digest: every command
 * for it fails with IMAGE_DIGEST_MISMATCH without downloading again (a new URL, say a freshly
 * presigned one, is tried afresh). Memory stays at one stream buffer per download, whatever the
 * image's size.
 */
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import http from "node:http";
import https from "node:https";
import { join } from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { type ImageCache, ImageError, type LocalImage } from "../../app/ports/bmc-agent.js";

const SHA256 = /^[0-9a-f]{64}$/;

export interface DiskImageCacheOptions {
  dir: string;
  /** No byte for this long ends the download. Default 60 s. */
  idleTimeoutMs?: number;
}

export class DiskImageCache implements ImageCache {
  private readonly pending = new Map<string, Promise<LocalImage>>();
  private downloadCount = 0;
  private byteCount = 0;

  constructor(private readonly options: DiskImageCacheOptions) {}

  /** Downloads started, and bytes received, since the cache was made. */
  get downloads(): { count: number; bytes: number } {
    return { count: this.downloadCount, bytes: this.byteCount };
  }

  fetch(image: { uri: string; sha256: string; size?: number }): Promise<LocalImage> {
    const sha256 = image.sha256.toLowerCase();
    if (!SHA256.test(sha256)) {
      return Promise.reject(new ImageError("IMAGE_UNVERIFIED", "image.sha256 is not 64 hex digits"));
    }
    const key = `${sha256} ${image.uri}`;
    let pending = this.pending.get(key);
    if (pending === undefined) {
      pending = this.load(image.uri, sha256, image.size);
      this.pending.set(key, pending);
      // A failure other than a verified mismatch (the store unreachable) may be tried again.
      pending.catch((err: unknown) => {
        if (!(err instanceof ImageError && err.code === "IMAGE_DIGEST_MISMATCH")) this.pending.delete(key);
      });
    }
    return pending;
  }

  private async load(uri: string, sha256: string, size: number | undefined): Promise<LocalImage> {
    const path = join(this.options.dir, `${sha256}.bin`);
    const cached = await stat(path).catch(() => undefined);
    if (cached !== undefined) return { path, size: cached.size, sha256 };
    await mkdir(this.options.dir, { recursive: true });
    const part = join(this.options.dir, `${sha256}.${process.pid}.${Date.now().toString(36)}.part`);
    try {
      const { digest, bytes } = await this.download(uri, part);
      if (digest !== sha256 || (size !== undefined && bytes !== size)) {
        throw new ImageError(
          "IMAGE_DIGEST_MISMATCH",
          `the image at ${redactQuery(uri)} is ${bytes} bytes with sha256 ${digest}; the command says ${
            size === undefined ? "" : `${size} bytes with `
          }sha256 ${sha256}`,
        );
      }
      await rename(part, path);
      return { path, size: bytes, sha256 };
    } finally {
      await rm(part, { force: true });
    }
  }

  private download(uri: string, file: string): Promise<{ digest: string; bytes: number }> {
    let url: URL;
    try {
      url = new URL(uri);
    } catch {
      return Promise.reject(new ImageError("IMAGE_UNAVAILABLE", "image.uri is not a URL"));
    }
    if (url.protocol !== "https:" && url.protocol !== "http:") {
      return Promise.reject(
        new ImageError(
          "IMAGE_UNAVAILABLE",
          `image.uri scheme ${url.protocol} is not one the agent fetches (https, http)`,
        ),
      );
    }
    this.downloadCount += 1;
    const lib = url.protocol === "https:" ? https : http;
    return new Promise((resolve, reject) => {
      const req = lib.get(url, (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return reject(
            new ImageError(
              "IMAGE_UNAVAILABLE",
              `GET ${redactQuery(uri)} answered ${res.statusCode ?? "no status"}`,
            ),
          );
        }
        const hash = createHash("sha256");
        let bytes = 0;
        const count = new Transform({
          transform: (chunk: Buffer, _enc, done) => {
            hash.update(chunk);
            bytes += chunk.length;
            this.byteCount += chunk.length;
            done(null, chunk);
          },
        });
        pipeline(res, count, createWriteStream(file)).then(
          () => resolve({ digest: hash.digest("hex"), bytes }),
          (err: Error) =>
            reject(
              new ImageError("IMAGE_UNAVAILABLE", `downloading ${redactQuery(uri)} failed: ${err.message}`),
            ),
        );
      });
      req.setTimeout(this.options.idleTimeoutMs ?? 60_000, () => req.destroy(new Error("no data in time")));
      req.on("error", (err) =>
        reject(new ImageError("IMAGE_UNAVAILABLE", `downloading ${redactQuery(uri)} failed: ${err.message}`)),
      );
    });
  }
}

/** A presigned URL's query is a credential: errors and logs show the URL without it. */
export function redactQuery(uri: string): string {
  const at = uri.indexOf("?");
  return at < 0 ? uri : `${uri.slice(0, at)}?[redacted]`;
}
