/** Callers as the history records them (src/domain/actor.ts): declared names and certificate subjects. */
import { describe, expect, it } from "vitest";
import { certificateActor, checkDeclaredName, declaredActor } from "../../src/domain/actor.js";

describe("actor: a declared name", () => {
  it.each<[string, string | undefined, string | undefined]>([
    ["a plain name", "alice", "alice"],
    ["trimmed", "  alice  ", "alice"],
    ["empty is none", "", undefined],
    ["blanks are none", "   ", undefined],
    ["absent is none", undefined, undefined],
    ["128 characters is the most", "a".repeat(128), "a".repeat(128)],
    ["printable ASCII of every kind", "svc-deploy@ci:42/#1", "svc-deploy@ci:42/#1"],
  ])("%s", (_name, raw, expected) => {
    expect(checkDeclaredName("metadata x-flow-actor", raw)).toEqual(
      expected === undefined ? { ok: true } : { ok: true, name: expected },
    );
  });

  it.each<[string, string, number]>([
    ["129 characters", "a".repeat(129), 129],
    ["a control character", "al\tice", 6],
    ["non-ASCII", "zoë", 3],
  ])("%s is refused with the field and the rule", (_name, raw, length) => {
    expect(checkDeclaredName("metadata x-flow-actor", raw)).toEqual({
      ok: false,
      violation: {
        field: "metadata x-flow-actor",
        rule: `must be at most 128 printable ASCII characters (got ${length} characters)`,
      },
    });
  });

  it("a declared name is unauthenticated; no name at all is ANONYMOUS", () => {
    expect(declaredActor("alice")).toEqual({
      name: "alice",
      source: "DECLARED",
      authenticated: false,
      subjectAltNames: [],
    });
    expect(declaredActor(undefined)).toEqual({
      name: "",
      source: "ANONYMOUS",
      authenticated: false,
      subjectAltNames: [],
    });
  });
});

describe("actor: a verified certificate", () => {
  it("the subject's CN is the name; every SAN is kept as TYPE:value", () => {
    expect(
      certificateActor(
        "CLIENT_CERTIFICATE",
        "C=DE\nO=Flow\nCN=ops-bastion",
        "DNS:bastion.example.com, URI:spiffe://flow/ops",
      ),
    ).toEqual({
      name: "ops-bastion",
      source: "CLIENT_CERTIFICATE",
      authenticated: true,
      subjectAltNames: ["DNS:bastion.example.com", "URI:spiffe://flow/ops"],
    });
  });

  it("without a CN: the first SAN's value; without either: the whole subject", () => {
    expect(certificateActor("LOAD_BALANCER_CERTIFICATE", "O=Flow", "URI:spiffe://flow/ci").name).toBe(
      "spiffe://flow/ci",
    );
    expect(certificateActor("LOAD_BALANCER_CERTIFICATE", "C=DE\nO=Flow", undefined)).toEqual({
      name: "C=DE, O=Flow",
      source: "LOAD_BALANCER_CERTIFICATE",
      authenticated: true,
      subjectAltNames: [],
    });
  });

  it("a name the caller also declared is kept beside the certificate's, not instead of it", () => {
    expect(certificateActor("CLIENT_CERTIFICATE", "CN=ops", "", "alice")).toEqual({
      name: "ops",
      source: "CLIENT_CERTIFICATE",
      authenticated: true,
      subjectAltNames: [],
      declaredName: "alice",
    });
  });

  it("a certificate's issuer is kept as its canonical DN (attributes sorted); none without it", () => {
    expect(
      certificateActor("CLIENT_CERTIFICATE", "CN=ops", "", undefined, "C=US\nO=Example\nCN=Ops CA"),
    ).toEqual({
      name: "ops",
      source: "CLIENT_CERTIFICATE",
      authenticated: true,
      subjectAltNames: [],
      issuer: "C=US, CN=Ops CA, O=Example",
    });
    expect(certificateActor("CLIENT_CERTIFICATE", "CN=ops", "", undefined, "")).not.toHaveProperty("issuer");
  });
});
