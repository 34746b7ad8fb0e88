/**
 * One BMC as the agent drives it: the BMC protocol's commands (src/domain/bmc-protocol.ts) turned
 * into Redfish calls, and Redfish's answers turned into the protocol's events.
 *
 * `query` → `status` with the component's firmware member's `Version`; `ready: false` with the
 * reason when the BMC cannot be read, its UpdateService is disabled, or the member is not
 * `Updateable`.
 *
 * `update` (request id R, target T), the protocol's idempotency table:
 *   R done (this run or, through the journal, an earlier one)   → the stored `result` again
 *   R running here                                               → `ack` again
 *   R pushed by an earlier run that stopped before its result    → `ack`, then the task monitor it
 *                                                                  recorded, else the inventory, decides
 *   another request running here                                 → `result` BUSY (R not remembered)
 *   otherwise: `ack`, then
 *     1. refuse what cannot be flashed safely: no sha256 (IMAGE_UNVERIFIED), UpdateService
 *        disabled, member not Updateable, an unknown sub-target, no usable method;
 *     2. fetch the image through the cache (once per digest for the whole rack; verified before
 *        any byte goes to a BMC), check MaxImageSizeBytes;
 *     3. journal "pushed" BEFORE the push (a crash after it means "never push R again"), push by
 *        MultipartHttpPushUri, else SimpleUpdate with a URL the agent serves, else HttpPushUri,
 *        with `@Redfish.OperationApplyTime` explicit; a 503 is retried after its Retry-After
 *        until busyTimeoutMs;
 *     4. follow the task monitor: PercentComplete → `progress` (only upwards), no change within
 *        noProgressTimeoutMs → FLASH_TIMEOUT, a failed end → FLASH_FAILED with the BMC's messages,
 *        a monitor gone (404) or a dropped connection → read the inventory until it answers;
 *     5. `result` ok only when the inventory reads back T (every targeted member, for
 *        sub-targets); else NOT_APPLIED / FLASH_FAILED with what it reads.
 * The result is journalled before it is published, so a repeat after a restart re-sends it.
 */
import type {
  BmcEvent,
  QueryCommand,
  ResetCommand,
  ResetKind,
  ResultEvent,
  StatusEvent,
  UpdateCommand,
} from "../../domain/bmc-protocol.js";
import type {
  AgentClock,
  EventSink,
  FirmwareMember,
  ImageCache,
  ImageServer,
  LocalImage,
  PushRequest,
  RedfishBmc,
  ResetAction,
  ResetResource,
  TaskStarted,
  UpdateJournal,
  UpdateServiceFacts,
} from "../ports/bmc-agent.js";
import { codeOf, describe, judgeEndedTask, taskMessage, UpdateFailure } from "./update-outcome.js";

export interface BmcWorkerSettings {
  componentId: string;
  /** The firmware member's Id (any case); absent: the one related to the Manager, else `BMC`. */
  firmwareMember?: string;
  /** Sub-target name → firmware member Id; a name not listed maps to the member with that Id. */
  subTargets: Readonly<Record<string, string>>;
  /** `@Redfish.OperationApplyTime` sent with every update. */
  applyTime: string;
}

export interface AgentTimings {
  /** The shortest wait between two reads of a task monitor (a Retry-After may ask for longer). */
  pollIntervalMs: number;
  /** The longest wait a Retry-After can impose. */
  maxRetryAfterMs: number;
  noProgressTimeoutMs: number;
  /** How long a BMC that dropped off (a reboot) may take to answer again. */
  rebootTimeoutMs: number;
  /** How long the inventory may take to show the version after the task ended. */
  settleTimeoutMs: number;
  /** How long a BMC may answer 503 busy before the update is reported BUSY. */
  busyTimeoutMs: number;
}

export interface BmcWorkerDeps {
  bmc: RedfishBmc;
  images: ImageCache;
  imageServer: ImageServer;
  events: EventSink;
  journal: UpdateJournal;
  clock: AgentClock;
  timings: AgentTimings;
  /** Ends waits when the agent stops. */
  signal: AbortSignal;
  log: (line: string) => void;
}

/** What the agent says for a BMC it cannot read. */
export const UNKNOWN_VERSION = "unknown";

/**
 * What each reset kind does over Redfish: the resource and the ResetTypes to try, in order. A host
 * power cycle is a graceful restart where the system allows one (the BMC forces it by its own
 * policy), an AC cycle the Chassis PowerCycle.
 */
export const RESET_PLANS: Record<ResetKind, { resource: ResetResource; action: string; types: string[] }> = {
  bmc: { resource: "manager", action: "Manager.Reset", types: ["GracefulRestart", "ForceRestart"] },
  host: {
    resource: "system",
    action: "ComputerSystem.Reset",
    types: ["GracefulRestart", "PowerCycle", "ForceRestart"],
  },
  ac: { resource: "chassis", action: "Chassis.Reset", types: ["PowerCycle"] },
};

export class BmcWorker {
  private running?: { requestId: string; done: Promise<void> };
  /** Reset request id → its answer (once performed, or while it runs). */
  private readonly resets = new Map<string, Promise<StatusEvent | undefined>>();

  constructor(
    private readonly settings: BmcWorkerSettings,
    private readonly deps: BmcWorkerDeps,
  ) {}

  get componentId(): string {
    return this.settings.componentId;
  }

  /** The update in progress, if any (the agent awaits it at shutdown). */
  get inFlight(): Promise<void> | undefined {
    return this.running?.done;
  }

  async query(command: QueryCommand): Promise<void> {
    const { requestId } = command;
    let status: BmcEvent;
    try {
      const { service, member } = await this.readFirmware();
      status = { v: 1, type: "status", requestId, version: member.version };
      // The component's own health (BMC protocol v3), said only when it is not OK; a BMC whose
      // health cannot be read answers without it (its version is what a query is for).
      const said = await this.deps.bmc.health().catch(() => undefined);
      if (said !== undefined && said.health !== "OK") {
        Object.assign(status, {
          health: said.health,
          ...(said.reason === undefined ? {} : { healthReason: said.reason }),
        });
      }
      const reason = !service.enabled
        ? (service.reason ?? "its UpdateService is disabled")
        : !member.updateable
          ? `firmware ${member.id} is not Updateable`
          : undefined;
      if (reason !== undefined) Object.assign(status, { ready: false, reason });
    } catch (err) {
      status = {
        v: 1,
        type: "status",
        requestId,
        version: UNKNOWN_VERSION,
        ready: false,
        reason: describe(err),
      };
    }
    await this.emit(status);
  }

  /**
   * Activation (protocol v3 `reset`): `ack`, then the reset over Redfish on the resource its kind
   * names, with the first ResetType of RESET_PLANS the resource allows; then the inventory is read
   * until the BMC answers again (it drops off for a Manager reset or a Chassis power cycle), and
   * `status` carries the version it runs. A request id already seen is answered with its answer,
   * never reset twice, also across restarts: the journal says `resetting` before the POST (a
   * restarted agent then only waits for the BMC to answer) and keeps the answer once sent. A
   * resource without the action, or allowing none of the types, is `RESET_UNSUPPORTED`; a refused
   * or failed POST, `RESET_FAILED`; both as a `status` with `error`, nothing reset.
   */
  async reset(command: ResetCommand): Promise<void> {
    const { requestId } = command;
    let answer = this.resets.get(requestId);
    if (answer === undefined) {
      const known = this.deps.journal.get(this.componentId, requestId);
      if (known?.phase === "reset") return this.emit(known.status);
      await this.emit({ v: 1, type: "ack", requestId });
      answer = (
        known?.phase === "resetting" ? this.backFromReset(requestId) : this.performReset(command)
      ).then(async (status) => {
        // Stopping: left `resetting`, so a restarted agent waits for the BMC, never resets again.
        if (this.deps.signal.aborted) return undefined;
        await this.deps.journal.record({ componentId: this.componentId, requestId, phase: "reset", status });
        return status;
      });
      this.resets.set(requestId, answer);
    }
    const status = await answer;
    if (status !== undefined) await this.emit(status);
  }

  private async performReset(command: ResetCommand): Promise<StatusEvent> {
    const { requestId } = command;
    const plan = RESET_PLANS[command.kind];
    const failed = (code: string, message: string) => this.resetFailed(requestId, code, message);
    let action: ResetAction | undefined;
    try {
      action = await this.deps.bmc.resetAction(plan.resource);
    } catch (err) {
      return failed("RESET_FAILED", describe(err));
    }
    if (action === undefined) return failed("RESET_UNSUPPORTED", `the BMC has no ${plan.action} action`);
    const allowed = action.allowed;
    const type = plan.types.find((t) => allowed === undefined || allowed.includes(t));
    if (type === undefined) {
      return failed(
        "RESET_UNSUPPORTED",
        `${plan.action} allows ${allowed?.join(", ")}, none of ${plan.types.join(", ")}`,
      );
    }
    await this.deps.journal.record({
      componentId: this.componentId,
      requestId,
      phase: "resetting",
      kind: command.kind,
    });
    try {
      await this.deps.bmc.reset(action, type);
    } catch (err) {
      // A BMC that goes down may drop the connection before it answers: that is the reset.
      if ((err as { code?: string }).code !== "UNREACHABLE") return failed("RESET_FAILED", describe(err));
    }
    return this.backFromReset(requestId);
  }

  /** After a reset's POST: the version the BMC runs once it answers again. */
  private async backFromReset(requestId: string): Promise<StatusEvent> {
    try {
      await this.deps.clock.sleep(this.deps.timings.pollIntervalMs, this.deps.signal);
      const { member } = await this.untilAnswers(() => this.readFirmware(), "the BMC to come back");
      return { v: 1, type: "status", requestId, version: member.version };
    } catch (err) {
      return this.resetFailed(requestId, "RESET_FAILED", describe(err));
    }
  }

  /** A reset's `status` with its error, and the version the BMC reads now (`unknown` if none). */
  private async resetFailed(requestId: string, code: string, message: string): Promise<StatusEvent> {
    const version = await this.readFirmware().then(
      ({ member }) => member.version,
      () => UNKNOWN_VERSION,
    );
    return { v: 3, type: "status", requestId, version, error: { code, message } };
  }

  async update(command: UpdateCommand): Promise<void> {
    const { requestId } = command;
    const known = this.deps.journal.get(this.componentId, requestId);
    if (known?.phase === "done") return this.emit(known.result);
    if (this.running?.requestId === requestId) return this.emit({ v: 1, type: "ack", requestId });
    if (this.running !== undefined) {
      return this.emit({
        v: 1,
        type: "result",
        requestId,
        ok: false,
        version: UNKNOWN_VERSION,
        error: { code: "BUSY", message: `update ${this.running.requestId} is in progress on this BMC` },
      });
    }
    const done = (async () => {
      await this.emit({ v: 1, type: "ack", requestId });
      const result =
        known?.phase === "pushed"
          ? await this.resume(command, known.monitor)
          : await this.flash(command).catch((err: unknown) => this.failed(command, err));
      if (result === undefined) return; // stopping: the journal says "pushed", a restart resumes
      await this.deps.journal.record({ componentId: this.componentId, requestId, phase: "done", result });
      await this.emit(result);
    })();
    this.running = { requestId, done };
    try {
      await done;
    } finally {
      this.running = undefined;
    }
  }

  // -------------------------------------------------------------------------------------------

  private async flash(command: UpdateCommand): Promise<ResultEvent | undefined> {
    const sha256 = command.image.sha256;
    if (sha256 === undefined) {
      throw new UpdateFailure(
        "IMAGE_UNVERIFIED",
        "the update carries no image.sha256; the agent flashes only verified images",
      );
    }
    const { service, members, member } = await this.readFirmware();
    if (!service.enabled)
      throw new UpdateFailure("UPDATE_SERVICE_DISABLED", service.reason ?? "UpdateService disabled");
    const targets = this.targetsOf(command, members, member);
    for (const target of targets) {
      if (!target.updateable)
        throw new UpdateFailure("NOT_UPDATEABLE", `firmware ${target.id} is not Updateable`);
    }
    const { size } = command.image;
    const image = await this.deps.images.fetch({
      uri: command.image.uri,
      sha256,
      ...(size === undefined ? {} : { size }),
    });
    if (service.maxImageSizeBytes !== undefined && image.size > service.maxImageSizeBytes) {
      throw new UpdateFailure(
        "IMAGE_TOO_LARGE",
        `the image is ${image.size} bytes; the BMC takes at most ${service.maxImageSizeBytes} (MaxImageSizeBytes)`,
      );
    }
    const { request, release } = this.pushRequest(service, image, targets);
    try {
      await this.deps.journal.record({
        componentId: this.componentId,
        requestId: command.requestId,
        phase: "pushed",
        targetVersion: command.targetVersion,
      });
      if (request.method === "http-push" && service.uri !== undefined) {
        await this.deps.bmc.setPushApplyTime(service.uri, this.settings.applyTime);
      }
      const started = await this.pushWithBackoff(request);
      await this.deps.journal.record({
        componentId: this.componentId,
        requestId: command.requestId,
        phase: "pushed",
        targetVersion: command.targetVersion,
        monitor: started,
      });
      return await this.follow(command, started, targets);
    } finally {
      // An image offered for the BMC to pull is withdrawn once its task has ended.
      release();
    }
  }

  /** A request an earlier run pushed: its monitor if it recorded one, else the inventory, decides. */
  private async resume(
    command: UpdateCommand,
    monitor: TaskStarted | undefined,
  ): Promise<ResultEvent | undefined> {
    try {
      const { members, member } = await this.untilAnswers(() => this.readFirmware(), "the BMC to answer");
      const targets = this.targetsOf(command, members, member);
      if (monitor === undefined)
        return await this.settle(command, targets, "the agent stopped while pushing");
      return await this.follow(command, monitor, targets);
    } catch (err) {
      return this.failed(command, err);
    }
  }

  private targetsOf(
    command: UpdateCommand,
    members: FirmwareMember[],
    member: FirmwareMember,
  ): FirmwareMember[] {
    if (command.subTargets === undefined) return [member];
    return command.subTargets.map((name) => {
      const id = this.settings.subTargets[name] ?? name;
      const found = members.find((m) => m.id.toLowerCase() === id.toLowerCase());
      if (found === undefined) {
        throw new UpdateFailure(
          "UNKNOWN_SUB_TARGET",
          `sub-target ${name}: the BMC's firmware inventory has no member ${id} (members: ${members.map((m) => m.id).join(", ")})`,
        );
      }
      return found;
    });
  }

  private pushRequest(service: UpdateServiceFacts, image: LocalImage, targets: FirmwareMember[]) {
    const applyTime = this.settings.applyTime;
    const targetUris = targets.map((t) => t.uri);
    if (service.multipartHttpPushUri !== undefined) {
      const request: PushRequest = {
        method: "multipart",
        uri: service.multipartHttpPushUri,
        file: image,
        parameters: { Targets: targetUris, "@Redfish.OperationApplyTime": applyTime },
      };
      return { request, release: () => {} };
    }
    const simple = service.simpleUpdate;
    if (simple !== undefined) {
      const offer = this.deps.imageServer.offer(image);
      const allowed = simple.transferProtocols;
      if (allowed !== undefined && !allowed.includes(offer.protocol)) {
        offer.release();
        throw new UpdateFailure(
          "NO_UPDATE_METHOD",
          `SimpleUpdate allows TransferProtocol ${allowed.join(", ")}; the agent serves images over ${offer.protocol}`,
        );
      }
      const request: PushRequest = {
        method: "simple",
        uri: simple.target,
        parameters: {
          ImageURI: offer.url,
          TransferProtocol: offer.protocol,
          Targets: targetUris,
          "@Redfish.OperationApplyTime": applyTime,
        },
      };
      return { request, release: offer.release };
    }
    if (service.httpPushUri !== undefined) {
      const request: PushRequest = { method: "http-push", uri: service.httpPushUri, file: image };
      return { request, release: () => {} };
    }
    throw new UpdateFailure(
      "NO_UPDATE_METHOD",
      "the UpdateService advertises neither MultipartHttpPushUri, SimpleUpdate nor HttpPushUri",
    );
  }

  private async pushWithBackoff(request: PushRequest): Promise<TaskStarted> {
    const { clock, timings } = this.deps;
    const giveUpAt = clock.now() + timings.busyTimeoutMs;
    for (;;) {
      try {
        return await this.deps.bmc.push(request);
      } catch (err) {
        const status = (err as { status?: number }).status;
        if (status === 413) throw new UpdateFailure("IMAGE_TOO_LARGE", (err as Error).message);
        if (status !== 503) throw err;
        const wait = this.waitFor((err as { retryAfterMs?: number }).retryAfterMs);
        if (clock.now() + wait > giveUpAt) {
          throw new UpdateFailure(
            "BUSY",
            `the BMC stayed busy for ${timings.busyTimeoutMs} ms: ${(err as Error).message}`,
          );
        }
        await clock.sleep(wait, this.deps.signal);
      }
    }
  }

  private async follow(
    command: UpdateCommand,
    started: TaskStarted,
    targets: FirmwareMember[],
  ): Promise<ResultEvent | undefined> {
    const { clock, timings, bmc } = this.deps;
    let shown = 0;
    let lastChange = clock.now();
    let lastPercent = -1;
    let wait = this.waitFor(started.retryAfterMs);
    for (;;) {
      await clock.sleep(wait, this.deps.signal);
      let poll: Awaited<ReturnType<RedfishBmc["pollTask"]>>;
      try {
        poll = await bmc.pollTask(started);
      } catch (err) {
        if ((err as { code?: string }).code !== "UNREACHABLE") throw err;
        return await this.settle(
          command,
          targets,
          `the BMC dropped the connection (${(err as Error).message})`,
        );
      }
      if (poll.kind === "gone") return await this.settle(command, targets, "the task monitor answered 404");
      if (poll.kind === "ended") {
        const failure = judgeEndedTask(poll.task);
        if (failure !== undefined) throw failure;
        return await this.settle(command, targets, taskMessage(poll.task));
      }
      const percent = poll.task?.percent;
      if (percent !== undefined && percent !== lastPercent) {
        lastPercent = percent;
        lastChange = clock.now();
        if (percent > shown && percent < 100) {
          shown = percent;
          await this.emit({ v: 1, type: "progress", requestId: command.requestId, percent });
        }
      } else if (clock.now() - lastChange > timings.noProgressTimeoutMs) {
        const said = poll.task === undefined ? "" : `: ${taskMessage(poll.task)}`;
        throw new UpdateFailure(
          "FLASH_TIMEOUT",
          `no progress for ${timings.noProgressTimeoutMs} ms (last at ${Math.max(lastPercent, 0)}%)${said}`,
        );
      }
      wait = this.waitFor(poll.retryAfterMs);
    }
  }

  /**
   * After the task (ended well, vanished, or the BMC dropped off): read the inventory until the
   * BMC answers, then until every target shows the version or settleTimeoutMs passes.
   */
  private async settle(command: UpdateCommand, targets: FirmwareMember[], why: string): Promise<ResultEvent> {
    const { clock, timings } = this.deps;
    const target = command.targetVersion;
    const read = () => Promise.all(targets.map((t) => this.deps.bmc.firmwareMember(t.uri)));
    let now = await this.untilAnswers(read, "the firmware inventory to answer");
    const giveUpAt = clock.now() + timings.settleTimeoutMs;
    while (!now.every((m) => m.version === target)) {
      if (clock.now() >= giveUpAt) {
        const reads = now.map((m) => `${m.id} ${m.version}`).join(", ");
        throw new UpdateFailure("NOT_APPLIED", `${why}; the inventory still reads ${reads}, not ${target}`);
      }
      await clock.sleep(timings.pollIntervalMs, this.deps.signal);
      now = await this.untilAnswers(read, "the firmware inventory to answer");
    }
    const result: ResultEvent = {
      v: 1,
      type: "result",
      requestId: command.requestId,
      ok: true,
      version: target,
    };
    if (command.subTargets !== undefined) result.subTargets = [...command.subTargets];
    return result;
  }

  /** Repeats `read` while the BMC is unreachable, up to rebootTimeoutMs. */
  private async untilAnswers<T>(read: () => Promise<T>, what: string): Promise<T> {
    const { clock, timings } = this.deps;
    const giveUpAt = clock.now() + timings.rebootTimeoutMs;
    for (;;) {
      try {
        return await read();
      } catch (err) {
        if ((err as { code?: string }).code !== "UNREACHABLE") throw err;
        if (clock.now() >= giveUpAt) {
          throw new UpdateFailure(
            "BMC_UNREACHABLE",
            `waited ${timings.rebootTimeoutMs} ms for ${what}: ${(err as Error).message}`,
          );
        }
        await clock.sleep(timings.pollIntervalMs, this.deps.signal);
      }
    }
  }

  private async readFirmware() {
    const service = await this.deps.bmc.updateService();
    const members = await this.deps.bmc.firmwareInventory();
    const member = pickFirmwareMember(members, this.settings.firmwareMember);
    return { service, members, member };
  }

  private waitFor(retryAfterMs: number | undefined): number {
    const { pollIntervalMs, maxRetryAfterMs } = this.deps.timings;
    return Math.max(pollIntervalMs, Math.min(retryAfterMs ?? 0, maxRetryAfterMs));
  }

  /** The failure as a `result`, or undefined when the agent is stopping (nothing more to say). */
  private async failed(command: UpdateCommand, err: unknown): Promise<ResultEvent | undefined> {
    if (this.deps.signal.aborted) return undefined;
    const code = codeOf(err);
    if (code === "BMC_ERROR") this.deps.log(`bmc-agent: ${this.componentId}: ${describe(err)}`);
    let version = UNKNOWN_VERSION;
    try {
      version = (await this.readFirmware()).member.version;
    } catch {
      // The version stays unknown: the BMC cannot be read.
    }
    const result: ResultEvent = {
      v: 1,
      type: "result",
      requestId: command.requestId,
      ok: false,
      version,
      error: { code, message: describe(err) },
    };
    return result;
  }

  private async emit(event: BmcEvent): Promise<void> {
    try {
      await this.deps.events.publish(this.componentId, event);
    } catch (err) {
      this.deps.log(
        `bmc-agent: ${this.componentId}: publishing ${event.type} failed: ${(err as Error).message}`,
      );
    }
  }
}

/**
 * The component's firmware member: the one whose Id is `name` (any case) when the config names
 * one; otherwise the one related to a Manager (the BMC's own firmware), else the one with Id `BMC`.
 */
export function pickFirmwareMember(
  members: readonly FirmwareMember[],
  name: string | undefined,
): FirmwareMember {
  const byName =
    name === undefined ? undefined : members.find((m) => m.id.toLowerCase() === name.toLowerCase());
  const found =
    name !== undefined
      ? byName
      : (members.find((m) => m.relatedItems.some((r) => /\/Managers\/[^/]+\/?$/.test(r))) ??
        members.find((m) => m.id.toUpperCase() === "BMC"));
  if (found === undefined) {
    throw new UpdateFailure(
      "BMC_ERROR",
      `the firmware inventory has no member ${name ?? "related to the Manager or named BMC"} (members: ${members
        .map((m) => m.id)
        .join(", ")})`,
    );
  }
  return found;
}
