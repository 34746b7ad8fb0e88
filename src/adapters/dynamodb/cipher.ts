/**
 * AES-256-GCM for the firmware credentials stored on a run.
 *
 * Format (version 1): 0x01 | 12-byte random IV | 16-byte tag | ciphertext. The context string
 * ("run:<id>") is the additional authenticated data, so a blob copied onto another run fails to
 * decrypt instead of leaking there.
 *
 * Keys. Locally the 32-byte key comes from configuration (`LocalAesGcmCipher.fromBase64`). In AWS
 * the same format is used with a KMS data key (envelope encryption): at start the service calls
 * KMS GenerateDataKey (AES_256) under the deployment's CMK, keeps the plaintext key in memory only,
 * and stores the KMS-encrypted data key next to each blob so any instance can Decrypt it through
 * KMS; the CMK policy limits Decrypt to the front and child-task roles. (That adapter is not built
 * yet; this class is the data-key half of it.)
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import type { Cipher } from "../../app/ports.js";

const VERSION = 1;

export class LocalAesGcmCipher implements Cipher {
  private readonly key: Buffer;

  constructor(key: Uint8Array) {
    if (key.length !== 32) throw new RangeError(`AES-256-GCM needs a 32-byte key (got ${key.length})`);
    this.key = Buffer.from(key);
  }

  static fromBase64(encoded: string): LocalAesGcmCipher {
    return new LocalAesGcmCipher(Buffer.from(encoded, "base64"));
  }

  async encrypt(plaintext: Uint8Array, context: string): Promise<Uint8Array> {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(Buffer.from(context, "utf8"));
    const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
  }

  async decrypt(ciphertext: Uint8Array, context: string): Promise<Uint8Array> {
    const blob = Buffer.from(ciphertext);
    if (blob[0] !== VERSION) throw new Error(`unknown secret format version ${blob[0]}`);
    const decipher = createDecipheriv("aes-256-gcm", this.key, blob.subarray(1, 13));
    decipher.setAAD(Buffer.from(context, "utf8"));
    decipher.setAuthTag(blob.subarray(13, 29));
    return Buffer.concat([decipher.update(blob.subarray(29)), decipher.final()]);
  }
}
