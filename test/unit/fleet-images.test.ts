/**
 * What the simulated fleet checks of an update's image (local/fleet-images.ts), against a real
 * HTTP server on loopback: the fields, then the fetched bytes' size and digest, one fetch per
 * image, and a failed fetch tried again before the update fails.
 */
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { imageChecker, missingImageFields } from "../../local/fleet-images.js";

const BYTES = Buffer.from("firmware bytes for the fleet");
const SHA = createHash("sha256").update(BYTES).digest("hex");
let server: Server;
let base = "";
const hits: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? "");
    if (req.url === "/image") res.end(BYTES);
    else {
      res.statusCode = 403;
      res.end("expired");
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("the fleet's image check", () => {
  it("names the missing fields; with both present, a fleet that does not download asks no more", async () => {
    expect(missingImageFields({ uri: "u" })).toEqual({
      code: "IMAGE_INVALID",
      message: "update command carries no image.sha256 and image.size",
    });
    expect(missingImageFields({ uri: "u", sha256: SHA })?.message).toBe(
      "update command carries no image.size",
    );
    expect(missingImageFields({ uri: "u", size: 1 })?.message).toBe("update command carries no image.sha256");
    expect(await imageChecker({ download: false }).check({ uri: `${base}/none`, sha256: SHA, size: 1 })).toBe(
      undefined,
    );
  });

  it("downloads once per image and accepts the matching bytes", async () => {
    const checker = imageChecker({ download: true });
    const image = { uri: `${base}/image`, sha256: SHA, size: BYTES.length };
    expect(await checker.check(image)).toBeUndefined();
    expect(await checker.check({ ...image, uri: `${base}/image?again` })).toBeUndefined();
    expect(checker.downloads()).toBe(1);
  });

  it("other bytes than the command says fail it: the size, then the digest", async () => {
    const checker = imageChecker({ download: true });
    expect(await checker.check({ uri: `${base}/image`, sha256: SHA, size: 5 })).toEqual({
      code: "IMAGE_SIZE_MISMATCH",
      message: `the image is ${BYTES.length} bytes, the command says 5`,
    });
    const other = "0".repeat(64);
    expect(await checker.check({ uri: `${base}/image`, sha256: other, size: BYTES.length })).toEqual({
      code: "IMAGE_DIGEST_MISMATCH",
      message: `the image hashes to sha256 ${SHA}, the command says ${other}`,
    });
  });

  it("a fetch refused (an expired URL) is tried again, then fails the update; the next command fetches anew", async () => {
    const checker = imageChecker({ download: true, attempts: 3, retryMs: 1 });
    const before = hits.length;
    const image = { uri: `${base}/expired`, sha256: SHA, size: BYTES.length };
    expect(await checker.check(image)).toEqual({
      code: "IMAGE_UNAVAILABLE",
      message: "fetching the image answered HTTP 403",
    });
    expect(hits.length - before).toBe(3);
    // The failed verdict is dropped as it settles (before the caller sees it): a later command tries again.
    expect(await checker.check({ ...image, uri: `${base}/image` })).toBeUndefined();
  });
});
