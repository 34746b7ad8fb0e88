/**
 * The Redfish client of one BMC: the `RedfishBmc` port (src/app/ports/bmc-agent.ts) over
 * BmcTransport.
 *
 * Sessions (DSP0266 "Session management"): one per BMC, created on first need by POSTing the
 * credentials to the service root's `Links.Sessions`, reused by its `X-Auth-Token`, created again
 * when a request answers 401 (the BMC rebooted or expired it; the request is then sent once more),
 * and DELETEd at `close()`. When the BMC refuses to create a session, HTTP Basic is used instead
 * only if the config allows it; otherwise the refusal is the answer (RedfishAuthError).
 *
 * Discovery starts at `/redfish/v1/` (readable without credentials) and follows `@odata.id`
 * links; nothing but the service root's path is assumed.
 */
import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { Readable } from "node:stream";
import type {
  FirmwareMember,
  PushRequest,
  RedfishBmc,
  ResetAction,
  ResetResource,
  TaskPoll,
  TaskStarted,
  UpdateServiceFacts,
} from "../../app/ports/bmc-agent.js";
import {
  errorText,
  parseActionInfo,
  parseCollection,
  parseHealth,
  parseResetAction,
  parseServiceRoot,
  parseSoftwareInventory,
  parseTask,
  parseUpdateService,
  type ServiceRoot,
} from "./documents.js";
import {
  BmcTransport,
  type HttpAnswer,
  type HttpRequest,
  RedfishHttpError,
  retryAfterMs,
  type TlsPolicy,
} from "./transport.js";

export class RedfishAuthError extends Error {
  readonly code = "AUTH";
  constructor(message: string) {
    super(message);
    this.name = "RedfishAuthError";
  }
}

export interface RedfishClientOptions {
  url: string;
  username: string;
  /** Read when a session is made; never logged, never in an error. */
  password: () => string;
  tls: TlsPolicy;
  allowBasicAuth: boolean;
  requestTimeoutMs: number;
  now?: () => number;
}

const ROOT = "/redfish/v1/";

export class RedfishClient implements RedfishBmc {
  private readonly transport: BmcTransport;
  private readonly now: () => number;
  private root?: ServiceRoot;
  private token?: string;
  private sessionUri?: string;
  private basic = false;
  private sessionsCreated = 0;
  /** The password an update command brought (useCredentials); absent: the config's. */
  private commandPassword?: string;

  constructor(private readonly options: RedfishClientOptions) {
    this.transport = new BmcTransport(options.url, options.tls, options.requestTimeoutMs);
    this.now = options.now ?? Date.now;
  }

  get sessions(): number {
    return this.sessionsCreated;
  }

  async serviceRoot(): Promise<ServiceRoot> {
    if (this.root === undefined) {
      const answer = await this.transport.send({ method: "GET", path: ROOT });
      this.root = parseServiceRoot(expectOk(answer, "GET", ROOT));
    }
    return this.root;
  }

  async updateService(): Promise<UpdateServiceFacts> {
    const root = await this.serviceRoot();
    if (root.updateService === undefined) {
      return { enabled: false, pushBusy: false, reason: "the service root has no UpdateService" };
    }
    const info = parseUpdateService(await this.get(root.updateService));
    if (info.simpleUpdate?.actionInfo !== undefined && info.simpleUpdate.transferProtocols === undefined) {
      const params = parseActionInfo(await this.get(info.simpleUpdate.actionInfo));
      const protocol = params.find((p) => p.name === "TransferProtocol");
      if (protocol?.allowableValues !== undefined)
        info.simpleUpdate.transferProtocols = protocol.allowableValues;
    }
    return {
      ...info,
      ...(info.enabled ? {} : { reason: "its UpdateService is disabled (ServiceEnabled false)" }),
    };
  }

  async firmwareInventory(): Promise<FirmwareMember[]> {
    const service = await this.updateService();
    const uri = service.firmwareInventory ?? `${ROOT}UpdateService/FirmwareInventory`;
    const collection = parseCollection(await this.get(uri), "FirmwareInventory");
    const members: FirmwareMember[] = [];
    for (const member of collection.members) members.push(parseSoftwareInventory(await this.get(member)));
    return members;
  }

  async firmwareMember(uri: string): Promise<FirmwareMember> {
    return parseSoftwareInventory(await this.get(uri));
  }

  async push(request: PushRequest): Promise<TaskStarted> {
    const answer = await this.authed(pushRequest(request));
    if (answer.status === 503) {
      throw new RedfishHttpError(
        503,
        "POST",
        request.uri,
        errorText(answer.body),
        retryAfterMs(answer.headers["retry-after"], this.now()),
      );
    }
    if (answer.status !== 202 && answer.status !== 200 && answer.status !== 201 && answer.status !== 204) {
      throw new RedfishHttpError(answer.status, "POST", request.uri, errorText(answer.body));
    }
    const location = answer.headers.location;
    const started: TaskStarted = { monitor: typeof location === "string" ? location : "" };
    const after = retryAfterMs(answer.headers["retry-after"], this.now());
    if (after !== undefined) started.retryAfterMs = after;
    const task = safeTask(answer.body);
    if (task?.uri !== undefined) started.taskUri = task.uri;
    if (started.monitor === "" && task?.uri !== undefined) started.monitor = task.uri;
    return started;
  }

  async pollTask(started: TaskStarted): Promise<TaskPoll> {
    const answer = await this.authed({ method: "GET", path: started.monitor });
    const after = retryAfterMs(answer.headers["retry-after"], this.now());
    if (answer.status === 404 || answer.status === 410) return { kind: "gone" };
    if (answer.status === 202) {
      return {
        kind: "running",
        ...optionalTask(answer.body),
        ...(after === undefined ? {} : { retryAfterMs: after }),
      };
    }
    if (answer.status >= 200 && answer.status < 300) {
      // The monitor's final answer is the operation's response, which need not be the task: read
      // the task itself when it is known.
      let task = safeTask(answer.body);
      if (task === undefined && started.taskUri !== undefined) {
        const read = await this.authed({ method: "GET", path: started.taskUri });
        if (read.status === 404) return { kind: "gone" };
        task = safeTask(read.body);
      }
      if (task === undefined) return { kind: "gone" };
      if (
        task.state === "Completed" ||
        task.state === "Exception" ||
        task.state === "Killed" ||
        task.state === "Cancelled"
      ) {
        return { kind: "ended", task };
      }
      return { kind: "running", task, ...(after === undefined ? {} : { retryAfterMs: after }) };
    }
    throw new RedfishHttpError(answer.status, "GET", started.monitor, errorText(answer.body));
  }

  async setPushApplyTime(updateServiceUri: string, applyTime: string): Promise<void> {
    const body = { HttpPushUriOptions: { HttpPushUriApplyTime: { ApplyTime: applyTime } } };
    const answer = await this.authed({ method: "PATCH", path: updateServiceUri, json: body });
    if (answer.status < 200 || answer.status >= 300) {
      throw new RedfishHttpError(answer.status, "PATCH", updateServiceUri, errorText(answer.body));
    }
  }

  async resetAction(resource: ResetResource): Promise<ResetAction | undefined> {
    const root = await this.serviceRoot();
    const [collection, action] = {
      manager: [root.managers, "#Manager.Reset"],
      system: [root.systems, "#ComputerSystem.Reset"],
      chassis: [root.chassis, "#Chassis.Reset"],
    }[resource];
    if (collection === undefined || action === undefined) return undefined;
    const first = parseCollection(await this.get(collection)).members[0];
    if (first === undefined) return undefined;
    return parseResetAction(await this.get(first), action);
  }

  async reset(action: ResetAction, resetType: string): Promise<void> {
    const answer = await this.authed({ method: "POST", path: action.target, json: { ResetType: resetType } });
    if (answer.status < 200 || answer.status >= 300) {
      throw new RedfishHttpError(answer.status, "POST", action.target, errorText(answer.body));
    }
  }

  async health(): Promise<{ health: "OK" | "Warning" | "Critical"; reason?: string }> {
    const root = await this.serviceRoot();
    const rank = { OK: 0, Warning: 1, Critical: 2 } as const;
    let worst: { health: "OK" | "Warning" | "Critical"; reason?: string } = { health: "OK" };
    for (const collection of [root.systems, root.chassis, root.managers]) {
      if (collection === undefined) continue;
      const first = parseCollection(await this.get(collection)).members[0];
      if (first === undefined) continue;
      const said = parseHealth(await this.get(first));
      if (said !== undefined && rank[said.health] > rank[worst.health]) {
        worst = { health: said.health, reason: `${first} reports ${said.field} ${said.health}` };
      }
    }
    return worst;
  }

  async useCredentials(password: string): Promise<void> {
    if (this.commandPassword === password) return;
    this.commandPassword = password;
    this.basic = false;
    await this.logout();
  }

  private password(): string {
    return this.commandPassword ?? this.options.password();
  }

  /** Deletes the session, if any, keeping the connection. */
  private async logout(): Promise<void> {
    const uri = this.sessionUri;
    const token = this.token;
    this.token = undefined;
    this.sessionUri = undefined;
    if (uri === undefined || token === undefined) return;
    try {
      await this.transport.send({ method: "DELETE", path: uri, headers: { "X-Auth-Token": token } });
    } catch {
      // A BMC that cannot be reached to log out expires the session itself.
    }
  }

  async close(): Promise<void> {
    const uri = this.sessionUri;
    const token = this.token;
    this.token = undefined;
    this.sessionUri = undefined;
    try {
      if (uri !== undefined && token !== undefined) {
        await this.transport.send({ method: "DELETE", path: uri, headers: { "X-Auth-Token": token } });
      }
    } catch {
      // A BMC that cannot be reached to log out expires the session itself.
    } finally {
      this.transport.close();
    }
  }

  // -------------------------------------------------------------------------------------------

  private async get(path: string): Promise<unknown> {
    return expectOk(await this.authed({ method: "GET", path }), "GET", path);
  }

  /** Sends with the session's token; on 401 makes a new session and sends once more. */
  private async authed(request: HttpRequest): Promise<HttpAnswer> {
    for (let attempt = 0; ; attempt += 1) {
      const headers = { ...request.headers, ...(await this.credentials()) };
      const answer = await this.transport.send({ ...request, headers });
      if (answer.status !== 401 || attempt > 0) return answer;
      this.token = undefined;
      this.sessionUri = undefined;
    }
  }

  private async credentials(): Promise<Record<string, string>> {
    if (this.basic) return { Authorization: this.basicHeader() };
    if (this.token !== undefined) return { "X-Auth-Token": this.token };
    const root = await this.serviceRoot();
    const sessions = root.sessions ?? `${ROOT}SessionService/Sessions`;
    const answer = await this.transport.send({
      method: "POST",
      path: sessions,
      json: { UserName: this.options.username, Password: this.password() },
    });
    const token = answer.headers["x-auth-token"];
    if ((answer.status === 201 || answer.status === 200) && typeof token === "string" && token !== "") {
      this.sessionsCreated += 1;
      this.token = token;
      const location = answer.headers.location;
      const id = (answer.body as { "@odata.id"?: unknown } | undefined)?.["@odata.id"];
      this.sessionUri = typeof location === "string" ? location : typeof id === "string" ? id : undefined;
      return { "X-Auth-Token": token };
    }
    const why = `the BMC refused a session for ${this.options.username} (${answer.status}${
      errorText(answer.body) === "" ? "" : `: ${errorText(answer.body)}`
    })`;
    if (!this.options.allowBasicAuth) throw new RedfishAuthError(why);
    this.basic = true;
    return { Authorization: this.basicHeader() };
  }

  private basicHeader(): string {
    return `Basic ${Buffer.from(`${this.options.username}:${this.password()}`).toString("base64")}`;
  }
}

function expectOk(answer: HttpAnswer, method: string, path: string): unknown {
  if (answer.status === 401)
    throw new RedfishAuthError(`${method} ${path} answered 401 with a fresh session`);
  if (answer.status < 200 || answer.status >= 300) {
    throw new RedfishHttpError(answer.status, method, path, errorText(answer.body));
  }
  return answer.body;
}

function safeTask(body: unknown) {
  try {
    return body === undefined ? undefined : parseTask(body);
  } catch {
    return undefined;
  }
}

function optionalTask(body: unknown) {
  const task = safeTask(body);
  return task === undefined ? {} : { task };
}

/** The HTTP request for a push, by method (multipart form, SimpleUpdate JSON, or raw octets). */
function pushRequest(request: PushRequest): HttpRequest {
  switch (request.method) {
    case "multipart": {
      const boundary = `flow-${randomBytes(12).toString("hex")}`;
      const head = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="UpdateParameters"\r\n` +
          `Content-Type: application/json\r\n\r\n${JSON.stringify(request.parameters)}\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="UpdateFile"; filename="image.bin"\r\n` +
          "Content-Type: application/octet-stream\r\n\r\n",
      );
      const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
      const file = request.file;
      return {
        method: "POST",
        path: request.uri,
        stream: {
          contentType: `multipart/form-data; boundary=${boundary}`,
          length: head.length + file.size + tail.length,
          open: () =>
            Readable.from(
              (async function* () {
                yield head;
                yield* createReadStream(file.path);
                yield tail;
              })(),
            ),
        },
      };
    }
    case "simple":
      return { method: "POST", path: request.uri, json: request.parameters };
    case "http-push":
      return {
        method: "POST",
        path: request.uri,
        stream: {
          contentType: "application/octet-stream",
          length: request.file.size,
          open: () => createReadStream(request.file.path),
        },
      };
  }
}
