/**
 * What the agent answers without flashing, for one BMC (bmc-link.ts); updates are bmc-worker.ts's.
 *
 * `query` → `status` with the component's firmware member's `Version`; `ready: false` with the
 * reason when the BMC cannot be read, its UpdateService is disabled, or the member is not
 * `Updateable`; its health when not OK (v3).
 * `reset` (v3 activation) → `ack`, the reset, then `status` once the BMC answers again.
 */
import type {
  BmcEvent,
  QueryCommand,
  ResetCommand,
  ResetKind,
  StatusEvent,
} from "../../domain/bmc-protocol.js";
import type { ResetAction, ResetResource } from "../ports/bmc-agent.js";
import { type BmcLink, UNKNOWN_VERSION } from "./bmc-link.js";
import { describe } from "./update-outcome.js";

/**
 * What each reset kind does over Redfish: the resource and the ResetTypes to try, in order. A host
 * power cycle is a graceful restart where the system allows one (the BMC forces it by its own
 * policy), an AC cycle the Chassis PowerCycle; a whole-rack cycle is the power shelf's Chassis
 * PowerCycle (this agent is then the shelf's).
 */
export const RESET_PLANS: Record<ResetKind, { resource: ResetResource; action: string; types: string[] }> = {
  bmc: { resource: "manager", action: "Manager.Reset", types: ["GracefulRestart", "ForceRestart"] },
  host: {
    resource: "system",
    action: "ComputerSystem.Reset",
    types: ["GracefulRestart", "PowerCycle", "ForceRestart"],
  },
  ac: { resource: "chassis", action: "Chassis.Reset", types: ["PowerCycle"] },
  // Sent to the rack's power shelf only: its chassis' power cycle drops and restores the rack.
  rack: { resource: "chassis", action: "Chassis.Reset", types: ["PowerCycle"] },
};

export class BmcActivation {
  /** Reset request id → its answer (once performed, or while it runs). */
  private readonly resets = new Map<string, Promise<StatusEvent | undefined>>();

  constructor(private readonly link: BmcLink) {}

  async query(command: QueryCommand): Promise<void> {
    const { requestId } = command;
    let status: BmcEvent;
    try {
      const { service, member } = await this.link.readFirmware();
      status = { v: 1, type: "status", requestId, version: member.version };
      // The component's own health (BMC protocol v3), said only when it is not OK; a BMC whose
      // health cannot be read answers without it (its version is what a query is for).
      const said = await this.link.deps.bmc.health().catch(() => undefined);
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
    await this.link.emit(status);
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
    const { deps, componentId } = this.link;
    let answer = this.resets.get(requestId);
    if (answer === undefined) {
      const known = deps.journal.get(componentId, requestId);
      if (known?.phase === "reset") return this.link.emit(known.status);
      await this.link.emit({ v: 1, type: "ack", requestId });
      answer = (
        known?.phase === "resetting" ? this.backFromReset(requestId) : this.performReset(command)
      ).then(async (status) => {
        // Stopping: left `resetting`, so a restarted agent waits for the BMC, never resets again.
        if (deps.signal.aborted) return undefined;
        await deps.journal.record({ componentId, requestId, phase: "reset", status });
        return status;
      });
      this.resets.set(requestId, answer);
    }
    const status = await answer;
    if (status !== undefined) await this.link.emit(status);
  }

  private async performReset(command: ResetCommand): Promise<StatusEvent> {
    const { requestId } = command;
    const plan = RESET_PLANS[command.kind];
    const failed = (code: string, message: string) => this.resetFailed(requestId, code, message);
    let action: ResetAction | undefined;
    try {
      action = await this.link.deps.bmc.resetAction(plan.resource);
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
    await this.link.deps.journal.record({
      componentId: this.link.componentId,
      requestId,
      phase: "resetting",
      kind: command.kind,
    });
    try {
      await this.link.deps.bmc.reset(action, type);
    } catch (err) {
      // A BMC that goes down may drop the connection before it answers: that is the reset.
      if ((err as { code?: string }).code !== "UNREACHABLE") return failed("RESET_FAILED", describe(err));
    }
    return this.backFromReset(requestId);
  }

  /** After a reset's POST: the version the BMC runs once it answers again. */
  private async backFromReset(requestId: string): Promise<StatusEvent> {
    try {
      await this.link.deps.clock.sleep(this.link.deps.timings.pollIntervalMs, this.link.deps.signal);
      const { member } = await this.link.untilAnswers(() => this.link.readFirmware(), "the BMC to come back");
      return { v: 1, type: "status", requestId, version: member.version };
    } catch (err) {
      return this.resetFailed(requestId, "RESET_FAILED", describe(err));
    }
  }

  /** A reset's `status` with its error, and the version the BMC reads now (`unknown` if none). */
  private async resetFailed(requestId: string, code: string, message: string): Promise<StatusEvent> {
    const version = await this.link.readFirmware().then(
      ({ member }) => member.version,
      () => UNKNOWN_VERSION,
    );
    return { v: 3, type: "status", requestId, version, error: { code, message } };
  }
}
