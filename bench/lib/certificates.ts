/**
 * Certificates for the TLS and mutual-TLS tests, made by openssl in a temporary directory: a CA, a
 * server certificate for 127.0.0.1 / localhost, and client certificates with the subjects and SANs
 * a test asks for, all P-256, valid for a day.
 *
 *   const certs = makeCertificates({ clients: { ops: { cn: "ops", san: "DNS:ops.example.com" } } });
 *   certs.file("ca.crt"); certs.file("ops.crt"); certs.file("ops.key"); certs.pem("ops.crt");
 *   certs.remove();
 *
 * More CAs: `cas: { other: { cn: "other-ca" } }` writes other.crt/key, a client with `ca: "other"`
 * is signed by it, and `client-cas.crt` bundles every CA (what a server given --client-ca trusts).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface ClientCertificateSpec {
  /** The subject, e.g. "/O=Flow/CN=ops"; default `/CN=<cn>`. */
  subject?: string;
  cn?: string;
  /** An openssl subjectAltName value, e.g. "DNS:ops.example.com,URI:spiffe://flow/ops". */
  san?: string;
  /** The CA that signs it, one of `cas`; default the main CA (ca.crt). */
  ca?: string;
}

export interface Certificates {
  dir: string;
  /** The path of `name` in the directory (ca.crt, server.crt, server.key, <client>.crt, <client>.key). */
  file(name: string): string;
  /** The file's content. */
  pem(name: string): string;
  remove(): void;
}

/** Writes ca.crt/key, server.crt/key and, per client name, <name>.crt/key, signed by the CA. */
export function makeCertificates(options: {
  clients: Record<string, ClientCertificateSpec>;
  /** More CAs by file name, each with its common name. */
  cas?: Record<string, { cn: string }>;
}): Certificates {
  const dir = mkdtempSync(join(tmpdir(), "flow-certs-"));
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const key = (name: string) =>
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", file(name));

  const authority = (name: string, cn: string) => {
    key(`${name}.key`);
    openssl(
      "req",
      "-x509",
      "-new",
      "-key",
      file(`${name}.key`),
      "-subj",
      `/CN=${cn}`,
      "-days",
      "1",
      "-out",
      file(`${name}.crt`),
    );
  };
  const cas = ["ca", ...Object.keys(options.cas ?? {})];
  authority("ca", "flow-test-ca");
  for (const [name, spec] of Object.entries(options.cas ?? {})) authority(name, spec.cn);
  writeFileSync(file("client-cas.crt"), cas.map((ca) => readFileSync(file(`${ca}.crt`), "utf8")).join(""));
  const sign = (name: string, subject: string, ext: string, ca = "ca") => {
    key(`${name}.key`);
    openssl("req", "-new", "-key", file(`${name}.key`), "-subj", subject, "-out", file(`${name}.csr`));
    writeFileSync(file(`${name}.ext`), ext);
    openssl(
      "x509",
      "-req",
      "-in",
      file(`${name}.csr`),
      "-CA",
      file(`${ca}.crt`),
      "-CAkey",
      file(`${ca}.key`),
      "-CAcreateserial",
      "-days",
      "1",
      "-extfile",
      file(`${name}.ext`),
      "-out",
      file(`${name}.crt`),
    );
  };
  sign("server", "/CN=localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  for (const [name, spec] of Object.entries(options.clients)) {
    const san = spec.san === undefined ? "" : `subjectAltName=${spec.san}\n`;
    sign(name, spec.subject ?? `/CN=${spec.cn ?? name}`, `${san}extendedKeyUsage=clientAuth\n`, spec.ca);
  }
  return {
    dir,
    file,
    pem: (name) => readFileSync(file(name), "utf8"),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
