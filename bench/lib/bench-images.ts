/**
 * The firmware images a benchmark's runs flash, registered in its store so that the create path
 * makes its real image check (one BatchGetItem). Records only: a benchmark's BMCs never download.
 */
import { createHash } from "node:crypto";
import type { FirmwareImageStore } from "../../src/app/ports.js";
import { imageObjectKey } from "../../src/domain/firmware-images.js";
import { COMPONENT_TYPES } from "../../src/domain/model.js";

/** Every version a benchmark's run builders name. */
export const BENCH_IMAGE_VERSIONS = ["2.0.0", "9.9.9"] as const;

export async function registerBenchImages(
  store: Pick<FirmwareImageStore, "registerImage">,
  versions: readonly string[] = BENCH_IMAGE_VERSIONS,
): Promise<void> {
  for (const componentType of COMPONENT_TYPES) {
    for (const version of versions) {
      const sha256 = createHash("sha256").update(`${componentType} ${version}`).digest("hex");
      await store.registerImage({
        componentType,
        version,
        objectKey: imageObjectKey(componentType, sha256),
        sizeBytes: 1,
        sha256,
        uploadedBy: { name: "bench", source: "DECLARED", authenticated: false },
        uploadedAt: 0,
      });
    }
  }
}
