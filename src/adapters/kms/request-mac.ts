/**
 * The keyed digest of an idempotent create's credentials (the RequestMac port), two ways:
 *
 * - `KmsRequestMac`: KMS GenerateMac (HMAC_SHA_256) under the deployment's HMAC key
 *   (KeySpec HMAC_256, KeyUsage GENERATE_VERIFY_MAC). The key never leaves KMS; the front's role
 *   may GenerateMac with it and nothing else, so it needs no kms:Decrypt to answer a retry.
 *   Cost: one GenerateMac per create or plan that sends both a client_request_id and credentials.
 * - `LocalRequestMac`: HMAC-SHA-256 in process, under a key derived (HKDF-SHA-256) from the
 *   local secrets key, for the local stack and any deployment off AWS. The derived key is not
 *   the AES key: a MAC tells nothing about the key credentials are sealed with.
 */
import { createHmac, hkdfSync } from "node:crypto";
import { GenerateMacCommand, type KMSClient } from "@aws-sdk/client-kms";
import type { RequestMac } from "../../app/ports.js";

export class KmsRequestMac implements RequestMac {
  constructor(
    private readonly kms: Pick<KMSClient, "send">,
    private readonly keyId: string,
  ) {}

  async mac(message: string): Promise<Uint8Array> {
    const out = await this.kms.send(
      new GenerateMacCommand({
        KeyId: this.keyId,
        MacAlgorithm: "HMAC_SHA_256",
        Message: Buffer.from(message, "utf8"),
      }),
    );
    if (!out.Mac) throw new Error("KMS GenerateMac returned no MAC");
    return out.Mac;
  }
}

const HKDF_INFO = "flow client request mac v1";

export class LocalRequestMac implements RequestMac {
  private readonly key: Buffer;

  /** `secretsKey`: the 32-byte local secrets key; the MAC key is derived from it. */
  constructor(secretsKey: Uint8Array) {
    if (secretsKey.length !== 32)
      throw new RangeError(`the secrets key is 32 bytes (got ${secretsKey.length})`);
    this.key = Buffer.from(hkdfSync("sha256", secretsKey, Buffer.alloc(0), HKDF_INFO, 32));
  }

  async mac(message: string): Promise<Uint8Array> {
    return createHmac("sha256", this.key).update(message, "utf8").digest();
  }
}
