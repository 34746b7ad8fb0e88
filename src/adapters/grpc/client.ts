/**
 * Typed promise clients for the two services, built from the generated service definitions (the
 * codegen is configured without ts-proto's client classes). For flowctl, the local stack and tests:
 *
 *   const flow = createFlowClient("127.0.0.1:50051", clientCredentials());
 *   const { id } = await flow.createOperationRun(request, { deadline: Date.now() + 5000 });
 *   flow.close();
 *
 * A failed call rejects with grpc-js's ServiceError (`code`, `details`, `metadata`).
 */
import * as grpc from "@grpc/grpc-js";
import { FlowService } from "../../gen/flow/v1/flow.js";
import { FlowInventoryAdminService } from "../../gen/flowadmin/v1/admin.js";
import type { RequestOf, ResponseOf } from "./handlers.js";

export interface CallOptions {
  /** An absolute deadline (Date or epoch ms). */
  deadline?: grpc.Deadline;
  metadata?: grpc.Metadata;
}

export type PromiseClient<S> = {
  [K in keyof S]: (request: RequestOf<S[K]>, options?: CallOptions) => Promise<ResponseOf<S[K]>>;
} & {
  /** The underlying channel owner, e.g. for `waitForReady`. */
  readonly grpcClient: grpc.Client;
  close(): void;
};

interface ClientMethod {
  path: string;
  requestSerialize(value: unknown): Buffer;
  responseDeserialize(value: Buffer): unknown;
}

export function createPromiseClient<S extends Record<string, { path: string }>>(
  service: S,
  address: string,
  credentials: grpc.ChannelCredentials,
  options?: grpc.ClientOptions,
): PromiseClient<S> {
  const client = new grpc.Client(address, credentials, options);
  const methods: Record<string, unknown> = {};
  for (const key of Object.keys(service)) {
    const method = service[key] as unknown as ClientMethod;
    methods[key] = (request: unknown, callOptions: CallOptions = {}) =>
      new Promise((resolve, reject) => {
        client.makeUnaryRequest(
          method.path,
          method.requestSerialize,
          method.responseDeserialize,
          request,
          callOptions.metadata ?? new grpc.Metadata(),
          callOptions.deadline === undefined ? {} : { deadline: callOptions.deadline },
          (err, response) => (err ? reject(err) : resolve(response)),
        );
      });
  }
  return { ...methods, grpcClient: client, close: () => client.close() } as PromiseClient<S>;
}

export type FlowClient = PromiseClient<FlowService>;
export type FlowAdminClient = PromiseClient<FlowInventoryAdminService>;

export function createFlowClient(
  address: string,
  credentials: grpc.ChannelCredentials,
  options?: grpc.ClientOptions,
): FlowClient {
  return createPromiseClient(FlowService, address, credentials, options);
}

export function createFlowAdminClient(
  address: string,
  credentials: grpc.ChannelCredentials,
  options?: grpc.ClientOptions,
): FlowAdminClient {
  return createPromiseClient(FlowInventoryAdminService, address, credentials, options);
}
