/**
 * A certificate for the hop from the load balancer to the Fargate task: made at start by the task
 * itself, an ECDSA P-256 key that never leaves its memory and a self-signed X.509 certificate
 * for it (DER written here: node has no API that issues certificates).
 *
 * An Application Load Balancer speaking HTTPS to a target does not verify the target's
 * certificate; what TLS buys on that hop is encryption (requests carry firmware credentials).
 * So nothing is distributed: no CA, no secret in the image or the configuration, a fresh key
 * per task. Anyone else that connects to the task cannot do so except through the load
 * balancer (the task's security group admits the load balancer's alone).
 *
 *   const { certPem, keyPem } = selfSignedCertificate("flow-front", Date.now());
 */
import { generateKeyPairSync, sign } from "node:crypto";

/** How long the certificate is valid: longer than any task lives (a deploy replaces the tasks). */
const VALID_MS = 397 * 24 * 60 * 60 * 1000;
/** Before now, for a load balancer whose clock is a little behind. */
const BACKDATE_MS = 60 * 60 * 1000;

/** ecdsa-with-SHA256 (1.2.840.10045.4.3.2) and commonName (2.5.4.3), DER-encoded. */
const ECDSA_WITH_SHA256 = Buffer.from([0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02]);
const COMMON_NAME = Buffer.from([0x06, 0x03, 0x55, 0x04, 0x03]);

export function selfSignedCertificate(commonName: string, now: number): { certPem: string; keyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const name = seq(tlv(0x31, seq(COMMON_NAME, tlv(0x0c, Buffer.from(commonName, "utf8")))));
  const algorithm = seq(ECDSA_WITH_SHA256);
  const tbs = seq(
    tlv(0xa0, integer(Buffer.from([2]))), // v3
    integer(serial(now)),
    algorithm,
    name,
    seq(utcTime(now - BACKDATE_MS), utcTime(now + VALID_MS)),
    name,
    publicKey.export({ type: "spki", format: "der" }),
  );
  const signature = sign("sha256", tbs, privateKey);
  const der = seq(tbs, algorithm, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
  const body = der.toString("base64").replace(/(.{64})/g, "$1\n");
  return {
    certPem: `-----BEGIN CERTIFICATE-----\n${body}${body.endsWith("\n") ? "" : "\n"}-----END CERTIFICATE-----\n`,
    keyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  };
}

function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  const length =
    n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, content]);
}

function seq(...parts: Buffer[]): Buffer {
  return tlv(0x30, Buffer.concat(parts));
}

/** A positive INTEGER in its shortest form (DER): no leading zero bytes, one when the high bit is set. */
function integer(value: Buffer): Buffer {
  let start = 0;
  while (start < value.length - 1 && value[start] === 0) start++;
  const digits = value.subarray(start);
  return tlv(0x02, (digits[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), digits]) : digits);
}

/** A serial number from the start time: unique enough for certificates nobody verifies. */
function serial(now: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(Math.max(1, Math.floor(now))));
  return b;
}

/** UTCTime YYMMDDHHMMSSZ (valid to 2049, well beyond any certificate made here). */
function utcTime(ms: number): Buffer {
  const iso = new Date(ms).toISOString(); // 2026-12-05T03:11:29.000Z
  const text = `${iso.slice(2, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  return tlv(0x17, Buffer.from(text, "ascii"));
}
