/** The TLS tests' certificates (in bench/lib: the authorization benchmark makes them too). */
export {
  type Certificates,
  type ClientCertificateSpec,
  makeCertificates,
} from "../../bench/lib/certificates.js";
