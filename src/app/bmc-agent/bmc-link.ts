/**
 * One BMC as the agent reaches it, shared by what the agent does with it (bmc-worker.ts: updates;
 * bmc-activation.ts: queries and resets): its settings, the worker's ports, and the three things
 * every command needs: read its firmware (UpdateService and the component's member), wait while it
 * is unreachable (a reboot), and publish an event for it (a failed publish is logged, not thrown).
 */
import type { BmcEvent } from "../../domain/bmc-protocol.js";
import type {
  AgentClock,
  CommandAuthOpener,
  EventSink,
  FirmwareMember,
  ImageCache,
  ImageServer,
  RedfishBmc,
  UpdateJournal,
} from "../ports/bmc-agent.js";
import { UpdateFailure } from "./update-outcome.js";

export interface BmcWorkerSettings {
  componentId: string;
  /** The rack the agent serves (its `auth` blobs are sealed for it); absent: v1–v3 topics. */
  rackId?: string;
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
  /**
   * The shortest time between two `progress` events of one update (0: every rise). Each is an IoT
   * message the deployment pays for on its way to the child task, which stores one every few
   * seconds at most; a BMC ticking 1 % at a time would otherwise send up to 99 per flash.
   */
  progressIntervalMs: number;
}

export interface BmcWorkerDeps {
  bmc: RedfishBmc;
  images: ImageCache;
  imageServer: ImageServer;
  events: EventSink;
  journal: UpdateJournal;
  clock: AgentClock;
  timings: AgentTimings;
  /** Opens update commands' `auth` blobs; absent: they are not read (the config's password). */
  auth?: CommandAuthOpener;
  /** Ends waits when the agent stops. */
  signal: AbortSignal;
  log: (line: string) => void;
}

/** What the agent says for a BMC it cannot read. */
export const UNKNOWN_VERSION = "unknown";

export class BmcLink {
  constructor(
    readonly settings: BmcWorkerSettings,
    readonly deps: BmcWorkerDeps,
  ) {}

  get componentId(): string {
    return this.settings.componentId;
  }

  async readFirmware() {
    const service = await this.deps.bmc.updateService();
    const members = await this.deps.bmc.firmwareInventory();
    const member = pickFirmwareMember(members, this.settings.firmwareMember);
    return { service, members, member };
  }

  /** Repeats `read` while the BMC is unreachable, up to rebootTimeoutMs. */
  async untilAnswers<T>(read: () => Promise<T>, what: string): Promise<T> {
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

  async emit(event: BmcEvent): Promise<void> {
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
