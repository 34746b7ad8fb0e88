/**
 * The BMC protocol codec (src/domain/bmc-protocol.ts): every message round trips, logging never
 * shows the auth blob, request ids and the image's size.
 */
import { describe, expect, it } from "vitest";
import {
  type BmcMessage,
  describeBmcMessage,
  encodeBmcMessage,
  type UpdateCommand,
  updateRequestId,
} from "../../src/domain/bmc-protocol.js";
import { decodeBmcCommand, decodeBmcEvent, decodeBmcMessage } from "../../src/domain/bmc-protocol-decode.js";
import { update } from "../support/bmc-protocol-cases.js";

const COMPONENT = "0b9a3c1e-5d2f-8a41-9c3e-7f1a2b3c4d5e";

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
