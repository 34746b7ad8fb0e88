/**
 * Envelope encryption of firmware credentials under the deployment's customer-managed KMS key.
 *
 * Each value gets its own data key (GenerateDataKey AES_256, with the context string bound in as the
 * KMS encryption context), the value is sealed locally with AES-256-GCM (LocalAesGcmCipher, the
 * same format the local stack uses), and the blob stored is:
 *
 *   0x4B ('K') | u16 length of the encrypted data key | encrypted data key | AES-GCM blob
 *
 * Decrypt asks KMS to unwrap the data key under the same encryption context, so a blob moved to
 * another run (another context) fails at KMS, and only roles the key policy allows can read it
 * (the front encrypts; the child-task steps decrypt). The plaintext data key never leaves memory.
 * Cost: one GenerateDataKey per create with credentials, one Decrypt per child task that sends them.
 */
import { DecryptCommand, GenerateDataKeyCommand, type KMSClient } from "@aws-sdk/client-kms";
import type { Cipher } from "../../app/ports.js";
import { LocalAesGcmCipher } from "../dynamodb/cipher.js";

const MAGIC = 0x4b;

export class KmsEnvelopeCipher implements Cipher {
  constructor(
    private readonly kms: Pick<KMSClient, "send">,
    private readonly keyId: string,
  ) {}

  async encrypt(plaintext: Uint8Array, context: string): Promise<Uint8Array> {
    const out = await this.kms.send(
      new GenerateDataKeyCommand({ KeyId: this.keyId, KeySpec: "AES_256", EncryptionContext: { context } }),
    );
    if (!out.Plaintext || !out.CiphertextBlob) throw new Error("KMS GenerateDataKey returned no key");
    const sealed = await new LocalAesGcmCipher(out.Plaintext).encrypt(plaintext, context);
    out.Plaintext.fill(0);
    const header = Buffer.alloc(3);
    header[0] = MAGIC;
    header.writeUInt16BE(out.CiphertextBlob.length, 1);
    return Buffer.concat([header, out.CiphertextBlob, sealed]);
  }

  async decrypt(ciphertext: Uint8Array, context: string): Promise<Uint8Array> {
    const blob = Buffer.from(ciphertext);
    if (blob.length < 3 || blob[0] !== MAGIC) throw new Error("not a KMS envelope blob");
    const keyLength = blob.readUInt16BE(1);
    const encryptedKey = blob.subarray(3, 3 + keyLength);
    const out = await this.kms.send(
      new DecryptCommand({ CiphertextBlob: encryptedKey, KeyId: this.keyId, EncryptionContext: { context } }),
    );
    if (!out.Plaintext) throw new Error("KMS Decrypt returned no key");
    try {
      return await new LocalAesGcmCipher(out.Plaintext).decrypt(blob.subarray(3 + keyLength), context);
    } finally {
      out.Plaintext.fill(0);
    }
  }
}
