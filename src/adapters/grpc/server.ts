/**
 * The gRPC front: Flow (v1.Flow) and inventory administration (flowadmin.v1.FlowInventoryAdmin),
 * plus the standard health service and server reflection.
 *
 * Every RPC goes through `unaryHandler`, the one wrapper that:
 *   1. answers DEADLINE_EXCEEDED without calling the application when the deadline has already
 *      passed (a request that sat in a queue is not worth starting);
 *   2. admits the call or sheds it: RESOURCE_EXHAUSTED at once when the calls in progress, or the
 *      calls that plan runs, are at their limit (admission.ts);
 *   3. decodes the request bytes itself, so garbage is InvalidArgument (grpc-js would answer a
 *      failing deserializer with Internal), with strict UTF-8 and no control characters in any
 *      string field (request-text.ts);
 *   4. authorizes the call under the access policy, when there is one (authorize.ts): the one
 *      place that answers UNAUTHENTICATED and PERMISSION_DENIED, before any use case runs;
 *   5. calls the handler with the call's deadline and a way to ask whether anyone still waits for
 *      the answer (a create does not commit for nobody), encodes the answer, and maps any error
 *      through status.ts;
 *   6. calls back exactly once, and not at all once the call is cancelled (the client went away, or
 *      grpc-js already answered DEADLINE_EXCEEDED on its own timer).
 *
 * Health: SERVING, NOT_SERVING while `storeHealth` says the data store is unreachable (so a load
 * balancer or a probe sees a dead store, src/app/store-health.ts), SERVING again when it is back.
 *
 * Shutdown: health goes NOT_SERVING first (load balancers stop routing), then, after an optional
 * drain pause, the server stops accepting calls and lets in-flight ones finish for `graceMs`; what
 * is still running then is cancelled.
 */

import { isIP } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ReflectionService } from "@grpc/reflection";
import { HealthImplementation, protoPath as healthProtoPath } from "grpc-health-check";
import type { FlowApi } from "../../app/api.js";
import type { Logger } from "../../app/observability.js";
import { bindingsOf } from "../../domain/access-policy.js";
import { DeadlineExceededError, FlowError, InvalidArgumentError } from "../../domain/errors.js";
import { FlowService } from "../../gen/flow/v1/flow.js";
import { FlowInventoryAdminService } from "../../gen/flowadmin/v1/admin.js";
import {
  type Admission,
  type AdmissionLimits,
  createAdmission,
  DEFAULT_ADMISSION_LIMITS,
} from "./admission.js";
import { auditCall } from "./audit.js";
import { type AccessControl, authorizeCall } from "./authorize.js";
import { type CallerIdentityOptions, caller } from "./caller-identity.js";
import {
  adminHandlers,
  type CallContext,
  flowHandlers,
  type Handlers,
  type MethodDefinition,
} from "./handlers.js";
import { decodeRequest } from "./request-text.js";
import { type GrpcError, statusName, toGrpcError } from "./status.js";
import { type ServerTlsFiles, type ServerTlsPem, serverCredentials } from "./tls.js";

/** The application's structured logger (src/app/observability.ts); one shape for every component. */
export type GrpcLogger = Logger;

/** 4 MiB, grpc-js's own default made explicit: a 100-rack run is a few kilobytes. */
export const DEFAULT_MAX_RECEIVE_MESSAGE_BYTES = 4 * 1024 * 1024;

/** Service names the health service reports; "" is the whole server, by convention. */
export const HEALTH_SERVICES = ["", "v1.Flow", "flowadmin.v1.FlowInventoryAdmin"] as const;

export interface GrpcServerOptions {
  api: FlowApi;
  /** Listen address: `127.0.0.1`, `::1`, `0.0.0.0`. Plaintext needs a loopback host (see tls.ts). */
  host: string;
  /** 0 picks a free port; the chosen one is returned. */
  port: number;
  tls?: ServerTlsFiles | ServerTlsPem;
  /** Plaintext on a non-loopback host, e.g. behind a load balancer that terminates TLS itself. */
  allowInsecureNonLoopback?: boolean;
  logger: GrpcLogger;
  maxReceiveMessageBytes?: number;
  /** Pause between NOT_SERVING and refusing new calls, so polling health checks notice. Default 0. */
  drainMs?: number;
  /**
   * Where flow/v1/flow.proto and flowadmin/v1/admin.proto live, for server reflection; `false`
   * serves no reflection. Default: the repository's proto/ directory, found from this file.
   */
  protoDir?: string | false;
  /** Clock for the deadline check; tests inject one. */
  now?: () => number;
  /**
   * The application's clock, where it is not the wall clock the callers' deadlines are in (a local
   * stack started on a shifted clock): the deadline the application is handed is moved onto it
   * (its now plus the time the call has left). Absent: handed on as it came.
   */
  applicationNow?: () => number;
  /** How much work is admitted at once (default DEFAULT_ADMISSION_LIMITS); the rest is shed. */
  admission?: AdmissionLimits;
  /** The data store's reachability (src/app/store-health.ts); absent: always SERVING until shutdown. */
  storeHealth?: { readonly reachable: boolean; onChange(listener: (reachable: boolean) => void): void };
  /**
   * Read the caller from the client certificate the load balancer forwards (ALB mTLS verify
   * mode); only for a front reachable through that load balancer alone (caller-identity.ts).
   */
  trustLoadBalancerClientCert?: boolean;
  /** Who may do what (authorize.ts); absent: every call is allowed (the front is open). */
  access?: AccessControl;
}

/** The calls that plan runs against the inventory: admitted under the lower, creates limit. */
export const PLANNING_METHODS: ReadonlySet<string> = new Set([
  FlowService.createOperationRun.path,
  FlowService.planOperationRun.path,
  FlowService.upgradeFirmware.path,
]);

export interface RunningGrpcServer {
  /** The bound port (the real one when 0 was asked for). */
  port: number;
  /** Idempotent; resolves once the server is closed, gracefully or by force after `graceMs`. */
  shutdown(graceMs: number): Promise<void>;
}

export async function startGrpcServer(options: GrpcServerOptions): Promise<RunningGrpcServer> {
  const { api, host, logger } = options;
  // Credentials first: a TLS misconfiguration fails before anything is bound.
  const credentials = serverCredentials(options);
  const server = new grpc.Server({
    "grpc.max_receive_message_length": options.maxReceiveMessageBytes ?? DEFAULT_MAX_RECEIVE_MESSAGE_BYTES,
  });
  const deps: UnaryDeps = {
    logger,
    now: options.now ?? Date.now,
    ...(options.applicationNow === undefined ? {} : { applicationNow: options.applicationNow }),
    admission: createAdmission(options.admission ?? DEFAULT_ADMISSION_LIMITS, logger),
    identity: { trustLoadBalancerClientCert: options.trustLoadBalancerClientCert === true },
    ...(options.access === undefined ? {} : { access: options.access }),
  };
  addService(server, FlowService, flowHandlers(api), deps);
  addService(server, FlowInventoryAdminService, adminHandlers(api), deps);

  const serving = () => (options.storeHealth?.reachable === false ? "NOT_SERVING" : "SERVING");
  const health = new HealthImplementation(Object.fromEntries(HEALTH_SERVICES.map((s) => [s, serving()])));
  health.addToServer(server);
  let closing: Promise<void> | undefined;
  options.storeHealth?.onChange(() => {
    // Once shutting down, NOT_SERVING for good.
    if (closing === undefined) for (const s of HEALTH_SERVICES) health.setStatus(s, serving());
  });
  const protoDir = options.protoDir ?? defaultProtoDir();
  if (protoDir !== false) new ReflectionService(loadForReflection(protoDir)).addToServer(server);

  const port = await bind(server, listenAddress(host, options.port), credentials);
  logger.info("gRPC server listening", {
    host,
    port,
    tls: options.tls !== undefined,
    mutualTls:
      options.tls !== undefined && "clientCaFile" in options.tls && options.tls.clientCaFile !== undefined,
  });

  const shutdown = (graceMs: number): Promise<void> => {
    closing ??= (async () => {
      for (const s of HEALTH_SERVICES) health.setStatus(s, "NOT_SERVING");
      logger.info("gRPC server shutting down", { graceMs, drainMs: options.drainMs ?? 0 });
      if (options.drainMs) await new Promise((resolve) => setTimeout(resolve, options.drainMs));
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          logger.warn("gRPC grace period over: cancelling in-flight calls", { graceMs });
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      logger.info("gRPC server stopped", { port });
    })();
    return closing;
  };
  return { port, shutdown };
}

// ---------------------------------------------------------------------------------------------
// The one unary wrapper

export interface UnaryDeps {
  logger: GrpcLogger;
  now: () => number;
  /** See GrpcServerOptions.applicationNow. */
  applicationNow?: () => number;
  /** Absent: every call is admitted (unit tests of the wrapper's other rules). */
  admission?: Admission;
  /** How the caller is identified (caller-identity.ts); the handlers that record one ask for it. */
  identity?: CallerIdentityOptions;
  /** Absent: every call is allowed. */
  access?: AccessControl;
}

const identity = (b: Buffer): Buffer => b;

/** A `grpc.Deadline` as epoch ms; Infinity when the client set none. */
function deadlineMs(deadline: grpc.Deadline): number {
  return deadline instanceof Date ? deadline.getTime() : deadline;
}

/**
 * Wraps one handler as a grpc-js unary handler over raw bytes. See the file comment for the rules;
 * the gist is decode → call → encode, callback exactly once, errors through status.ts.
 */
export function unaryHandler<Req, Res>(
  method: MethodDefinition<Req, Res>,
  handle: (request: Req, call: CallContext) => Promise<Res>,
  deps: UnaryDeps,
): grpc.handleUnaryCall<Buffer, Buffer> {
  const name = method.path;
  const plansRuns = PLANNING_METHODS.has(name);
  return (call, callback) => {
    let answered = false;
    const answer = (error: GrpcError | null, response?: Buffer): void => {
      if (answered) return;
      answered = true;
      if (call.cancelled) {
        deps.logger.info("gRPC call cancelled before its answer", { method: name });
        return;
      }
      if (error !== null) callback(error);
      else callback(null, response);
    };

    const errorContext = { method: name, logger: deps.logger };
    const deadline = deadlineMs(call.getDeadline());
    if (deadline <= deps.now()) {
      answer(
        toGrpcError(new DeadlineExceededError("deadline exceeded before the call was handled"), errorContext),
      );
      return;
    }

    // Cancelled while queued: nothing to start, and nobody to answer (answer() only logs it).
    if (call.cancelled) {
      answer(null);
      return;
    }

    const slot = deps.admission?.admit(name, plansRuns) ?? { admitted: true, release: () => {} };
    if (!slot.admitted) {
      answer(toGrpcError(slot.refusal, errorContext));
      return;
    }

    let request: Req;
    try {
      request = decodeRequest(method, call.request);
    } catch (err) {
      slot.release();
      const why = err instanceof Error ? err.message : String(err);
      answer(
        toGrpcError(
          err instanceof FlowError ? err : new InvalidArgumentError(`malformed request: ${why}`),
          errorContext,
        ),
      );
      return;
    }

    // Found once per call, and only when asked (a malformed x-flow-actor is InvalidArgument).
    let who: ReturnType<typeof caller> | undefined;
    const identify = () => {
      who ??= caller(call, deps.identity);
      return who;
    };
    const context: CallContext = {
      deadline:
        deps.applicationNow === undefined ? deadline : deps.applicationNow() + (deadline - deps.now()),
      abandoned: () => call.cancelled || deps.now() >= deadline,
      actor: () => identify().actor,
      approvalRule: () => deps.access?.policy()?.approval,
      grants: () => {
        const policy = deps.access?.policy();
        return policy === undefined
          ? { enforced: false, bindings: [] }
          : { enforced: true, bindings: bindingsOf(policy, identify().principal) };
      },
    };
    const access = deps.access;
    Promise.resolve()
      .then(() =>
        access === undefined
          ? undefined
          : authorizeCall(access, name, request, identify().principal, identify().actor),
      )
      .then((permitRacks) =>
        handle(request, permitRacks === undefined ? context : { ...context, permitRacks }),
      )
      .finally(slot.release)
      .then((response) => method.responseSerialize(response))
      .then(
        (bytes) => {
          auditCall(deps.logger, name, request, () => identify().actor, statusName());
          answer(null, bytes);
        },
        (err: unknown) => {
          const error = toGrpcError(err, errorContext);
          auditCall(deps.logger, name, request, () => identify().actor, statusName(error));
          if (err instanceof FlowError && (err.code === "UNAVAILABLE" || err.code === "INTERNAL")) {
            deps.logger.warn("gRPC call failed", { method: name, code: err.code, details: err.message });
          }
          answer(error);
        },
      );
  };
}

/**
 * Registers a generated service with byte-level (de)serializers, so that decoding and encoding
 * happen inside `unaryHandler`, and binds every RPC to its handler.
 */
function addService<S extends Record<string, { path: string }>>(
  server: grpc.Server,
  service: S,
  handlers: Handlers<S>,
  deps: UnaryDeps,
): void {
  const definition: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
  const implementation: grpc.UntypedServiceImplementation = {};
  for (const key of Object.keys(service) as (keyof S & string)[]) {
    const method = service[key] as unknown as MethodDefinition<unknown, unknown>;
    definition[key] = {
      path: method.path,
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    };
    const handle = handlers[key] as (request: unknown, call: CallContext) => Promise<unknown>;
    implementation[key] = unaryHandler(method, handle, deps);
  }
  server.addService(definition, implementation);
}

// ---------------------------------------------------------------------------------------------
// Binding and reflection

/** `::1` → `[::1]:50051`; `127.0.0.1` → `127.0.0.1:50051`. */
function listenAddress(host: string, port: number): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

function bind(server: grpc.Server, address: string, credentials: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(address, credentials, (err, port) => {
      if (err) reject(new Error(`cannot listen on ${address}: ${err.message}`));
      else resolve(port);
    });
  });
}

function defaultProtoDir(): string {
  return fileURLToPath(new URL("../../../proto/", import.meta.url));
}

/**
 * The package definition reflection serves: both services of this project and the health service,
 * so `grpcurl -plaintext host:port list` shows all three.
 */
function loadForReflection(protoDir: string): protoLoader.PackageDefinition {
  try {
    return protoLoader.loadSync(
      ["flow/v1/flow.proto", "flowadmin/v1/admin.proto", "health/v1/health.proto"],
      {
        includeDirs: [protoDir, dirname(dirname(dirname(healthProtoPath)))],
      },
    );
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new Error(
      `cannot load ${join(protoDir, "flow/v1/flow.proto")} for server reflection (set protoDir, or false to serve none): ${why}`,
    );
  }
}
