import { describe, expect, it } from "vitest";
import {
  CLIENT_REQUEST_TTL_MS,
  canonicalJson,
  checkClientRequestId,
  clientRequestReused,
  credentialsMacMessage,
  requestFingerprint,
} from "../../src/domain/client-request.js";
import type { CreateRunInput } from "../../src/domain/create-run-input.js";

const input = (overrides: Partial<CreateRunInput> = {}, secret?: string): CreateRunInput => ({
  name: "rollout",
  description: "d",
  configuration: {
    selector: { kind: "percentage", percentage: 10, seed: "" },
    options: { maxConcurrentTargets: 2, safetyPolicy: { gates: [] } },
    operation: {
      upgradeFirmware: {
        description: "fw",
        subTargets: [],
        overrideReadinessCheck: false,
        overrideVersionCheck: false,
        targetSpec: {
          kind: "racks",
          racks: [
            { ref: { by: "name", name: "a" }, componentTypes: [] },
            { ref: { by: "name", name: "b" }, componentTypes: [] },
          ],
        },
        ...(secret === undefined ? {} : { authentication: { kind: "shared", secret } }),
      },
    },
  },
  ...overrides,
});

describe("client request id: the rule", () => {
  it.each([["a"], ["4f6f1a9e-0000-4000-8000-000000000001"], ["!~"], ["x".repeat(64)]])(
    "%j is an id",
    (id) => {
      expect(checkClientRequestId(id)).toBeUndefined();
    },
  );

  it.each([
    ["x".repeat(65), 65],
    ["with space", 10],
    ["tab\t", 4],
    ["ünïcode", 7],
    ["", 0],
  ])("%j is refused, naming the field", (id, length) => {
    expect(checkClientRequestId(id)).toEqual({
      field: "client_request_id",
      rule: `must be 1 to 64 printable ASCII characters without spaces, e.g. a UUID (got ${length} characters)`,
    });
  });

  it("a reused id answers with the field and what to do; ids are kept a day", () => {
    expect(clientRequestReused).toEqual({
      field: "client_request_id",
      rule: "was used for a different request; a retry must resend the same request",
    });
    expect(CLIENT_REQUEST_TTL_MS).toBe(86_400_000);
  });
});

describe("client request id: the same request", () => {
  it("canonical JSON sorts keys at every level, drops undefined members, keeps array order", () => {
    expect(canonicalJson({ b: 1, a: [2, { d: undefined, c: 3 }] })).toBe('{"a":[2,{"c":3}],"b":1}');
    expect(canonicalJson({ a: null })).toBe('{"a":null}');
  });

  it("the fingerprint is a SHA-256 in hex, and key order or undefined members do not change it", () => {
    const fp = requestFingerprint(input());
    expect(fp).toMatch(/^[0-9a-f]{64}$/);
    const reversed = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(reversed);
      if (value === null || typeof value !== "object") return value;
      return Object.fromEntries(
        Object.entries(value)
          .reverse()
          .map(([k, v]) => [k, reversed(v)]),
      );
    };
    expect(requestFingerprint(reversed(input()) as CreateRunInput)).toBe(fp);
    expect(
      requestFingerprint({ ...input(), configuration: { ...input().configuration, options: undefined } }),
    ).not.toBe(fp);
    const withUndefined = input();
    (withUndefined.configuration as Record<string, unknown>).extra = undefined;
    expect(requestFingerprint(withUndefined)).toBe(fp);
  });

  it.each<[string, CreateRunInput]>([
    ["the name", input({ name: "rollout-2" })],
    ["the description", input({ description: "" })],
    [
      "the order of target entries",
      (() => {
        const i = input();
        const fw = i.configuration?.operation?.upgradeFirmware;
        if (fw?.targetSpec?.kind === "racks") fw.targetSpec.racks.reverse();
        return i;
      })(),
    ],
    [
      "a seed",
      {
        ...input(),
        configuration: {
          ...input().configuration,
          selector: { kind: "percentage", percentage: 10, seed: "s" },
        },
      },
    ],
    ["credentials added", input({}, "pw")],
  ])("%s changes it", (_what, other) => {
    expect(requestFingerprint(other)).not.toBe(requestFingerprint(input()));
  });

  it("credentials: the fingerprint keeps their shape, never their value", () => {
    expect(requestFingerprint(input({}, "pw-1"))).toBe(requestFingerprint(input({}, "pw-2")));
    const perComponent = input();
    const fw = perComponent.configuration?.operation?.upgradeFirmware;
    if (fw) fw.authentication = { kind: "perComponent", compute: "x" };
    expect(requestFingerprint(perComponent)).not.toBe(requestFingerprint(input({}, "x")));
  });

  it("the MAC message binds the id, the fingerprint and the credentials' values, in canonical order", () => {
    const a = credentialsMacMessage("r1", "f", { kind: "perComponent", compute: "a", nvswitch: "b" });
    expect(a).toBe(credentialsMacMessage("r1", "f", { kind: "perComponent", nvswitch: "b", compute: "a" }));
    expect(a).not.toBe(
      credentialsMacMessage("r2", "f", { kind: "perComponent", compute: "a", nvswitch: "b" }),
    );
    expect(a).not.toBe(
      credentialsMacMessage("r1", "g", { kind: "perComponent", compute: "a", nvswitch: "b" }),
    );
    expect(a).not.toBe(
      credentialsMacMessage("r1", "f", { kind: "perComponent", compute: "a", nvswitch: "c" }),
    );
  });
});
