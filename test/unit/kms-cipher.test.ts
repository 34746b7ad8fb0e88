import { randomBytes } from "node:crypto";
import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from "@aws-sdk/client-kms";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { KmsEnvelopeCipher } from "../../src/adapters/kms/kms-cipher.js";

// A fake KMS that "wraps" a data key by XOR with a fixed mask and binds the encryption context,
// so the test can check the cipher sends the context and stores the wrapped key.
const MASK = randomBytes(32);
const wrap = (key: Uint8Array, context: string) =>
  Buffer.concat([Buffer.from(key.map((b, i) => b ^ (MASK[i] as number))), Buffer.from(context)]);

describe("KMS envelope cipher", () => {
  const kms = mockClient(KMSClient);
  afterAll(() => kms.restore());
  beforeEach(() => {
    kms.reset();
    kms.on(GenerateDataKeyCommand).callsFake((input) => {
      const key = randomBytes(32);
      return { Plaintext: Uint8Array.from(key), CiphertextBlob: wrap(key, input.EncryptionContext.context) };
    });
    kms.on(DecryptCommand).callsFake((input) => {
      const blob = Buffer.from(input.CiphertextBlob);
      const context = blob.subarray(32).toString();
      if (context !== input.EncryptionContext.context)
        throw Object.assign(new Error("bad context"), { name: "InvalidCiphertextException" });
      return { Plaintext: Uint8Array.from(blob.subarray(0, 32).map((b, i) => b ^ (MASK[i] as number))) };
    });
  });

  it("round-trips a secret under its context with one data key per value", async () => {
    const cipher = new KmsEnvelopeCipher(new KMSClient({ region: "us-east-1" }), "alias/flow");
    const sealed = await cipher.encrypt(Buffer.from("bmc-password"), "run:1");
    expect(Buffer.from(sealed).includes(Buffer.from("bmc-password"))).toBe(false);
    expect(Buffer.from(await cipher.decrypt(sealed, "run:1")).toString()).toBe("bmc-password");
    expect(kms.commandCalls(GenerateDataKeyCommand)[0]?.args[0].input).toMatchObject({
      KeyId: "alias/flow",
      KeySpec: "AES_256",
      EncryptionContext: { context: "run:1" },
    });
  });

  it("refuses a blob moved to another context", async () => {
    const cipher = new KmsEnvelopeCipher(new KMSClient({ region: "us-east-1" }), "alias/flow");
    const sealed = await cipher.encrypt(Buffer.from("s"), "run:1");
    await expect(cipher.decrypt(sealed, "run:2")).rejects.toThrow("bad context");
  });

  it("refuses a blob that is not an envelope", async () => {
    const cipher = new KmsEnvelopeCipher(new KMSClient({ region: "us-east-1" }), "alias/flow");
    await expect(cipher.decrypt(Buffer.from([1, 2, 3]), "run:1")).rejects.toThrow("not a KMS envelope blob");
  });
});
