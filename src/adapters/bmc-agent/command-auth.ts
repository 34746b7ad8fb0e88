/**
 * How the BMC agent opens an update command's `auth` blob without long-lived AWS keys on the rack:
 *
 *   agent ──mTLS (its IoT certificate)──► IoT credentials provider: GET /role-aliases/<alias>/credentials
 *         ◄── temporary credentials of the role behind the alias (an hour)
 *   agent ──KMS Decrypt(data key, context bmc:<rack>:<component>:<request>)──► the deployment's key
 *
 * The role may Decrypt only under `bmc:<the thing name>:*`, the thing name being the rack id, so an
 * agent opens its own rack's blobs and no other's (infra/constructs/bmc-iot.ts). The blob is the
 * KMS envelope of src/adapters/kms/kms-cipher.ts; its plaintext is the BMC password.
 */
import { request } from "node:https";
import { KMSClient } from "@aws-sdk/client-kms";
import type { CommandAuthOpener } from "../../app/ports/bmc-agent.js";
import type { EncryptedAuth } from "../../domain/bmc-protocol.js";
import { KmsEnvelopeCipher } from "../kms/kms-cipher.js";

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

export interface IotCredentialsOptions {
  /** The account's credentials provider endpoint (`aws iot describe-endpoint --endpoint-type iot:CredentialProvider`). */
  endpoint: string;
  roleAlias: string;
  /** The agent's thing name (its MQTT client id). */
  thingName: string;
  cert: Buffer;
  key: Buffer;
  /** The CA that signs the endpoint's certificate; absent: the system's. */
  ca?: Buffer;
  now?: () => number;
}

/** Fetched credentials are reused until five minutes before they expire. */
const RENEW_BEFORE_MS = 5 * 60_000;

/** Temporary credentials from the IoT credentials provider, fetched with the agent's certificate. */
export function iotCredentials(options: IotCredentialsOptions): () => Promise<AwsCredentials> {
  const now = options.now ?? Date.now;
  let cached: AwsCredentials | undefined;
  return async () => {
    if (cached?.expiration !== undefined && cached.expiration.getTime() - now() > RENEW_BEFORE_MS)
      return cached;
    const body = await fetchCredentials(options);
    const c = (body as { credentials?: Record<string, unknown> }).credentials;
    if (typeof c?.accessKeyId !== "string" || typeof c.secretAccessKey !== "string")
      throw new Error("the IoT credentials provider answered no credentials");
    cached = {
      accessKeyId: c.accessKeyId,
      secretAccessKey: c.secretAccessKey,
      ...(typeof c.sessionToken === "string" ? { sessionToken: c.sessionToken } : {}),
      ...(typeof c.expiration === "string" ? { expiration: new Date(c.expiration) } : {}),
    };
    return cached;
  };
}

function fetchCredentials(o: IotCredentialsOptions): Promise<unknown> {
  const url = new URL(o.endpoint.includes("://") ? o.endpoint : `https://${o.endpoint}`);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port === "" ? 443 : Number(url.port),
        path: `/role-aliases/${encodeURIComponent(o.roleAlias)}/credentials`,
        method: "GET",
        cert: o.cert,
        key: o.key,
        ...(o.ca === undefined ? {} : { ca: o.ca }),
        headers: { "x-amzn-iot-thingname": o.thingName },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          if (res.statusCode !== 200) {
            reject(
              new Error(`the IoT credentials provider answered ${res.statusCode}: ${text.slice(0, 200)}`),
            );
            return;
          }
          try {
            resolve(JSON.parse(text));
          } catch {
            reject(new Error("the IoT credentials provider answered no JSON"));
          }
        });
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error("the IoT credentials provider did not answer in 30 s")));
    req.on("error", reject);
    req.end();
  });
}

/** Opens `auth` blobs with KMS Decrypt under their context; the plaintext is the BMC password. */
export class KmsCommandAuth implements CommandAuthOpener {
  constructor(private readonly kms: KMSClient) {}

  async open(auth: EncryptedAuth, context: string): Promise<string> {
    const cipher = new KmsEnvelopeCipher(this.kms, auth.keyId);
    const plain = await cipher.decrypt(Buffer.from(auth.ciphertext, "base64"), context);
    return Buffer.from(plain).toString("utf8");
  }
}

export function kmsCommandAuth(options: {
  region: string;
  endpoint?: string;
  credentials?: () => Promise<AwsCredentials>;
}): KmsCommandAuth {
  return new KmsCommandAuth(
    new KMSClient({
      region: options.region,
      maxAttempts: 3,
      ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
      ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
    }),
  );
}
