/**
 * What each BMC protocol version adds (src/domain/bmc-protocol.ts): a status that says the BMC is
 * not ready (v1 and v2), sub-targets (v2) and activation (v3).
 */
import { describe, expect, it } from "vitest";
import {
  type BmcMessage,
  encodeBmcMessage,
  type UpdateCommand,
  versionFor,
} from "../../src/domain/bmc-protocol.js";
import { decodeBmcCommand, decodeBmcEvent, decodeBmcMessage } from "../../src/domain/bmc-protocol-decode.js";

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
