/**
 * Seals one credential for one BMC: what goes into an update command's `auth` field.
 *
 * `CipherBmcAuthSealer` uses the deployment's Cipher with the context
 * `bmc:<rackId>:<componentId>:<requestId>` bound in (src/domain/bmc-topics.ts `bmcAuthContext`), so a
 * blob lifted from one command opens for no other BMC and no other request. The rack's agent opens
 * it with KMS Decrypt under that context, which its role allows for its own rack only
 * (docs/security.md); locally the simulated fleet never opens it, it only proves the plaintext never
 * travels.
 */
import type { BmcAuthSealer, Cipher } from "../../app/ports.js";
import type { EncryptedAuth } from "../../domain/bmc-protocol.js";
import { type BmcAddress, bmcAuthContext } from "../../domain/bmc-topics.js";

export class CipherBmcAuthSealer implements BmcAuthSealer {
  constructor(
    private readonly cipher: Cipher,
    private readonly keyId: string,
  ) {}

  async seal(secret: string, to: BmcAddress, requestId: string): Promise<EncryptedAuth> {
    const blob = await this.cipher.encrypt(Buffer.from(secret, "utf8"), bmcAuthContext(to, requestId));
    return { keyId: this.keyId, ciphertext: Buffer.from(blob).toString("base64") };
  }
}
