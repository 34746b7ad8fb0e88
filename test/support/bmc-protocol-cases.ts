/**
 * The update command the BMC protocol's tests (src/domain/bmc-protocol.ts) start from: v1, with an
 * image and an auth blob.
 */
import type { UpdateCommand } from "../../src/domain/bmc-protocol.js";

export const update: UpdateCommand = {
  v: 1,
  type: "update",
  requestId: "req-1",
  taskId: "task-1",
  targetVersion: "1.3.0",
  image: { uri: "s3://firmware/compute-1.3.0.bin", sha256: "a".repeat(64) },
  auth: { keyId: "alias/flow-bmc", ciphertext: "c2VjcmV0LWJsb2I=" },
  issuedAt: 1_767_225_600_000,
};
