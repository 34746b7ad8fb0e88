/**
 * A certificate issuer's distinguished name, in one comparable form. A person copies an issuer
 * from `openssl x509 -noout -issuer` ("C = US, O = Example, CN = Ops CA"), from an RFC 4514 string
 * ("CN=Ops CA,O=Example,C=US", the reverse order) or from node's X509Certificate.issuer (one
 * `KEY=value` per line); all three name the same CA:
 *
 *   canonicalDn("C = US, O = Example, CN = Ops CA") → "C=US, CN=Ops CA, O=Example"
 *   canonicalDn("CN=Ops CA\nO=Example\nC=US")        → "C=US, CN=Ops CA, O=Example"
 *
 * Attribute types are compared case-insensitively, values exactly (after trimming); the order of
 * the attributes does not matter (no PKI issues two CAs whose names differ only in order). A comma
 * inside a value is written `\,` in the comma form. Undefined: not a DN (a part without `=`, an
 * empty type or value).
 */

export function canonicalDn(text: string): string | undefined {
  const parts = text.includes("\n") ? text.split("\n") : splitUnescaped(text);
  const pairs: string[] = [];
  for (const part of parts) {
    if (part.trim() === "") continue;
    const eq = part.indexOf("=");
    if (eq < 0) return undefined;
    const type = part.slice(0, eq).trim().toUpperCase();
    const value = part
      .slice(eq + 1)
      .trim()
      .replace(/\\,/g, ",");
    if (type === "" || value === "") return undefined;
    pairs.push(`${type}=${value}`);
  }
  return pairs.length === 0 ? undefined : pairs.sort().join(", ");
}

/** Splits on commas not preceded by a backslash (the backslash stays, canonicalDn drops it). */
function splitUnescaped(text: string): string[] {
  const parts: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "," && text[i - 1] !== "\\") {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}
