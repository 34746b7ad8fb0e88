import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  clientCredentials,
  isLoopbackHost,
  serverCredentials,
  TlsConfigError,
} from "../../src/adapters/grpc/tls.js";

const dir = mkdtempSync(join(tmpdir(), "grpc-tls-"));
const notPem = join(dir, "not.pem");
writeFileSync(notPem, "hello");
const missing = join(dir, "missing.pem");

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function errorOf(f: () => unknown): Error {
  try {
    f();
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected an error");
}

describe("grpc tls: loopback detection", () => {
  it.each([
    ["127.0.0.1", true],
    ["127.8.9.10", true],
    ["localhost", true],
    ["LOCALHOST", true],
    ["::1", true],
    ["[::1]", true],
    ["::ffff:127.0.0.1", true],
    ["0.0.0.0", false],
    ["::", false],
    ["10.0.0.5", false],
    ["128.0.0.1", false],
    ["flow.internal", false],
  ])("%s → %s", (host, loopback) => {
    expect(isLoopbackHost(host)).toBe(loopback);
  });
});

describe("grpc tls: server credentials", () => {
  it("plaintext on loopback is allowed", () => {
    expect(() => serverCredentials({ host: "127.0.0.1" })).not.toThrow();
  });

  it("plaintext on a non-loopback host is refused unless explicitly allowed", () => {
    const err = errorOf(() => serverCredentials({ host: "0.0.0.0" }));
    expect(err).toBeInstanceOf(TlsConfigError);
    expect(err.message).toBe(
      "refusing to serve plaintext gRPC on non-loopback host 0.0.0.0: configure tls.certFile and tls.keyFile, or set allowInsecureNonLoopback",
    );
    expect(() => serverCredentials({ host: "0.0.0.0", allowInsecureNonLoopback: true })).not.toThrow();
  });

  it("a missing file is named with its setting and path", () => {
    expect(
      errorOf(() => serverCredentials({ host: "0.0.0.0", tls: { certFile: missing, keyFile: notPem } }))
        .message,
    ).toBe(`tls.certFile: cannot read ${missing}: file not found`);
    expect(
      errorOf(() => serverCredentials({ host: "0.0.0.0", tls: { certFile: notPem, keyFile: missing } }))
        .message,
    ).toBe(`tls.certFile: ${notPem} is not a PEM file (no "-----BEGIN" line)`);
  });

  it("client credentials need a certificate and a key together", () => {
    expect(errorOf(() => clientCredentials({ certFile: notPem })).message).toBe(
      "tls.certFile and tls.keyFile must be given together",
    );
    expect(errorOf(() => clientCredentials({ caFile: missing })).message).toBe(
      `tls.caFile: cannot read ${missing}: file not found`,
    );
  });
});
