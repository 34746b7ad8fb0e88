/**
 * What the BMC protocol decoder (src/domain/bmc-protocol-decode.ts) refuses, and the error it names.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeBmcMessage } from "../../src/domain/bmc-protocol.js";
import { decodeBmcCommand, decodeBmcEvent, decodeBmcMessage } from "../../src/domain/bmc-protocol-decode.js";
import { update } from "../support/bmc-protocol-cases.js";
import { testSeed } from "../support/seeded-random.js";

/** Every field a BMC message of any type may carry. */
const BMC_FIELDS = [
  "requestId",
  "taskId",
  "targetVersion",
  "subTargets",
  "image",
  "auth",
  "keyId",
  "ciphertext",
  "issuedAt",
  "percent",
  "ok",
  "version",
  "error",
  "code",
  "message",
  "ready",
  "reason",
] as const;

/** The encoded update with one field replaced (or removed, with `undefined`). */
function updateWith(patch: Record<string, unknown>): string {
  const raw = JSON.parse(encodeBmcMessage(update)) as Record<string, unknown>;
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) delete raw[k];
    else raw[k] = v;
  }
  return JSON.stringify(raw);
}

describe("bmc protocol: decode errors", () => {
  const cases: [string, string | Uint8Array, string][] = [
    ["not JSON", "{nope", "(root): is not valid JSON"],
    ["an array", "[1,2]", "(root): must be a JSON object (got array)"],
    ["null", "null", "(root): must be a JSON object (got null)"],
    ["a string", '"hello"', "(root): must be a JSON object (got string)"],
    ["no version", '{"type":"query","requestId":"r"}', "v: missing required field"],
    [
      "version 4",
      '{"v":4,"type":"query","requestId":"r"}',
      "v: unsupported protocol version 4 (this codec speaks 1, 2 and 3)",
    ],
    [
      "version 0",
      '{"v":0,"type":"query","requestId":"r"}',
      "v: unsupported protocol version 0 (this codec speaks 1, 2 and 3)",
    ],
    [
      "version as a string",
      '{"v":"1","type":"query","requestId":"r"}',
      "v: must be the number 1, 2 or 3 (got string)",
    ],
    ["no type", '{"v":1,"requestId":"r"}', "type: missing required field"],
    ["type not a string", '{"v":1,"type":7,"requestId":"r"}', "type: must be a string (got number)"],
    [
      "unknown type",
      '{"v":1,"type":"reboot","requestId":"r"}',
      'type: must be one of update, query, reset, ack, progress, result, status (got "reboot")',
    ],
    ["no requestId", '{"v":1,"type":"query"}', "requestId: missing required field"],
    ["empty requestId", '{"v":1,"type":"query","requestId":""}', "requestId: must not be empty"],
    [
      "requestId a number",
      '{"v":1,"type":"query","requestId":5}',
      "requestId: must be a string (got number)",
    ],
    ["update without taskId", updateWith({ taskId: undefined }), "taskId: missing required field"],
    [
      "update without targetVersion",
      updateWith({ targetVersion: undefined }),
      "targetVersion: missing required field",
    ],
    ["update with image a string", updateWith({ image: "s3://x" }), "image: must be an object (got string)"],
    ["update without image", updateWith({ image: undefined }), "image: missing required field"],
    ["update without image.uri", updateWith({ image: {} }), "image.uri: missing required field"],
    [
      "update with a short image.sha256",
      updateWith({ image: { uri: "u", sha256: "abc" } }),
      "image.sha256: must be 64 lowercase hex digits",
    ],
    [
      "update with an image.size of 0",
      updateWith({ image: { uri: "u", size: 0 } }),
      "image.size: must be an integer >= 1 (got 0)",
    ],
    [
      "update with an image.size as text",
      updateWith({ image: { uri: "u", size: "12" } }),
      "image.size: must be a number (got string)",
    ],
    ["update with auth null", updateWith({ auth: null }), "auth: must be an object (got null)"],
    [
      "update with auth missing ciphertext",
      updateWith({ auth: { keyId: "k" } }),
      "auth.ciphertext: missing required field",
    ],
    [
      "update with auth not base64",
      updateWith({ auth: { keyId: "k", ciphertext: "not base64!" } }),
      "auth.ciphertext: must be base64",
    ],
    ["update without issuedAt", updateWith({ issuedAt: undefined }), "issuedAt: missing required field"],
    [
      "update with issuedAt as ISO text",
      updateWith({ issuedAt: "2026-01-01T00:00:00Z" }),
      "issuedAt: must be a number (got string)",
    ],
    [
      "update with negative issuedAt",
      updateWith({ issuedAt: -1 }),
      "issuedAt: must be an integer >= 0 (got -1)",
    ],
    [
      "progress without percent",
      '{"v":1,"type":"progress","requestId":"r"}',
      "percent: missing required field",
    ],
    [
      "progress over 100",
      '{"v":1,"type":"progress","requestId":"r","percent":101}',
      "percent: must be an integer between 0 and 100 (got 101)",
    ],
    [
      "progress fractional",
      '{"v":1,"type":"progress","requestId":"r","percent":12.5}',
      "percent: must be an integer between 0 and 100 (got 12.5)",
    ],
    ["status without version", '{"v":1,"type":"status","requestId":"r"}', "version: missing required field"],
    [
      "result without ok",
      '{"v":1,"type":"result","requestId":"r","version":"1"}',
      "ok: missing required field",
    ],
    [
      "result ok as a string",
      '{"v":1,"type":"result","requestId":"r","ok":"true","version":"1"}',
      "ok: must be a boolean (got string)",
    ],
    [
      "result without version",
      '{"v":1,"type":"result","requestId":"r","ok":true}',
      "version: missing required field",
    ],
    [
      "failed result without error",
      '{"v":1,"type":"result","requestId":"r","ok":false,"version":"1"}',
      "error: missing required field",
    ],
    [
      "failed result without error.code",
      '{"v":1,"type":"result","requestId":"r","ok":false,"version":"1","error":{"message":"m"}}',
      "error.code: missing required field",
    ],
    [
      "successful result with an error",
      '{"v":1,"type":"result","requestId":"r","ok":true,"version":"1","error":{"code":"X","message":"m"}}',
      "error: must be absent when ok is true",
    ],
  ];

  it.each(cases)("%s is refused with its path and rule", (_name, payload, message) => {
    const decoded = decodeBmcMessage(payload);
    expect(decoded.ok).toBe(false);
    if (!decoded.ok) expect(decoded.message).toBe(message);
  });

  it("reports every problem of one message, each with its code", () => {
    const decoded = decodeBmcCommand(
      '{"v":1,"type":"update","requestId":3,"targetVersion":"","image":{},"issuedAt":1.5}',
    );
    expect(decoded.ok).toBe(false);
    if (decoded.ok) return;
    expect(decoded.problems).toEqual([
      { code: "WRONG_TYPE", path: "requestId", rule: "must be a string (got number)" },
      { code: "MISSING_FIELD", path: "taskId", rule: "missing required field" },
      { code: "INVALID_VALUE", path: "targetVersion", rule: "must not be empty" },
      { code: "MISSING_FIELD", path: "image.uri", rule: "missing required field" },
      { code: "INVALID_VALUE", path: "issuedAt", rule: "must be an integer >= 0 (got 1.5)" },
    ]);
  });

  it("refuses payloads over IoT Core's 128 KiB limit", () => {
    const big = `{"v":1,"type":"query","requestId":"${"x".repeat(128 * 1024)}"}`;
    const decoded = decodeBmcCommand(big);
    expect(decoded.ok).toBe(false);
    if (!decoded.ok) expect(decoded.problems[0]?.code).toBe("INVALID_VALUE");
  });

  it("counts the limit in UTF-8 bytes, for text and for bytes alike", () => {
    // 60,000 × "é" is 60,000 characters but 120,000 bytes: with the rest, over the limit by bytes only.
    const text = `{"v":1,"type":"query","requestId":"${"é".repeat(60_000)}${"x".repeat(12_000)}"}`;
    const size = new TextEncoder().encode(text).byteLength;
    expect(text.length).toBeLessThan(128 * 1024);
    for (const payload of [text, new TextEncoder().encode(text)]) {
      const decoded = decodeBmcCommand(payload);
      expect(decoded.ok ? "decoded" : decoded).toEqual({
        ok: false,
        problems: [
          { code: "INVALID_VALUE", path: "(root)", rule: `must be at most 131072 bytes (got ${size})` },
        ],
        message: `(root): must be at most 131072 bytes (got ${size})`,
      });
    }
  });

  it("keeps a byte-order mark in decoded bytes, so a BOM-prefixed payload is not JSON", () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode(encodeBmcMessage(update))]);
    const decoded = decodeBmcCommand(bytes);
    expect(decoded.ok).toBe(false);
    if (!decoded.ok)
      expect(decoded.problems).toEqual([
        { code: "MALFORMED_JSON", path: "(root)", rule: "is not valid JSON" },
      ]);
  });

  it("never throws, whatever bytes arrive", () => {
    // A refusal names at least one problem and says them all in its message.
    const answers = (payload: Uint8Array | string) => {
      for (const decode of [decodeBmcMessage, decodeBmcCommand, decodeBmcEvent]) {
        const decoded = decode(payload);
        if (decoded.ok) expect(typeof decoded.value.type).toBe("string");
        else {
          expect(decoded.problems.length).toBeGreaterThan(0);
          expect(decoded.message).toBe(decoded.problems.map((p) => `${p.path}: ${p.rule}`).join("; "));
        }
      }
    };
    for (const payload of ["", " ", "0", "true", "{}", '{"v":1}', new Uint8Array([0xff, 0xfe, 0x00])]) {
      expect(decodeBmcMessage(payload).ok).toBe(false);
    }
    const utf8 = (text: string) => new TextEncoder().encode(text);
    // Message-shaped JSON: a known version and type or not, the protocol's fields holding any JSON
    // value. The seed is FLOW_TEST_SEED's when set; fast-check prints it on failure.
    const shaped = fc
      .tuple(
        fc.oneof(fc.constantFrom(1, 2), fc.jsonValue({ maxDepth: 2 })),
        fc.oneof(
          fc.constantFrom("update", "query", "ack", "progress", "result", "status"),
          fc.jsonValue({ maxDepth: 2 }),
        ),
        fc.dictionary(fc.constantFrom(...BMC_FIELDS), fc.jsonValue({ maxDepth: 2 })),
      )
      .map(([v, type, fields]) => JSON.stringify({ v, type, ...fields }));
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 600 }),
          fc.string({ unit: "binary", maxLength: 300 }),
          fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value) ?? ""),
          shaped,
          shaped.map(utf8),
        ),
        (payload) => answers(payload),
      ),
      { numRuns: 300, seed: testSeed() },
    );
  }, 60_000);
});
