/**
 * Seals one credential for one BMC: what goes into an update command's `auth` field.
 *
 * `CipherBmcAuthSealer` uses the deployment's Cipher with the context `bmc:<componentId>:<requestId>`
 * bound in, so a blob lifted from one command opens for no other BMC and no other request. In AWS
 * the BMC-side half is a KMS grant per thing (or a per-device key); locally the simulated fleet
 * never opens it, it only proves the plaintext never travels.
 */
import type { BmcAuthSealer, Cipher } from "../../app/ports.js";
import type { EncryptedAuth } from "../../domain/bmc-protocol.js";

export class CipherBmcAuthSealer implements BmcAuthSealer {
  constructor(
    private readonly cipher: Cipher,
    private readonly keyId: string,
  ) {}

  async seal(secret: string, componentId: string, requestId: string): Promise<EncryptedAuth> {
    const blob = await this.cipher.encrypt(Buffer.from(secret, "utf8"), `bmc:${componentId}:${requestId}`);
    return { keyId: this.keyId, ciphertext: Buffer.from(blob).toString("base64") };
  }
}
