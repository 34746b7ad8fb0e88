/**
 * Who is calling, per call, as the plain `Actor` the use cases record (src/domain/actor.ts). In
 * order of trust:
 *
 *   1. the client certificate the server verified itself (mutual TLS: grpc-js hands it over only
 *      for a socket whose certificate chain verified, `call.getAuthContext()`);
 *   2. behind the load balancer, the client certificate it verified in ALB mTLS verify mode and
 *      forwards as `x-amzn-mtls-clientcert-leaf` (URL-encoded PEM of the leaf). Read ONLY when the
 *      front is configured to be behind such a load balancer (`trustLoadBalancerClientCert`): any
 *      client can send the header itself, so without that setting it is ignored, and with it the
 *      deployment guarantees that every call came through the load balancer, which sets it;
 *   3. otherwise the name the caller declares in `x-flow-actor` (flowctl sends the OS user),
 *      unauthenticated; nothing at all → ANONYMOUS.
 *
 * A declared name beside a certificate is kept as `declaredName`. A malformed `x-flow-actor`
 * (longer than 128 characters, not printable ASCII) is InvalidArgument naming it, like any bad
 * field; it is read only by the calls that record a caller (create and the controls).
 * Nothing here reads an authentication secret; only certificate subjects, issuers and names.
 *
 * ALB verify mode, not passthrough: in passthrough mode the load balancer forwards the chain
 * (`x-amzn-mtls-clientcert`) WITHOUT verifying it, so it would prove nothing.
 */
import { X509Certificate } from "node:crypto";
import type { PeerCertificate } from "node:tls";
import type { Metadata } from "@grpc/grpc-js";
import type { Principal } from "../../domain/access-policy.js";
import { type Actor, certificateActor, checkDeclaredName, declaredActor } from "../../domain/actor.js";
import { canonicalDn } from "../../domain/distinguished-name.js";
import { ValidationError } from "../../domain/errors.js";

/** The metadata key of a self-declared caller name. */
export const ACTOR_METADATA_KEY = "x-flow-actor";
/** The header an ALB in mTLS verify mode forwards: the verified leaf certificate, URL-encoded PEM. */
export const LOAD_BALANCER_CERT_HEADER = "x-amzn-mtls-clientcert-leaf";

export interface CallerIdentityOptions {
  /**
   * Read the client certificate the load balancer forwards. Only for a front that is reachable
   * through that load balancer alone, with its listener in mTLS verify mode (the CDK app sets it
   * exactly then).
   */
  trustLoadBalancerClientCert?: boolean;
}

/** What of a grpc-js server call identity needs (tests pass a stand-in). */
export interface IdentifiableCall {
  metadata: Metadata;
  /** grpc-js's AuthContext (not exported by its index): the verified peer's certificate, if any. */
  getAuthContext(): { sslPeerCertificate?: PeerCertificate } | null;
}

export function callerIdentity(call: IdentifiableCall, options: CallerIdentityOptions = {}): Actor {
  return caller(call, options).actor;
}

/**
 * The caller as the run history records it (`actor`) and as the access policy matches it
 * (`principal`: the certificate's common name and SANs, or the declared name, unverified).
 */
export function caller(
  call: IdentifiableCall,
  options: CallerIdentityOptions = {},
): { actor: Actor; principal: Principal } {
  const declared = declaredName(call.metadata);
  const peer = call.getAuthContext()?.sslPeerCertificate;
  if (peer?.raw !== undefined) {
    const raw = peer.raw;
    const named = certificateNames(`peer:${peer.fingerprint256}`, () => new X509Certificate(raw));
    return fromCertificate("CLIENT_CERTIFICATE", named, declared);
  }
  if (options.trustLoadBalancerClientCert === true) {
    const forwarded = single(call.metadata, LOAD_BALANCER_CERT_HEADER);
    if (forwarded !== undefined) {
      const named = certificateNames(`lb:${forwarded}`, () => forwardedCertificate(forwarded));
      return fromCertificate("LOAD_BALANCER_CERTIFICATE", named, declared);
    }
  }
  const actor = declaredActor(declared);
  return {
    actor,
    principal: {
      authenticated: false,
      subjectAltNames: [],
      ...(declared === undefined ? {} : { declaredName: declared }),
    },
  };
}

/** What identity reads of a certificate: its subject and SANs. */
interface CertificateNames {
  subject: string;
  subjectAltName: string | undefined;
  issuer: string;
}

/**
 * Parsing a certificate and reading its names costs a few hundred microseconds, more than the
 * whole authorization decision; a client sends the same certificate on every call. So the names
 * are kept per certificate (keyed by its SHA-256 fingerprint, or the forwarded header's exact
 * text), for the most recent CERTIFICATE_CACHE_SIZE certificates. A pure function of the bytes:
 * nothing about trust is cached (the TLS layer or the load balancer verifies every connection).
 */
const CERTIFICATE_CACHE_SIZE = 1024;
const certificateCache = new Map<string, CertificateNames>();

function certificateNames(key: string, parse: () => X509Certificate): CertificateNames {
  const cached = certificateCache.get(key);
  if (cached !== undefined) return cached;
  const cert = parse();
  const names = { subject: cert.subject, subjectAltName: cert.subjectAltName, issuer: cert.issuer };
  if (certificateCache.size >= CERTIFICATE_CACHE_SIZE) {
    // The oldest entry (a Map iterates in insertion order).
    certificateCache.delete(certificateCache.keys().next().value as string);
  }
  certificateCache.set(key, names);
  return names;
}

function fromCertificate(
  source: "CLIENT_CERTIFICATE" | "LOAD_BALANCER_CERTIFICATE",
  cert: CertificateNames,
  declared: string | undefined,
): { actor: Actor; principal: Principal } {
  const actor = certificateActor(source, cert.subject, cert.subjectAltName, declared, cert.issuer);
  const issuer = canonicalDn(cert.issuer);
  const commonName = cert.subject
    .split("\n")
    .find((l) => l.startsWith("CN="))
    ?.slice(3);
  return {
    actor,
    principal: {
      authenticated: true,
      subjectAltNames: actor.subjectAltNames,
      ...(commonName === undefined ? {} : { commonName }),
      ...(issuer === undefined ? {} : { issuer }),
      ...(declared === undefined ? {} : { declaredName: declared }),
    },
  };
}

function declaredName(metadata: Metadata): string | undefined {
  const field = `metadata ${ACTOR_METADATA_KEY}`;
  const checked = checkDeclaredName(field, single(metadata, ACTOR_METADATA_KEY));
  if (!checked.ok) throw new ValidationError([checked.violation]);
  return checked.name;
}

/** The string value of `key` (grpc-js joins a key sent twice into one value, "a, b"). */
function single(metadata: Metadata, key: string): string | undefined {
  const value = metadata.get(key)[0];
  return value === undefined ? undefined : value.toString();
}

function forwardedCertificate(header: string): X509Certificate {
  try {
    return new X509Certificate(decodeURIComponent(header));
  } catch {
    throw new ValidationError([
      { field: `metadata ${LOAD_BALANCER_CERT_HEADER}`, rule: "must be a URL-encoded PEM certificate" },
    ]);
  }
}
