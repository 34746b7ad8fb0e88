/**
 * What the simulated fleet checks of an update command's image: the command must carry
 * `image.sha256` and `image.size` (the product always sends them); with `download` on, the fleet
 * also fetches the image's presigned URL once per sha256 (a BMC agent's cache, for the whole
 * fleet) and checks the bytes' size and digest, streamed, before anything is "flashed".
 *
 *   no image.sha256        → IMAGE_INVALID  "update command carries no image.sha256"
 *   fetched 10 bytes of 12 → IMAGE_SIZE_MISMATCH
 *   other digest           → IMAGE_DIGEST_MISMATCH
 *   HTTP 403 (expired URL) → IMAGE_UNAVAILABLE, after FETCH_ATTEMPTS tries (a store that is
 *                            restarting, as moto after a crash, answers again within seconds)
 */
import { createHash } from "node:crypto";
import type { BmcError, FirmwareImageRef } from "../src/domain/bmc-protocol.js";

/** Tries of a fetch that failed (no answer, or not 200), 0.25 s apart, doubling: about 8 s in all. */
export const FETCH_ATTEMPTS = 6;

export interface ImageChecker {
  /** The error to fail the update with, or undefined when the image is fine. */
  check(image: FirmwareImageRef): Promise<BmcError | undefined>;
  /** Downloads made (one per distinct sha256 that was fetched successfully or not). */
  downloads(): number;
}

/** Only the command's fields: what a fleet that does not download checks. */
export function missingImageFields(image: FirmwareImageRef): BmcError | undefined {
  const missing = [
    image.sha256 === undefined ? "image.sha256" : "",
    image.size === undefined ? "image.size" : "",
  ]
    .filter((f) => f !== "")
    .join(" and ");
  return missing === ""
    ? undefined
    : { code: "IMAGE_INVALID", message: `update command carries no ${missing}` };
}

export function imageChecker(options: {
  download: boolean;
  /** Default FETCH_ATTEMPTS. */
  attempts?: number;
  /** The first pause between tries (doubling); default 250 ms. */
  retryMs?: number;
}): ImageChecker {
  const attempts = options.attempts ?? FETCH_ATTEMPTS;
  const retryMs = options.retryMs ?? 250;
  const verdicts = new Map<string, Promise<BmcError | undefined>>();
  let downloads = 0;
  const fetchAndHash = async (image: Required<FirmwareImageRef>): Promise<BmcError | undefined> => {
    let verdict: BmcError | undefined;
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, retryMs * 2 ** (attempt - 1)));
      verdict = await fetchOnce(image);
      if (verdict?.code !== "IMAGE_UNAVAILABLE") return verdict;
    }
    return verdict;
  };
  const fetchOnce = async (image: Required<FirmwareImageRef>): Promise<BmcError | undefined> => {
    downloads += 1;
    let response: Response;
    try {
      response = await fetch(image.uri);
    } catch (error) {
      return { code: "IMAGE_UNAVAILABLE", message: `cannot fetch the image: ${(error as Error).message}` };
    }
    if (!response.ok || response.body === null) {
      return { code: "IMAGE_UNAVAILABLE", message: `fetching the image answered HTTP ${response.status}` };
    }
    const hash = createHash("sha256");
    let size = 0;
    for await (const chunk of response.body) {
      size += chunk.byteLength;
      hash.update(chunk);
    }
    if (size !== image.size) {
      return {
        code: "IMAGE_SIZE_MISMATCH",
        message: `the image is ${size} bytes, the command says ${image.size}`,
      };
    }
    const digest = hash.digest("hex");
    if (digest !== image.sha256) {
      return {
        code: "IMAGE_DIGEST_MISMATCH",
        message: `the image hashes to sha256 ${digest}, the command says ${image.sha256}`,
      };
    }
    return undefined;
  };
  return {
    async check(image) {
      const missing = missingImageFields(image);
      if (missing !== undefined || !options.download) return missing;
      const full = image as Required<FirmwareImageRef>;
      const key = `${full.sha256}:${full.size}`;
      let verdict = verdicts.get(key);
      if (verdict === undefined) {
        verdict = fetchAndHash(full);
        verdicts.set(key, verdict);
        // A failed fetch (an expired URL, a store down) is tried again by the next command.
        void verdict.then((v) => {
          if (v?.code === "IMAGE_UNAVAILABLE") verdicts.delete(key);
        });
      }
      return verdict;
    },
    downloads: () => downloads,
  };
}
