/**
 * Who asked: the caller of an operator action (create, pause, resume, advance, cancel), as the run
 * history records it. The gRPC adapter finds it per call (src/adapters/grpc/caller-identity.ts) and
 * hands it to the use cases as this plain value; nothing here knows where it came from.
 *
 * Only a verified client certificate authenticates: the one the front's own mutual TLS verified,
 * or the one the load balancer verified in mTLS verify mode and forwarded. A name the client
 * merely declares in request metadata (flowctl sends the OS user) is recorded, marked
 * unauthenticated, because an audit trail with "alice (unauthenticated)" still beats one with
 * nobody. No secret ever becomes an actor: only a certificate's subject and a declared name do.
 *
 *   CN=ops-bastion, SAN DNS:bastion.example.com, over mutual TLS
 *     → { name: "ops-bastion", source: "CLIENT_CERTIFICATE", authenticated: true,
 *         subjectAltNames: ["DNS:bastion.example.com"] }
 *   no certificate, metadata x-flow-actor: alice
 *     → { name: "alice", source: "DECLARED", authenticated: false, subjectAltNames: [] }
 */
import { canonicalDn } from "./distinguished-name.js";
import type { FieldViolation } from "./errors.js";

export const ACTOR_SOURCES = [
  /** The client certificate the front verified itself (mutual TLS on the gRPC server). */
  "CLIENT_CERTIFICATE",
  /** The client certificate the load balancer verified (ALB mTLS verify mode) and forwarded. */
  "LOAD_BALANCER_CERTIFICATE",
  /** A name from request metadata, unverified. */
  "DECLARED",
  /** Nothing at all to go by. */
  "ANONYMOUS",
] as const;
export type ActorSource = (typeof ACTOR_SOURCES)[number];

export interface Actor {
  /** The certificate subject's CN (else its first SAN's value, else the whole subject), or the declared name. */
  name: string;
  source: ActorSource;
  /** True exactly for the two certificate sources. */
  authenticated: boolean;
  /** A certificate's subject alternative names as `TYPE:value` ("DNS:…", "URI:spiffe://…", "email:…"). */
  subjectAltNames: string[];
  /** With a certificate: the name the caller also declared, unverified (a shared bastion's user). */
  declaredName?: string;
  /**
   * With a certificate: its issuer's distinguished name in canonical form (canonicalDn:
   * "C=US, CN=Ops CA, O=Example", the form a policy's `issuers` are compared in). The same name
   * under two issuers is two callers.
   */
  issuer?: string;
}

/** The longest declared name accepted; a longer one is refused, never cut. */
export const DECLARED_NAME_MAX = 128;

/** Printable ASCII: what an HTTP/2 header value carries without escaping. */
const PRINTABLE = /^[\x20-\x7e]*$/;

/**
 * A declared name as sent: trimmed; empty or absent means none. Longer than 128 characters, or
 * with anything but printable ASCII, it is refused with the rule (the adapter names the field):
 *   "  alice " → { ok, name: "alice" };  "" → { ok } (no name);  "a".repeat(200) → refused.
 */
export function checkDeclaredName(
  field: string,
  raw: string | undefined,
): { ok: true; name?: string } | { ok: false; violation: FieldViolation } {
  const name = (raw ?? "").trim();
  if (name === "") return { ok: true };
  if (name.length > DECLARED_NAME_MAX || !PRINTABLE.test(name)) {
    return {
      ok: false,
      violation: {
        field,
        rule: `must be at most ${DECLARED_NAME_MAX} printable ASCII characters (got ${name.length} characters)`,
      },
    };
  }
  return { ok: true, name };
}

/** The caller without a certificate: its declared name, unauthenticated; no name → ANONYMOUS. */
export function declaredActor(name: string | undefined): Actor {
  return name === undefined
    ? { name: "", source: "ANONYMOUS", authenticated: false, subjectAltNames: [] }
    : { name, source: "DECLARED", authenticated: false, subjectAltNames: [] };
}

/**
 * The caller of a verified certificate. `subject` is the distinguished name as lines of
 * `KEY=value` (node's X509Certificate.subject); `subjectAltNames` node's comma-separated list.
 *   ("C=DE\nCN=ops", "DNS:ops.example.com, URI:spiffe://flow/ops") → name "ops",
 *   SANs ["DNS:ops.example.com", "URI:spiffe://flow/ops"]; without a CN the name is the first
 *   SAN's value ("ops.example.com"); without either, the subject joined with ", ".
 */
export function certificateActor(
  source: "CLIENT_CERTIFICATE" | "LOAD_BALANCER_CERTIFICATE",
  subject: string,
  subjectAltNames: string | undefined,
  declaredName?: string,
  issuer?: string,
): Actor {
  const lines = subject.split("\n").filter((l) => l !== "");
  const cn = lines.find((l) => l.startsWith("CN="))?.slice(3);
  const sans = (subjectAltNames ?? "")
    .split(", ")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  const firstSan = sans[0];
  const name = cn ?? (firstSan === undefined ? lines.join(", ") : firstSan.slice(firstSan.indexOf(":") + 1));
  const actor: Actor = { name, source, authenticated: true, subjectAltNames: sans };
  if (declaredName !== undefined) actor.declaredName = declaredName;
  const issuerName = issuer === undefined ? undefined : canonicalDn(issuer);
  if (issuerName !== undefined) actor.issuer = issuerName;
  return actor;
}
