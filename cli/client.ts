/**
 * The connection to the Flow service: the generated service definitions behind promise-returning
 * methods, one deadline per call, plaintext or TLS.
 *
 *   const conn = connect({ endpoint: "127.0.0.1:50051", timeoutMs: 30_000 });
 *   const { id } = await conn.flow.createOperationRun(request);
 *   conn.close();
 */

import { readFileSync } from "node:fs";
import {
  type ChannelCredentials,
  credentials,
  Metadata,
  makeGenericClientConstructor,
  type ServiceError,
} from "@grpc/grpc-js";
import { FlowService } from "../src/gen/flow/v1/flow.js";
import { FlowInventoryAdminService } from "../src/gen/flowadmin/v1/admin.js";
import { UsageError } from "./errors.js";

/** Every unary method of a ts-proto grpc-js service definition, as `(request) => Promise<response>`. */
export type PromiseClient<D> = {
  [K in keyof D]: D[K] extends {
    requestSerialize: (value: infer Req) => Buffer;
    responseDeserialize: (value: Buffer) => infer Res;
  }
    ? (request: Req) => Promise<Res>
    : never;
};

export interface TlsOptions {
  /** PEM CA bundle that signed the server's certificate; absent = the system's roots. */
  ca?: string;
  /** Client certificate chain and key for mutual TLS: both or neither. */
  cert?: string;
  key?: string;
}

export interface ConnectOptions {
  /** `host:port`. */
  endpoint: string;
  /** Absent = plaintext. */
  tls?: TlsOptions;
  /** Deadline of each call. */
  timeoutMs: number;
  /**
   * Sent as `x-flow-actor` on every call: who the run history records for a change, marked
   * unauthenticated (a client certificate, when there is one, is what authenticates).
   */
  actor?: string;
}

/** The metadata key the service reads a declared caller name from (src/adapters/grpc/caller-identity.ts). */
export const ACTOR_METADATA_KEY = "x-flow-actor";

/** The longest declared name the service takes. */
const MAX_ACTOR = 128;

/**
 * The OS user as a header value: printable ASCII is sent as it is; anything else percent-encoded
 * (`zoë` → `zo%C3%AB`), so that a name HTTP/2 cannot carry still identifies its user. Empty, or
 * longer than the service takes even so: undefined (nothing sent, the change is anonymous).
 */
export function actorHeaderValue(user: string | undefined): string | undefined {
  const trimmed = (user ?? "").trim();
  const value = /^[\x20-\x7e]*$/.test(trimmed) ? trimmed : encodeURIComponent(trimmed);
  return value === "" || value.length > MAX_ACTOR ? undefined : value;
}

export interface Connection {
  readonly endpoint: string;
  readonly flow: PromiseClient<typeof FlowService>;
  readonly admin: PromiseClient<typeof FlowInventoryAdminService>;
  close(): void;
}

export function connect(options: ConnectOptions): Connection {
  const creds = channelCredentials(options.tls);
  // Both services share one HTTP/2 connection: grpc-js pools channels with equal target and options.
  const channelOptions = { "grpc.enable_retries": 0 };
  const FlowCtor = makeGenericClientConstructor(FlowService, "v1.Flow");
  const AdminCtor = makeGenericClientConstructor(
    FlowInventoryAdminService,
    "flowadmin.v1.FlowInventoryAdmin",
  );
  const flowClient = new FlowCtor(options.endpoint, creds, channelOptions);
  const adminClient = new AdminCtor(options.endpoint, creds, channelOptions);
  const call = { timeoutMs: options.timeoutMs, actor: options.actor };
  return {
    endpoint: options.endpoint,
    flow: promisify(flowClient, FlowService, call),
    admin: promisify(adminClient, FlowInventoryAdminService, call),
    close() {
      flowClient.close();
      adminClient.close();
    },
  };
}

type UnaryCallback = (err: ServiceError | null, response: unknown) => void;
type UnaryMethod = (
  request: unknown,
  metadata: Metadata,
  options: { deadline: Date },
  cb: UnaryCallback,
) => void;

function promisify<D extends object>(
  client: object,
  definition: D,
  options: { timeoutMs: number; actor: string | undefined },
): PromiseClient<D> {
  const out: Record<string, (request: unknown) => Promise<unknown>> = {};
  const metadata = () => {
    const m = new Metadata();
    if (options.actor !== undefined) m.set(ACTOR_METADATA_KEY, options.actor);
    return m;
  };
  for (const [name, spec] of Object.entries(definition) as [string, { path: string }][]) {
    const method = (client as Record<string, UnaryMethod>)[name]!.bind(client);
    // `/v1.Flow/PlanOperationRun` → `PlanOperationRun`, for messages that name the failed call.
    const rpc = spec.path.slice(spec.path.lastIndexOf("/") + 1);
    const timeoutMs = options.timeoutMs;
    out[name] = (request) =>
      new Promise((resolve, reject) => {
        method(request, metadata(), { deadline: new Date(Date.now() + timeoutMs) }, (err, response) => {
          if (err !== null) reject(Object.assign(err, { rpc }));
          else resolve(response);
        });
      });
  }
  return out as PromiseClient<D>;
}

function channelCredentials(tls: TlsOptions | undefined): ChannelCredentials {
  if (tls === undefined) return credentials.createInsecure();
  if ((tls.cert === undefined) !== (tls.key === undefined)) {
    throw new UsageError("--cert and --key must be given together (mutual TLS needs both)");
  }
  return credentials.createSsl(
    tls.ca === undefined ? null : readPem("--ca", tls.ca),
    tls.key === undefined ? null : readPem("--key", tls.key),
    tls.cert === undefined ? null : readPem("--cert", tls.cert),
  );
}

function readPem(flag: string, path: string): Buffer {
  let content: Buffer;
  try {
    content = readFileSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UsageError(
      `${flag} ${path}: cannot read the file (${code === "ENOENT" ? "file not found" : String(err)})`,
    );
  }
  if (!content.toString("utf8").includes("-----BEGIN ")) {
    throw new UsageError(`${flag} ${path}: not a PEM file (no "-----BEGIN" line)`);
  }
  return content;
}
