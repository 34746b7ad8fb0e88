/**
 * The caller of a call from its verified certificate (src/adapters/grpc/caller-identity.ts): the
 * names a certificate gives are read once per certificate (keyed by its SHA-256 fingerprint) and
 * kept for the most recent 1,024; the principal authorization matches carries the CN apart from
 * the SANs.
 */
import { X509Certificate } from "node:crypto";
import type { PeerCertificate } from "node:tls";
import { Metadata } from "@grpc/grpc-js";
import { afterAll, describe, expect, it } from "vitest";
import { caller } from "../../src/adapters/grpc/caller-identity.js";
import { makeCertificates } from "../support/certificates.js";

const certs = makeCertificates({
  clients: {
    alice: { cn: "alice", san: "URI:spiffe://example.org/ops/alice" },
    bob: { cn: "bob", san: "DNS:bob.example.com" },
  },
});
afterAll(() => certs.remove());

const raw = (name: string) => new X509Certificate(certs.pem(`${name}.crt`)).raw;
const callWith = (peer: Pick<PeerCertificate, "raw" | "fingerprint256">) => ({
  metadata: new Metadata(),
  getAuthContext: () => ({ sslPeerCertificate: peer as PeerCertificate }),
});

describe("caller identity from a client certificate", () => {
  it("the actor and the principal: CN apart, SANs as TYPE:value", () => {
    expect(caller(callWith({ raw: raw("alice"), fingerprint256: "fp-alice" }))).toEqual({
      actor: {
        name: "alice",
        source: "CLIENT_CERTIFICATE",
        authenticated: true,
        subjectAltNames: ["URI:spiffe://example.org/ops/alice"],
        issuer: "CN=flow-test-ca",
      },
      principal: {
        authenticated: true,
        commonName: "alice",
        issuer: "CN=flow-test-ca",
        subjectAltNames: ["URI:spiffe://example.org/ops/alice"],
      },
    });
  });

  it("a certificate's names are read once per fingerprint, and the oldest of 1,024 is read again", () => {
    const bob = raw("bob");
    // The same fingerprint with other bytes: the names kept for the fingerprint are used.
    caller(callWith({ raw: bob, fingerprint256: "fp-kept" }));
    expect(caller(callWith({ raw: raw("alice"), fingerprint256: "fp-kept" })).principal.commonName).toBe(
      "bob",
    );
    for (let i = 0; i < 1024; i++) caller(callWith({ raw: bob, fingerprint256: `fp-${i}` }));
    // fp-kept was the oldest: gone, so the bytes are read again.
    expect(caller(callWith({ raw: raw("alice"), fingerprint256: "fp-kept" })).principal.commonName).toBe(
      "alice",
    );
  });
});
