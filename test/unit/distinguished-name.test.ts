import { describe, expect, it } from "vitest";
import { canonicalDn } from "../../src/domain/distinguished-name.js";

describe("canonicalDn: one form for an issuer however it was written", () => {
  it("openssl's, RFC 4514's and node's forms of one name are equal", () => {
    const expected = "C=US, CN=Ops CA, O=Example";
    expect(canonicalDn("C = US, O = Example, CN = Ops CA")).toBe(expected);
    expect(canonicalDn("CN=Ops CA,O=Example,C=US")).toBe(expected);
    expect(canonicalDn("C=US\nO=Example\nCN=Ops CA\n")).toBe(expected);
    expect(canonicalDn("cn=Ops CA, o=Example, c=US")).toBe(expected);
  });

  it("values are compared exactly; an escaped comma belongs to its value", () => {
    expect(canonicalDn("CN=ops ca")).not.toBe(canonicalDn("CN=Ops CA"));
    expect(canonicalDn("O=Example\\, Inc., CN=CA")).toBe("CN=CA, O=Example, Inc.");
  });

  it("not a distinguished name: undefined", () => {
    for (const text of ["", " , ", "Ops CA", "CN=", "=x", "CN=a, junk"]) {
      expect(canonicalDn(text), JSON.stringify(text)).toBeUndefined();
    }
  });
});
