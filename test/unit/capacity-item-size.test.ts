/**
 * DynamoDB's sizing rules in the capacity estimate (bench/lib/capacity-estimate.ts): the size of a
 * number, a value and an item, capacity units from bytes, and what an UpdateExpression touches.
 */
import { describe, expect, it } from "vitest";
import {
  type AttributeMap,
  type AttributeValue,
  itemSize,
  numberSize,
  planUpdate,
  readUnitsFor,
  toAttributeMap,
  valueSize,
  writeUnitsFor,
} from "../../bench/lib/capacity-estimate.js";

describe("numberSize: ⌈significant digits / 2⌉ + 1 bytes, +1 when negative", () => {
  it.each([
    ["12", 2],
    ["0", 2],
    ["100", 2], // trailing zeros do not count: one digit
    ["007", 2], // nor leading ones
    ["123", 3],
    ["123.45", 4], // 5 digits
    ["1764432000000", 5], // epoch ms: 1764432 → 7 digits
    ["-0.5", 3],
    ["1e10", 2],
  ])("%s → %i bytes", (text, bytes) => {
    expect(numberSize(text)).toBe(bytes);
  });
});

describe("valueSize: bytes of one value without its name", () => {
  it.each<[string, AttributeValue, number]>([
    ["ASCII string", { S: "PENDING" }, 7],
    ["UTF-8 string: é is 2 bytes", { S: "héllo" }, 6],
    ["binary: raw bytes, not base64", { B: new Uint8Array(10) }, 10],
    ["boolean", { BOOL: false }, 1],
    ["null", { NULL: true }, 1],
    ["string set: the members", { SS: ["a", "bc"] }, 3],
    ["number set", { NS: ["12", "123"] }, 5],
    ["list: 3 + (1 + element) each", { L: [{ S: "a" }, { N: "12" }] }, 3 + (1 + 1) + (1 + 2)],
    ["map: 3 + (1 + name + value) each", { M: { a: { S: "xy" } } }, 3 + (1 + 1 + 2)],
    ["empty list", { L: [] }, 3],
    ["nested map in list", { L: [{ M: { k: { BOOL: true } } }] }, 3 + 1 + (3 + 1 + 1 + 1)],
  ])("%s", (_label, value, bytes) => {
    expect(valueSize(value)).toBe(bytes);
  });
});

describe("itemSize: attribute names plus values", () => {
  it("the module's worked example is 43 bytes", () => {
    // runId 5+3, status 6+7, inFlight 8+2, tags 4 + (3 + 2 + 3)
    const item: AttributeMap = {
      runId: { S: "r-1" },
      status: { S: "PENDING" },
      inFlight: { N: "12" },
      tags: { L: [{ S: "a" }, { S: "bc" }] },
    };
    expect(itemSize(item)).toBe(43);
  });

  it("a document-client item sizes the same as its AttributeValue form", () => {
    const native = {
      runId: "r-1",
      status: "PENDING",
      inFlight: 12,
      tags: ["a", "bc"],
      ok: true,
      none: null,
      names: new Set(["x", "yz"]),
    };
    const wire = toAttributeMap(native, "native");
    expect(wire.names).toEqual({ SS: ["x", "yz"] });
    expect(itemSize(wire)).toBe(43 + (2 + 1) + (4 + 1) + (5 + 3));
  });
});

describe("capacity units from bytes", () => {
  it.each([
    [0, 1],
    [1, 1],
    [1024, 1],
    [1025, 2],
    [3000, 3],
  ])("write: %i bytes → %i WCU (1 KB units, at least 1)", (bytes, units) => {
    expect(writeUnitsFor(bytes)).toBe(units);
  });

  it.each([
    [0, true, 1],
    [4096, true, 1],
    [4097, true, 2],
    [4097, false, 1],
    [0, false, 0.5],
    [10_240, true, 3], // 10 KB rounds up to 12 KB
  ])("read: %i bytes, consistent %s → %d RCU", (bytes, consistent, units) => {
    expect(readUnitsFor(bytes, consistent)).toBe(units);
  });
});

describe("planUpdate: what an UpdateExpression touches and leaves", () => {
  it("SET with a name placeholder, arithmetic and REMOVE", () => {
    const plan = planUpdate(
      "SET #s = :claimed, inFlight = inFlight + :one REMOVE expiresAt",
      { "#s": "status" },
      { ":claimed": { S: "CLAIMED" }, ":one": { N: "1" } },
    );
    expect([...plan.touched].sort()).toEqual(["expiresAt", "inFlight", "status"]);
    expect([...plan.removed]).toEqual(["expiresAt"]);
    const before: AttributeMap = {
      pk: { S: "a" },
      status: { S: "PENDING" },
      inFlight: { N: "12" },
      expiresAt: { N: "1700000000" },
    };
    expect(plan.apply(before)).toEqual({ pk: { S: "a" }, status: { S: "CLAIMED" }, inFlight: { N: "12" } });
  });

  it("ADD to a counter, if_not_exists and list_append", () => {
    const plan = planUpdate(
      "ADD #c :one SET firstAt = if_not_exists(firstAt, :now), log = list_append(log, :entry)",
      { "#c": "completed" },
      { ":one": { N: "1" }, ":now": { N: "1764432000000" }, ":entry": { L: [{ S: "x" }] } },
    );
    const after = plan.apply({ pk: { S: "a" }, log: { L: [{ S: "w" }] } });
    expect(after).toEqual({
      pk: { S: "a" },
      completed: { N: "1" },
      firstAt: { N: "1764432000000" },
      log: { L: [{ S: "w" }, { S: "x" }] },
    });
  });
});
