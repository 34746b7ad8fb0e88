/**
 * A Redfish BMC emulator for the local stack, the BMC agent's contract tests and its benchmark:
 * many BMCs in one process, each on its own port (HTTPS with the certificate given, or plain HTTP
 * on loopback), serving the tree of local/redfish-tree.ts and really executing updates:
 *
 *   POST MultipartHttpPushUri (form parts UpdateParameters + UpdateFile), SimpleUpdate (the BMC
 *   GETs the ImageURI) or HttpPushUri (raw octets) → the image is streamed, hashed and read (never
 *   held whole) → 202 + Location (task monitor) + Retry-After → the task runs through
 *   PercentComplete 25, 50, 75 (or the BMC's `percents`) → Completed, and the Targets
 *   (default: the BMC's own firmware) then read the image's version in FirmwareInventory.
 *
 * An image is valid when it starts with `FLOWFW <version>\n` (firmwareImageHeader); anything
 * else fails its task as a real BMC rejects a package it cannot read. `@Redfish.OperationApplyTime`
 * OnReset stages the image: the task completes but the inventory keeps the old version.
 *
 * Time: a task advances one step per read of its monitor (`schedule: "per-poll"`, the default, so
 * tests see an exact sequence without waiting), or one step every `stepMs` (`{ stepMs }`, for the
 * benchmark and the local stack). A reboot's downtime is `rebootMs` of real time.
 *
 * Misbehaviour per BMC (RedfishBehaviour): fail, hang, reboot mid-update (connections dropped,
 * refused for a while, tasks and sessions forgotten, the new version running after), busy (503
 * with Retry-After for the first N pushes; a second update while one runs is always 503),
 * Completed with TaskStatus Critical, tasks that vanish when they end (404), sessions refused, `Updateable: false`, the UpdateService
 * disabled, a MaxImageSizeBytes cap (413 above it), and which push methods it offers.
 *
 * `record(id)` says what each BMC was asked: sessions created and deleted, requests with Basic
 * auth, pushes accepted per firmware member, 503s, 413s, reboots, apply times.
 *
 * Apart, by concept: activation (staged versions, the reset actions, a reboot's downtime) in
 * local/redfish-emulator-resets.ts; one BMC's and one task's state in local/redfish-emulator-state.ts.
 */
import { randomBytes, randomUUID } from "node:crypto";
import http from "node:http";
import https from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { emptyRecord, type RedfishEmulator, type RedfishEmulatorOptions } from "./redfish-emulator-api.js";
import { applyFlash, goDown, resetAction } from "./redfish-emulator-resets.js";
import { type Bmc, readAll, send, type Task } from "./redfish-emulator-state.js";
import { HttpProblem, pull, readMultipart, scan } from "./redfish-images.js";
import * as tree from "./redfish-tree.js";

export type {
  EmulatedBmcSpec,
  RedfishBehaviour,
  RedfishEmulator,
  RedfishEmulatorOptions,
  RedfishRecord,
} from "./redfish-emulator-api.js";
export { firmwareImageHeader } from "./redfish-images.js";

export async function startRedfishEmulator(options: RedfishEmulatorOptions): Promise<RedfishEmulator> {
  const username = options.username ?? "flow";
  const password = options.password ?? "flow-secret";
  const retryAfter = String(options.retryAfterSeconds ?? 0);
  const rebootMs = options.rebootMs ?? 200;
  const schedule = options.schedule ?? "per-poll";
  const bmcs = new Map<string, Bmc>();
  let taskCounter = 0;

  for (const spec of options.bmcs) {
    const bmc = {
      spec,
      behaviour: { ...spec.behaviour },
      members: new Map<string, tree.MemberState>(),
      sessions: new Map(),
      tasks: new Map(),
      busyLeft: spec.behaviour?.busyPushes ?? 0,
      down: false,
      sockets: new Set<Socket>(),
      record: emptyRecord(),
      flashTimes: [],
      uuid: randomUUID(),
      pushApplyTime: "OnReset",
      staged: new Map(),
      url: "",
    } as unknown as Bmc;
    for (const [id, version] of Object.entries(spec.firmware ?? { BMC: "1.0.0", BIOS: "1.0.0" })) {
      const relatedItem = id.toUpperCase() === "BMC" ? tree.MANAGER : tree.SYSTEM;
      bmc.members.set(id, { id, version, updateable: bmc.behaviour.notUpdateable !== true, relatedItem });
    }
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
      handle(bmc, req, res).catch((err: unknown) => {
        const problem =
          err instanceof HttpProblem
            ? err
            : new HttpProblem(500, "Base.1.8.InternalError", (err as Error).message);
        if (res.headersSent || res.destroyed) return;
        send(res, problem.status, tree.redfishError(problem.messageId, problem.message));
        req.resume();
      });
    };
    bmc.server = options.tls ? https.createServer({ ...options.tls }, handler) : http.createServer(handler);
    bmc.server.on("connection", (socket: Socket) => {
      if (bmc.down) {
        socket.destroy();
        return;
      }
      bmc.sockets.add(socket);
      socket.on("close", () => bmc.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      bmc.server.once("error", reject);
      bmc.server.listen(0, spec.host ?? "127.0.0.1", () => resolve());
    });
    const { port } = bmc.server.address() as AddressInfo;
    bmc.url = `${options.tls ? "https" : "http"}://${spec.host ?? "127.0.0.1"}:${port}`;
    bmcs.set(spec.id, bmc);
  }

  function treeState(bmc: Bmc): tree.TreeState {
    const s: tree.TreeState = {
      uuid: bmc.uuid,
      updateServiceEnabled: bmc.behaviour.updateServiceDisabled !== true,
      methods: bmc.behaviour.methods ?? ["multipart", "simple"],
      transferProtocols: ["HTTP", "HTTPS"],
      pushApplyTime: bmc.pushApplyTime,
    };
    if (bmc.behaviour.maxImageSizeBytes !== undefined && !bmc.behaviour.hideMaxImageSize) {
      s.maxImageSizeBytes = bmc.behaviour.maxImageSizeBytes;
    }
    return s;
  }

  async function handle(bmc: Bmc, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0]!.replace(/\/+$/, "") || "/";
    const method = req.method ?? "GET";
    if (method === "GET" && (path === tree.V1 || path === "/redfish")) {
      return send(res, 200, path === tree.V1 ? tree.serviceRoot(treeState(bmc)) : { v1: `${tree.V1}/` });
    }
    if (method === "POST" && path === tree.SESSIONS) return createSession(bmc, req, res);
    authenticate(bmc, req);
    const s = treeState(bmc);
    if (method === "DELETE" && path.startsWith(`${tree.SESSIONS}/`)) {
      const id = path.slice(tree.SESSIONS.length + 1);
      if (![...bmc.sessions.values()].includes(id))
        throw new HttpProblem(404, "Base.1.8.ResourceNotFound", "no such session");
      for (const [token, sid] of bmc.sessions) if (sid === id) bmc.sessions.delete(token);
      bmc.record.sessionsDeleted += 1;
      res.writeHead(204).end();
      return;
    }
    if (method === "GET") {
      const doc = read(bmc, path, s);
      if (doc === undefined)
        throw new HttpProblem(404, "Base.1.8.ResourceNotFound", `${path} does not exist`);
      if (doc === "monitor") return monitor(bmc, path, res);
      return send(res, 200, doc);
    }
    if (method === "PATCH" && path === tree.UPDATE_SERVICE) {
      const body = JSON.parse((await readAll(req)).toString("utf8") || "{}") as {
        HttpPushUriOptions?: { HttpPushUriApplyTime?: { ApplyTime?: string } };
      };
      const applyTime = body.HttpPushUriOptions?.HttpPushUriApplyTime?.ApplyTime;
      if (applyTime !== undefined) bmc.pushApplyTime = applyTime;
      return send(res, 200, tree.updateService(treeState(bmc)));
    }
    if (
      method === "POST" &&
      (path === tree.MULTIPART_PUSH || path === tree.HTTP_PUSH || path === tree.SIMPLE_UPDATE)
    ) {
      return startUpdate(bmc, path, req, res, s);
    }
    const resource = (Object.keys(tree.RESETS) as (keyof typeof tree.RESETS)[]).find(
      (r) => tree.RESETS[r].target === path,
    );
    if (method === "POST" && resource !== undefined) return resetAction(bmc, resource, req, res, rebootMs);
    throw new HttpProblem(405, "Base.1.8.OperationNotAllowed", `${method} ${path} is not supported`);
  }

  function read(bmc: Bmc, path: string, s: tree.TreeState): object | "monitor" | undefined {
    if (path.startsWith(`${tree.TASK_MONITORS}/`)) return "monitor";
    if (path.startsWith(`${tree.FIRMWARE_INVENTORY}/`)) {
      const member = bmc.members.get(path.slice(tree.FIRMWARE_INVENTORY.length + 1));
      return member === undefined ? undefined : tree.softwareInventory(member);
    }
    if (path.startsWith(`${tree.TASKS}/`)) {
      const t = bmc.tasks.get(path.slice(tree.TASKS.length + 1));
      return t === undefined ? undefined : tree.task(t.doc);
    }
    switch (path) {
      case tree.UPDATE_SERVICE:
        return tree.updateService(s);
      case tree.SIMPLE_UPDATE_INFO:
        return s.methods.includes("simple") ? tree.simpleUpdateActionInfo(s) : undefined;
      case tree.FIRMWARE_INVENTORY:
        return tree.collection(
          path,
          "SoftwareInventoryCollection",
          [...bmc.members.keys()].map((id) => `${path}/${id}`),
        );
      case `${tree.V1}/SessionService`:
        return tree.sessionService();
      case tree.SESSIONS:
        return tree.collection(
          path,
          "SessionCollection",
          [...new Set(bmc.sessions.values())].map((id) => `${path}/${id}`),
        );
      case `${tree.V1}/Managers`:
        return tree.collection(path, "ManagerCollection", [tree.MANAGER]);
      case tree.MANAGER:
        return tree.manager(bmc.members.get("BMC")?.version ?? "unknown");
      case `${tree.V1}/Systems`:
        return tree.collection(path, "ComputerSystemCollection", [tree.SYSTEM]);
      case tree.SYSTEM:
        return tree.system(
          bmc.members.get("BIOS")?.version ?? "unknown",
          bmc.behaviour.unhealthy === true ? "Critical" : "OK",
        );
      case `${tree.V1}/Chassis`:
        return tree.collection(path, "ChassisCollection", [tree.CHASSIS]);
      case tree.CHASSIS:
        return tree.chassis();
      case `${tree.V1}/TaskService`:
        return {
          "@odata.id": path,
          "@odata.type": "#TaskService.v1_3_0.TaskService",
          Id: "TaskService",
          ServiceEnabled: true,
          Tasks: { "@odata.id": tree.TASKS },
        };
      case tree.TASKS:
        return tree.collection(
          path,
          "TaskCollection",
          [...bmc.tasks.keys()].map((id) => `${path}/${id}`),
        );
      default:
        return undefined;
    }
  }

  async function createSession(bmc: Bmc, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = JSON.parse((await readAll(req)).toString("utf8") || "{}") as {
      UserName?: string;
      Password?: string;
    };
    if (bmc.behaviour.rejectSessions || body.UserName !== username || body.Password !== password) {
      bmc.record.sessionsRefused += 1;
      throw new HttpProblem(401, "Base.1.8.NoValidSession", "session creation refused");
    }
    const id = randomBytes(8).toString("hex");
    const token = randomBytes(16).toString("hex");
    bmc.sessions.set(token, id);
    bmc.record.sessionsCreated += 1;
    res.setHeader("X-Auth-Token", token);
    res.setHeader("Location", `${tree.SESSIONS}/${id}`);
    send(res, 201, tree.session(id, username));
  }

  function authenticate(bmc: Bmc, req: http.IncomingMessage): void {
    const token = req.headers["x-auth-token"];
    if (typeof token === "string" && bmc.sessions.has(token)) return;
    const basic = req.headers.authorization;
    if (options.basicAuth !== false && typeof basic === "string" && basic.startsWith("Basic ")) {
      const [user, pass] = Buffer.from(basic.slice(6), "base64").toString("utf8").split(":");
      if (user === username && pass === password) {
        bmc.record.basicAuthRequests += 1;
        return;
      }
    }
    throw new HttpProblem(401, "Base.1.8.NoValidSession", "no valid session");
  }

  async function startUpdate(
    bmc: Bmc,
    path: string,
    req: http.IncomingMessage,
    res: http.ServerResponse,
    s: tree.TreeState,
  ): Promise<void> {
    const method: tree.PushMethod =
      path === tree.MULTIPART_PUSH ? "multipart" : path === tree.HTTP_PUSH ? "http-push" : "simple";
    if (!s.methods.includes(method))
      throw new HttpProblem(405, "Base.1.8.OperationNotAllowed", `${method} is not offered`);
    if (!s.updateServiceEnabled)
      throw new HttpProblem(503, "Base.1.8.ServiceDisabled", "the UpdateService is disabled");
    if (bmc.running !== undefined || bmc.busyLeft > 0) {
      if (bmc.running === undefined) bmc.busyLeft -= 1;
      bmc.record.busyRejections += 1;
      res.setHeader("Retry-After", retryAfter);
      throw new HttpProblem(
        503,
        "Base.1.8.ServiceTemporarilyUnavailable",
        "an update is in progress; retry later",
      );
    }
    const cap = bmc.behaviour.maxImageSizeBytes;
    const declared = Number(req.headers["content-length"] ?? Number.NaN);
    if (cap !== undefined && method !== "simple" && declared > cap + 64 * 1024) {
      bmc.record.tooLarge += 1;
      res.setHeader("Connection", "close");
      throw new HttpProblem(413, "Update.1.0.ImageTooLarge", `the image exceeds ${cap} bytes`);
    }
    let targets: string[] = [];
    let applyTime = bmc.pushApplyTime;
    let image: { size: number; version?: string };
    if (method === "simple") {
      const body = JSON.parse((await readAll(req)).toString("utf8")) as Record<string, unknown>;
      const protocol = body.TransferProtocol;
      if (protocol !== undefined && !s.transferProtocols.includes(String(protocol))) {
        throw new HttpProblem(
          400,
          "Base.1.8.PropertyValueNotInList",
          `TransferProtocol ${String(protocol)} is not allowed`,
        );
      }
      targets = Array.isArray(body.Targets) ? body.Targets.map(String) : [];
      applyTime =
        typeof body["@Redfish.OperationApplyTime"] === "string"
          ? body["@Redfish.OperationApplyTime"]
          : "Immediate";
      image = await pull(String(body.ImageURI), cap);
    } else if (method === "multipart") {
      const parts = await readMultipart(req, cap);
      targets = parts.parameters.Targets ?? [];
      applyTime = parts.parameters["@Redfish.OperationApplyTime"] ?? "OnReset";
      image = parts.image;
    } else {
      image = await scan(req, cap);
    }
    bmc.record.imageBytes += image.size;
    if (cap !== undefined && image.size > cap) {
      bmc.record.tooLarge += 1;
      throw new HttpProblem(413, "Update.1.0.ImageTooLarge", `the image exceeds ${cap} bytes`);
    }
    const memberIds = targets.length === 0 ? ["BMC"] : targets.map((t) => t.slice(t.lastIndexOf("/") + 1));
    for (const id of memberIds) {
      const member = bmc.members.get(id);
      if (member === undefined)
        throw new HttpProblem(400, "Base.1.8.ResourceNotFound", `Targets: no firmware ${id}`);
      if (!member.updateable)
        throw new HttpProblem(400, "Update.1.0.TargetNotUpdateable", `firmware ${id} is not updateable`);
    }
    for (const id of memberIds) bmc.record.pushes[id] = (bmc.record.pushes[id] ?? 0) + 1;
    bmc.record.pushesByMethod[method] = (bmc.record.pushesByMethod[method] ?? 0) + 1;
    bmc.record.applyTimes.push(applyTime);
    taskCounter += 1;
    const id = String(taskCounter);
    const t: Task = {
      id,
      targets: memberIds,
      applyTime,
      reported: false,
      step: -1,
      startedAt: performance.now(),
      doc: {
        id,
        state: "Running",
        status: "OK",
        percent: 0,
        messages: [],
        startTime: new Date().toISOString(),
      },
    };
    if (image.version !== undefined) t.version = image.version;
    bmc.tasks.set(id, t);
    bmc.running = t;
    if (typeof schedule === "object") t.timer = setInterval(() => advance(bmc, t), schedule.stepMs);
    res.setHeader("Location", `${tree.TASK_MONITORS}/${id}`);
    res.setHeader("Retry-After", retryAfter);
    send(res, 202, tree.task(t.doc));
  }

  function monitor(bmc: Bmc, path: string, res: http.ServerResponse): void {
    const t = bmc.tasks.get(path.slice(tree.TASK_MONITORS.length + 1));
    if (t === undefined || t.reported)
      throw new HttpProblem(404, "Base.1.8.ResourceNotFound", "no such task");
    if (schedule === "per-poll") advance(bmc, t);
    if (bmc.down) return; // the reboot dropped this very request
    if (bmc.behaviour.vanishingTasks && t.step >= 1) {
      // It finished between two reads and was forgotten at once.
      if (t.doc.state === "Running") {
        t.doc.percent = 100;
        applyFlash(bmc, t);
        end(bmc, t, "Completed", "OK");
      }
      bmc.tasks.delete(t.id);
      throw new HttpProblem(404, "Base.1.8.ResourceNotFound", "no such task");
    }
    if (t.doc.state === "Running") {
      res.setHeader("Retry-After", retryAfter);
      send(res, 202, tree.task(t.doc));
      return;
    }
    t.reported = true;
    send(res, 200, tree.task(t.doc));
  }

  function end(bmc: Bmc, t: Task, state: string, status: string, message?: { id: string; text: string }) {
    t.doc.state = state;
    t.doc.status = status;
    t.doc.endTime = new Date().toISOString();
    if (message !== undefined)
      t.doc.messages.push({ MessageId: message.id, Message: message.text, Severity: status });
    if (t.timer !== undefined) clearInterval(t.timer);
    if (bmc.running === t) bmc.running = undefined;
    bmc.flashTimes.push(performance.now() - t.startedAt);
  }

  function advance(bmc: Bmc, t: Task): void {
    if (t.doc.state !== "Running" || bmc.down) return;
    const b = bmc.behaviour;
    if (b.hang && t.step >= 0) return;
    t.step += 1;
    const steps = [...(b.percents ?? [25, 50, 75]), 100];
    const percent = steps[Math.min(t.step, steps.length - 1)]!;
    if (t.version === undefined) {
      end(bmc, t, "Exception", "Critical", {
        id: "Update.1.0.ActivateFailed",
        text: "the image is not a firmware package this BMC can read",
      });
      return;
    }
    if (percent >= 50 && b.fail) {
      end(bmc, t, "Exception", "Critical", {
        id: "Update.1.0.ApplyFailed",
        text: `applying ${t.version} failed: the device rejected the image`,
      });
      return;
    }
    if (percent >= 50 && b.rebootMidUpdate) {
      reboot(bmc, t);
      return;
    }
    t.doc.percent = percent;
    if (percent < 100) return;
    if (b.critical) {
      end(bmc, t, "Completed", "Critical", {
        id: "Update.1.0.VerificationFailed",
        text: `verifying ${t.version} failed after the write; the previous image is still active`,
      });
      return;
    }
    applyFlash(bmc, t);
    end(
      bmc,
      t,
      "Completed",
      "OK",
      t.applyTime === "Immediate"
        ? { id: "Update.1.0.UpdateSuccessful", text: `${t.targets.join(", ")} updated to ${t.version}` }
        : { id: "Update.1.0.OperationTransitionedToJob", text: `staged; applies ${t.applyTime}` },
    );
  }

  /** Drops every connection, refuses new ones for rebootMs, and comes back having applied the image and forgotten its tasks and sessions. */
  function reboot(bmc: Bmc, t: Task): void {
    if (t.timer !== undefined) clearInterval(t.timer);
    goDown(bmc, rebootMs, () => {
      applyFlash(bmc, t);
      bmc.flashTimes.push(performance.now() - t.startedAt);
    });
  }

  async function stop(): Promise<void> {
    await Promise.all(
      [...bmcs.values()].map(async (bmc) => {
        for (const t of bmc.tasks.values()) if (t.timer !== undefined) clearInterval(t.timer);
        for (const socket of bmc.sockets) socket.destroy();
        await new Promise<void>((resolve) => bmc.server.close(() => resolve()));
      }),
    );
  }

  const get = (id: string): Bmc => {
    const bmc = bmcs.get(id);
    if (bmc === undefined) throw new Error(`no emulated BMC ${id}`);
    return bmc;
  };
  return {
    urlOf: (id) => get(id).url,
    record: (id) => structuredClone(get(id).record),
    versionOf: (id, member = "BMC") => bmcs.get(id)?.members.get(member)?.version,
    setBehaviour(id, behaviour) {
      const bmc = get(id);
      bmc.behaviour = { ...behaviour };
      bmc.busyLeft = behaviour.busyPushes ?? 0;
      for (const m of bmc.members.values()) m.updateable = behaviour.notUpdateable !== true;
    },
    flashTimes: (id) => [...get(id).flashTimes],
    stop,
  };
}
