/**
 * One BMC as the agent drives it: the BMC protocol's commands (src/domain/bmc-protocol.ts) turned
 * into Redfish calls, and Redfish's answers turned into the protocol's events. This file is the
 * update path; `query` and `reset` are bmc-activation.ts's, what both share bmc-link.ts's.
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
 *     4. follow the task monitor: PercentComplete → `progress` (only upwards, at most one per
 *        progressIntervalMs: the first at once, none held back for the result), no change within
 *        noProgressTimeoutMs → FLASH_TIMEOUT, a failed end → FLASH_FAILED with the BMC's messages,
 *        a monitor gone (404) or a dropped connection → read the inventory until it answers;
 *     5. `result` ok only when the inventory reads back T (every targeted member, for
 *        sub-targets); else NOT_APPLIED / FLASH_FAILED with what it reads.
 * The result is journalled before it is published, so a repeat after a restart re-sends it.
 */
import type { QueryCommand, ResetCommand, ResultEvent, UpdateCommand } from "../../domain/bmc-protocol.js";
import { bmcAuthContext } from "../../domain/bmc-topics.js";
import type {
  FirmwareMember,
  LocalImage,
  PushRequest,
  RedfishBmc,
  TaskStarted,
  UpdateServiceFacts,
} from "../ports/bmc-agent.js";
import { BmcActivation } from "./bmc-activation.js";
import { BmcLink, type BmcWorkerDeps, type BmcWorkerSettings, UNKNOWN_VERSION } from "./bmc-link.js";
import { codeOf, describe, judgeEndedTask, taskMessage, UpdateFailure } from "./update-outcome.js";

export class BmcWorker {
  private running?: { requestId: string; done: Promise<void> };
  private readonly link: BmcLink;
  private readonly activation: BmcActivation;

  constructor(
    private readonly settings: BmcWorkerSettings,
    private readonly deps: BmcWorkerDeps,
  ) {
    this.link = new BmcLink(settings, deps);
    this.activation = new BmcActivation(this.link);
  }

  get componentId(): string {
    return this.settings.componentId;
  }

  /** `query`: bmc-activation.ts. */
  query(command: QueryCommand): Promise<void> {
    return this.activation.query(command);
  }

  /** `reset` (v3 activation): bmc-activation.ts. */
  reset(command: ResetCommand): Promise<void> {
    return this.activation.reset(command);
  }

  /** The update in progress, if any (the agent awaits it at shutdown). */
  get inFlight(): Promise<void> | undefined {
    return this.running?.done;
  }

  async update(command: UpdateCommand): Promise<void> {
    const { requestId } = command;
    const known = this.deps.journal.get(this.componentId, requestId);
    if (known?.phase === "done") return this.link.emit(known.result);
    if (this.running?.requestId === requestId) return this.link.emit({ v: 1, type: "ack", requestId });
    if (this.running !== undefined) {
      return this.link.emit({
        v: 1,
        type: "result",
        requestId,
        ok: false,
        version: UNKNOWN_VERSION,
        error: { code: "BUSY", message: `update ${this.running.requestId} is in progress on this BMC` },
      });
    }
    const done = (async () => {
      await this.link.emit({ v: 1, type: "ack", requestId });
      const result =
        known?.phase === "pushed"
          ? await this.resume(command, known.monitor)
          : await this.flash(command).catch((err: unknown) => this.failed(command, err));
      if (result === undefined) return; // stopping: the journal says "pushed", a restart resumes
      await this.deps.journal.record({ componentId: this.componentId, requestId, phase: "done", result });
      await this.link.emit(result);
    })();
    this.running = { requestId, done };
    try {
      await done;
    } finally {
      this.running = undefined;
    }
  }

  // -------------------------------------------------------------------------------------------

  /**
   * The command's `auth` blob, opened under its context (`bmc:<rack>:<component>:<request>`), is
   * the BMC password from then on; nothing is asked of the BMC when it cannot be opened.
   */
  private async useCommandCredentials(command: UpdateCommand): Promise<void> {
    const { auth } = command;
    if (auth === undefined || this.deps.auth === undefined) return;
    const to = { rackId: this.settings.rackId ?? "", componentId: this.componentId };
    let password: string;
    try {
      password = await this.deps.auth.open(auth, bmcAuthContext(to, command.requestId));
    } catch (err) {
      throw new UpdateFailure(
        "AUTH_UNAVAILABLE",
        `the command's credentials (${auth.keyId}) could not be opened: ${(err as Error).name}: ${(err as Error).message}`,
      );
    }
    await this.deps.bmc.useCredentials(password);
  }

  private async flash(command: UpdateCommand): Promise<ResultEvent | undefined> {
    const sha256 = command.image.sha256;
    if (sha256 === undefined) {
      throw new UpdateFailure(
        "IMAGE_UNVERIFIED",
        "the update carries no image.sha256; the agent flashes only verified images",
      );
    }
    await this.useCommandCredentials(command);
    const { service, members, member } = await this.link.readFirmware();
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
      const { members, member } = await this.link.untilAnswers(
        () => this.link.readFirmware(),
        "the BMC to answer",
      );
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
    let shownAt: number | undefined;
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
      } else if (clock.now() - lastChange > timings.noProgressTimeoutMs) {
        const said = poll.task === undefined ? "" : `: ${taskMessage(poll.task)}`;
        throw new UpdateFailure(
          "FLASH_TIMEOUT",
          `no progress for ${timings.noProgressTimeoutMs} ms (last at ${Math.max(lastPercent, 0)}%)${said}`,
        );
      }
      // Paced: a rise held back within the interval goes out at the first read after it.
      const due = shownAt === undefined || clock.now() - shownAt >= timings.progressIntervalMs;
      if (percent !== undefined && percent > shown && percent < 100 && due) {
        shown = percent;
        shownAt = clock.now();
        await this.link.emit({ v: 1, type: "progress", requestId: command.requestId, percent });
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
    let now = await this.link.untilAnswers(read, "the firmware inventory to answer");
    const giveUpAt = clock.now() + timings.settleTimeoutMs;
    while (!now.every((m) => m.version === target)) {
      if (clock.now() >= giveUpAt) {
        const reads = now.map((m) => `${m.id} ${m.version}`).join(", ");
        throw new UpdateFailure("NOT_APPLIED", `${why}; the inventory still reads ${reads}, not ${target}`);
      }
      await clock.sleep(timings.pollIntervalMs, this.deps.signal);
      now = await this.link.untilAnswers(read, "the firmware inventory to answer");
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
      version = (await this.link.readFirmware()).member.version;
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
}
