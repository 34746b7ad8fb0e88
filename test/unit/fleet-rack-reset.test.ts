/**
 * The simulated fleet's activation (local/bmc-fleet-resets.ts) on a `rack` reset, and the child
 * task's choice of the power shelf it sends one to (src/app/child-task/rack-cycle.ts).
 */
import { describe, expect, it } from "vitest";
import { type ResetDeps, resetHandler } from "../../local/bmc-fleet-resets.js";
import type { BmcBehaviour } from "../../local/fleet-file.js";
import type { SimBmc } from "../../local/sim-bmc.js";
import { powerShelfOf } from "../../src/app/child-task/rack-cycle.js";
import type { BmcEvent } from "../../src/domain/bmc-protocol.js";
import type { ComponentType } from "../../src/domain/model.js";
import { StepError } from "../../src/domain/step-errors.js";

const bmc = (id: string, rackId: string, type: ComponentType, activation: BmcBehaviour["activation"]) => ({
  bmc: { id, rackId, type, version: "1.0.0", pending: "2.0.0", offline: false, handled: new Map() } as SimBmc,
  activation,
});

function fleetOf(all: ReturnType<typeof bmc>[]) {
  const sent: [string, BmcEvent][] = [];
  const counted = { resets: [] as string[], activations: 0 };
  let wake: () => void = () => {};
  const asleep = new Promise<void>((resolve) => {
    // The reset's sleep ends only when the test says so: it looks at the rack in between.
    wake = resolve;
  });
  let slept!: () => void;
  const sleeping = new Promise<void>((resolve) => {
    slept = resolve;
  });
  const deps: ResetDeps = {
    behaviour: (b) => ({
      outcome: "succeed",
      updateMs: 0,
      resetMs: 10,
      activation: all.find((x) => x.bmc === b)?.activation,
    }),
    sleep: async () => {
      slept();
      await asleep;
    },
    send: async (componentId, event) => {
      sent.push([componentId, event]);
    },
    rackOf: (b) => all.map((x) => x.bmc).filter((x) => x.rackId === b.rackId),
    counted: {
      reset: (kind) => counted.resets.push(kind),
      activation: () => {
        counted.activations += 1;
      },
    },
    log: () => {},
  };
  return { handle: resetHandler(deps), sent, counted, wake, sleeping };
}

describe("simulated fleet: a rack reset through the power shelf", () => {
  it("every BMC of the shelf's rack is down during the reset, then runs its pending version; the shelf answers; another rack is untouched", async () => {
    // Firmware that needs an AC cycle, a BMC reset and a host power cycle: the rack's cycle activates all.
    const shelf = bmc("shelf", "rack-a", "POWERSHELF", "bmc");
    const tray = bmc("tray", "rack-a", "COMPUTE", "ac");
    const tor = bmc("tor", "rack-a", "TORSWITCH", "host");
    const elsewhere = bmc("other", "rack-b", "COMPUTE", "ac");
    const fleet = fleetOf([shelf, tray, tor, elsewhere]);
    const done = fleet.handle(shelf.bmc, {
      v: 3,
      type: "reset",
      requestId: "r-rack",
      taskId: "t",
      kind: "rack",
      issuedAt: 0,
    });
    await fleet.sleeping;
    // Mid-reset: the rack's BMCs are silent (queries wait on `resetting`), the other rack's not.
    expect([shelf, tray, tor, elsewhere].map((x) => x.bmc.resetting !== undefined)).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(fleet.sent).toEqual([["shelf", { v: 3, type: "ack", requestId: "r-rack" }]]);
    fleet.wake();
    await done;
    expect([shelf, tray, tor, elsewhere].map((x) => [x.bmc.version, x.bmc.pending, x.bmc.resetting])).toEqual(
      [
        ["2.0.0", undefined, undefined],
        ["2.0.0", undefined, undefined],
        ["2.0.0", undefined, undefined],
        ["1.0.0", "2.0.0", undefined],
      ],
    );
    expect(fleet.sent).toEqual([
      ["shelf", { v: 3, type: "ack", requestId: "r-rack" }],
      ["shelf", { v: 3, type: "status", requestId: "r-rack", version: "2.0.0" }],
    ]);
    expect([fleet.counted.resets, fleet.counted.activations]).toEqual([["rack"], 3]);
  });
});

describe("child task: the power shelf of a whole-rack AC cycle", () => {
  const rackWith = (...components: { id: string; type: ComponentType }[]) => ({
    readiness: {
      notReady: async () => new Map(),
      rackComponents: async () => components,
    },
  });

  it("is the rack's POWERSHELF component, the first by id of several", async () => {
    const deps = rackWith(
      { id: "c-9", type: "COMPUTE" },
      { id: "ps-2", type: "POWERSHELF" },
      { id: "ps-1", type: "POWERSHELF" },
    );
    expect(await powerShelfOf(deps, "rack-a")).toBe("ps-1");
  });

  it("a rack without one: NoPowerShelf, naming the rack", async () => {
    await expect(powerShelfOf(rackWith({ id: "c-1", type: "COMPUTE" }), "rack-a")).rejects.toThrow(
      new StepError(
        "NoPowerShelf",
        "rack rack-a has no POWERSHELF component: a whole-rack AC cycle (ac_scope RACK) goes through the rack's power shelf",
      ),
    );
    const error = await powerShelfOf(rackWith(), "rack-a").catch((e: unknown) => e);
    expect((error as StepError).stepErrorName).toBe("NoPowerShelf");
  });
});
