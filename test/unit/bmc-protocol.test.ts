import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type BmcMessage,
  describeBmcMessage,
  encodeBmcMessage,
  type UpdateCommand,
  updateRequestId,
  versionFor,
} from "../../src/domain/bmc-protocol.js";
import { decodeBmcCommand, decodeBmcEvent, decodeBmcMessage } from "../../src/domain/bmc-protocol-decode.js";
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

const COMPONENT = "0b9a3c1e-5d2f-8a41-9c3e-7f1a2b3c4d5e";

const update: UpdateCommand = {
  v: 1,
  type: "update",
  requestId: "req-1",
  taskId: "task-1",
  targetVersion: "1.3.0",
  image: { uri: "s3://firmware/compute-1.3.0.bin", sha256: "a".repeat(64) },
  auth: { keyId: "alias/flow-bmc", ciphertext: "c2VjcmV0LWJsb2I=" },
  issuedAt: 1_767_225_600_000,
};

const everyMessage: BmcMessage[] = [
  update,
  { v: 1, type: "update", requestId: "r", taskId: "t", targetVersion: "2", image: { uri: "u" }, issuedAt: 0 },
  {
    v: 1,
    type: "update",
    requestId: "r",
    taskId: "t",
    targetVersion: "2",
    image: { uri: "https://images.example/x?X-Amz-Expires=900", sha256: "b".repeat(64), size: 4096 },
    issuedAt: 0,
  },
  { v: 1, type: "query", requestId: "q-1" },
  { v: 1, type: "ack", requestId: "req-1" },
  { v: 1, type: "progress", requestId: "req-1", percent: 0 },
  { v: 1, type: "progress", requestId: "req-1", percent: 100 },
  { v: 1, type: "result", requestId: "req-1", ok: true, version: "1.3.0" },
  {
    v: 1,
    type: "result",
    requestId: "req-1",
    ok: false,
    version: "1.2.0",
    error: { code: "FLASH_FAILED", message: "checksum mismatch" },
  },
  { v: 1, type: "result", requestId: "r", ok: false, version: "1", error: { code: "X", message: "" } },
  { v: 1, type: "status", requestId: "q-1", version: "1.2.0" },
];

/** The encoded update with one field replaced (or removed, with `undefined`). */
function updateWith(patch: Record<string, unknown>): string {
  const raw = JSON.parse(encodeBmcMessage(update)) as Record<string, unknown>;
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) delete raw[k];
    else raw[k] = v;
  }
  return JSON.stringify(raw);
}

describe("bmc protocol: encode/decode round trips", () => {
  it.each(everyMessage.map((m) => [m.type, m] as const))(
    "%s survives encode → decode unchanged",
    (_t, message) => {
      const decoded = decodeBmcMessage(encodeBmcMessage(message));
      expect(decoded).toEqual({ ok: true, value: message });
    },
  );

  it("decodes bytes as well as text", () => {
    const bytes = new TextEncoder().encode(encodeBmcMessage(update));
    expect(decodeBmcCommand(bytes)).toEqual({ ok: true, value: update });
  });

  it("encodes fields in a fixed order with v first", () => {
    expect(encodeBmcMessage({ v: 1, type: "progress", requestId: "r", percent: 50 })).toBe(
      '{"v":1,"type":"progress","requestId":"r","percent":50}',
    );
    expect(
      encodeBmcMessage({
        v: 1,
        type: "update",
        requestId: "r",
        taskId: "t",
        targetVersion: "2",
        image: { uri: "u" },
        issuedAt: 5,
      }),
    ).toBe(
      '{"v":1,"type":"update","requestId":"r","taskId":"t","targetVersion":"2","image":{"uri":"u"},"issuedAt":5}',
    );
  });

  it("ignores unknown fields, so optional fields can be added within v1", () => {
    const decoded = decodeBmcEvent('{"v":1,"type":"status","requestId":"q","version":"1.0","uptimeS":12}');
    expect(decoded).toEqual({ ok: true, value: { v: 1, type: "status", requestId: "q", version: "1.0" } });
  });

  it("commands are refused on the event decoder and events on the command decoder", () => {
    const onEvt = decodeBmcEvent(encodeBmcMessage(update));
    expect(onEvt).toEqual({
      ok: false,
      problems: [
        {
          code: "UNKNOWN_TYPE",
          path: "type",
          rule: 'must be one of ack, progress, result, status (got "update")',
        },
      ],
      message: 'type: must be one of ack, progress, result, status (got "update")',
    });
    const onCmd = decodeBmcCommand('{"v":1,"type":"ack","requestId":"r"}');
    expect(onCmd.ok).toBe(false);
    if (!onCmd.ok) expect(onCmd.message).toBe('type: must be one of update, query, reset (got "ack")');
  });
});

describe("bmc protocol: logging never shows the auth blob", () => {
  it("describeBmcMessage redacts auth.ciphertext and keeps the rest", () => {
    const line = describeBmcMessage(update);
    expect(line).not.toContain("c2VjcmV0LWJsb2I=");
    expect(JSON.parse(line)).toMatchObject({
      requestId: "req-1",
      auth: { keyId: "alias/flow-bmc", ciphertext: "[redacted]" },
    });
  });

  it("describeBmcMessage shows messages without auth exactly as encoded", () => {
    const { auth: _auth, ...plain } = update;
    expect(describeBmcMessage(plain)).toBe(encodeBmcMessage(plain));
    expect(describeBmcMessage({ v: 1, type: "ack", requestId: "r" })).toBe(
      '{"v":1,"type":"ack","requestId":"r"}',
    );
  });

  it("a malformed payload's error does not echo the payload", () => {
    const decoded = decodeBmcCommand('{"v":1,"auth":{"ciphertext":"TOPSECRET"');
    expect(decoded).toEqual({
      ok: false,
      problems: [{ code: "MALFORMED_JSON", path: "(root)", rule: "is not valid JSON" }],
      message: "(root): is not valid JSON",
    });
  });
});

describe("bmc protocol: a status may say the BMC is not ready (an optional field, v1 and v2)", () => {
  it("round-trips ready and reason, and leaves them out when absent", () => {
    const status = {
      v: 1 as const,
      type: "status" as const,
      requestId: "q",
      version: "1.0",
      ready: false,
      reason: "host down",
    };
    expect(encodeBmcMessage(status)).toBe(
      '{"v":1,"type":"status","requestId":"q","version":"1.0","ready":false,"reason":"host down"}',
    );
    expect(decodeBmcEvent(encodeBmcMessage(status))).toEqual({ ok: true, value: status });
    expect(decodeBmcEvent('{"v":1,"type":"status","requestId":"q","version":"1.0"}')).toEqual({
      ok: true,
      value: { v: 1, type: "status", requestId: "q", version: "1.0" },
    });
  });

  it("refuses a ready that is not a boolean and a reason that is not a string, with the version missing too", () => {
    const decoded = decodeBmcEvent('{"v":1,"type":"status","requestId":"q","ready":"no","reason":5}');
    expect(decoded.ok ? "decoded" : decoded.message).toBe(
      "version: missing required field; ready: must be a boolean (got string); reason: must be a string (got number)",
    );
  });
});

describe("bmc protocol v2: sub-targets", () => {
  const update: UpdateCommand = {
    v: 1,
    type: "update",
    requestId: "r",
    taskId: "t",
    targetVersion: "2",
    image: { uri: "u" },
    issuedAt: 5,
  };

  it("a message is sent as v2 exactly when it carries subTargets; everything else stays byte for byte v1", () => {
    expect(versionFor(update)).toBe(1);
    expect(encodeBmcMessage({ ...update, subTargets: ["bmc", "bios"] })).toBe(
      '{"v":2,"type":"update","requestId":"r","taskId":"t","targetVersion":"2","subTargets":["bmc","bios"],"image":{"uri":"u"},"issuedAt":5}',
    );
    expect(
      encodeBmcMessage({ v: 2, type: "result", requestId: "r", ok: true, version: "2", subTargets: ["bmc"] }),
    ).toBe('{"v":2,"type":"result","requestId":"r","ok":true,"version":"2","subTargets":["bmc"]}');
    expect(encodeBmcMessage({ v: 2, type: "query", requestId: "q" })).toBe(
      '{"v":1,"type":"query","requestId":"q"}',
    );
  });

  it("v2 round-trips sub-targets on update and result (failed results too)", () => {
    const command = { ...update, subTargets: ["nvos"] };
    expect(decodeBmcCommand(encodeBmcMessage(command))).toEqual({ ok: true, value: { ...command, v: 2 } });
    const failed = {
      v: 2 as const,
      type: "result" as const,
      requestId: "r",
      ok: false as const,
      version: "1",
      error: { code: "FLASH_FAILED", message: "no" },
      subTargets: ["psu"],
    };
    expect(decodeBmcEvent(encodeBmcMessage(failed))).toEqual({ ok: true, value: failed });
    expect(decodeBmcEvent('{"v":2,"type":"ack","requestId":"r"}')).toEqual({
      ok: true,
      value: { v: 2, type: "ack", requestId: "r" },
    });
  });

  it("a v1 message's subTargets is an unknown field: ignored, never read as a narrowing", () => {
    expect(
      decodeBmcCommand(
        '{"v":1,"type":"update","requestId":"r","taskId":"t","targetVersion":"2","subTargets":["bmc"],"image":{"uri":"u"},"issuedAt":5}',
      ),
    ).toEqual({ ok: true, value: update });
  });

  const bad: [string, string, string][] = [
    ["not a list", '"bmc"', "subTargets: must be an array of strings (got string)"],
    ["an empty list", "[]", "subTargets: must not be empty (omit it for the whole component)"],
    ["a number in the list", '["bmc",7]', "subTargets[1]: must be a string (got number)"],
    ["an empty name", '[""]', "subTargets[0]: must not be empty"],
    ["a repeat", '["bmc","bmc"]', 'subTargets[1]: duplicate "bmc"'],
  ];
  it.each(bad)("v2 subTargets %s is refused", (_, list, message) => {
    const decoded = decodeBmcCommand(
      `{"v":2,"type":"update","requestId":"r","taskId":"t","targetVersion":"2","subTargets":${list},"image":{"uri":"u"},"issuedAt":5}`,
    );
    expect(decoded.ok ? "decoded" : decoded.message).toBe(message);
  });
});

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

describe("bmc protocol: request ids", () => {
  it("updateRequestId is stable for a task and component, and changes with the attempt", () => {
    const a = updateRequestId("task-1", COMPONENT);
    // It names the task's update set, attempt 0, and the component's entry (command-sets.ts).
    expect(a).toMatch(/^upd-task-1\.u0\.[0-9a-f]{12}$/);
    expect(updateRequestId("task-1", COMPONENT)).toBe(a);
    expect(updateRequestId("task-1", COMPONENT, 1)).not.toBe(a);
    expect(updateRequestId("task-2", COMPONENT)).not.toBe(a);
  });
});

describe("bmc protocol: the image's size", () => {
  it("is an optional field of v1: written after sha256, the message stays v1, and one without it still decodes", () => {
    const sized: UpdateCommand = {
      ...update,
      image: { uri: "https://i/x", sha256: "c".repeat(64), size: 12 },
    };
    const text = encodeBmcMessage(sized);
    expect(text).toContain(`"v":1,`);
    expect(text).toContain(`"image":{"uri":"https://i/x","sha256":"${"c".repeat(64)}","size":12}`);
    expect(decodeBmcCommand(text)).toEqual({ ok: true, value: sized });
    expect(decodeBmcCommand(encodeBmcMessage(update))).toEqual({ ok: true, value: update });
  });
});

describe("bmc protocol v3: activation", () => {
  const reset = {
    v: 3 as const,
    type: "reset" as const,
    requestId: "qry-r",
    taskId: "t-1",
    kind: "host" as const,
    graceSeconds: 300,
    issuedAt: 1767225600000,
  };

  it("a reset, a staged result and a status with a pending version or an error round-trip as v3", () => {
    const messages: BmcMessage[] = [
      reset,
      { v: 3, type: "result", requestId: "r", ok: true, version: "1.0.0", pendingVersion: "2.0.0" },
      { v: 3, type: "status", requestId: "r", version: "1.0.0", pendingVersion: "2.0.0" },
      {
        v: 3,
        type: "status",
        requestId: "r",
        version: "1.0.0",
        error: { code: "RESET_FAILED", message: "chassis refused PowerCycle" },
      },
      {
        v: 3,
        type: "status",
        requestId: "r",
        version: "2.0.0",
        health: "Critical",
        healthReason: "GPU 3 not detected",
      },
    ];
    for (const m of messages) {
      expect(versionFor(m)).toBe(3);
      const text = encodeBmcMessage(m);
      expect(JSON.parse(text).v).toBe(3);
      expect(decodeBmcMessage(text)).toEqual({ ok: true, value: m });
    }
    expect(encodeBmcMessage(reset)).toBe(
      '{"v":3,"type":"reset","requestId":"qry-r","taskId":"t-1","kind":"host","graceSeconds":300,"issuedAt":1767225600000}',
    );
    // Without v3's fields a status stays byte for byte v1.
    expect(encodeBmcMessage({ v: 3, type: "status", requestId: "r", version: "2.0.0" })).toBe(
      '{"v":1,"type":"status","requestId":"r","version":"2.0.0"}',
    );
  });

  it("a reset without graceSeconds (bmc, ac) round-trips without it; one missing taskId is refused naming it", () => {
    const { graceSeconds: _none, ...ac } = { ...reset, kind: "ac" as const };
    expect(encodeBmcMessage(ac)).toBe(
      '{"v":3,"type":"reset","requestId":"qry-r","taskId":"t-1","kind":"ac","issuedAt":1767225600000}',
    );
    expect(decodeBmcCommand(encodeBmcMessage(ac))).toEqual({ ok: true, value: ac });
    const { taskId: _gone, ...noTask } = ac;
    const refused = decodeBmcCommand(JSON.stringify(noTask));
    expect(refused.ok ? "decoded" : refused.message).toBe("taskId: missing required field");
  });

  it("a reset in v1 or v2 is refused, and so is an unknown kind; pendingVersion before v3 is an unknown field", () => {
    const v2 = decodeBmcCommand(JSON.stringify({ ...reset, v: 2 }));
    expect(v2.ok ? "decoded" : v2.message).toBe("type: reset needs protocol version 3 (got 2)");
    const kind = decodeBmcCommand(JSON.stringify({ ...reset, kind: "reboot" }));
    expect(kind.ok ? "decoded" : kind.message).toBe(
      'kind: must be one of bmc, host, ac, rack (got "reboot")',
    );
    expect(
      decodeBmcEvent(
        '{"v":2,"type":"result","requestId":"r","ok":true,"version":"1.0.0","pendingVersion":"2.0.0"}',
      ),
    ).toEqual({ ok: true, value: { v: 2, type: "result", requestId: "r", ok: true, version: "1.0.0" } });
    const health = decodeBmcEvent(
      '{"v":3,"type":"status","requestId":"r","version":"2.0.0","health":"Sick"}',
    );
    expect(health.ok ? "decoded" : health.message).toBe(
      'health: must be one of Warning, Critical (got "Sick")',
    );
  });
});
