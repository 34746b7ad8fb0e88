/**
 * The BMC agent's activation (BMC protocol v3 `reset`) against the Redfish emulator over HTTPS:
 * firmware that needs an AC cycle is staged by its flash (the agent says NOT_APPLIED) and active
 * after the agent's Chassis power cycle, read back once the BMC is up again; a BMC reset is
 * Manager.Reset, a host power cycle ComputerSystem.Reset GracefulRestart; a repeated request id is
 * answered from memory, not reset again, and from the journal after a restart, also when the agent
 * stopped between its POST and its answer; a whole-rack cycle (kind rack, sent to the power shelf)
 * is the shelf's Chassis power cycle.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatedBmcSpec } from "../../local/redfish-emulator.js";
import { FileJournal } from "../../src/adapters/bmc-agent/journal.js";
import type { ResetCommand } from "../../src/domain/bmc-protocol.js";
import { type AgentHarness, ack, type ImageRef, startAgentHarness } from "../support/redfish-agent.js";

const id = (n: number): string => `7c000000-0000-4000-8000-0000000005${String(n).padStart(2, "0")}`;
const C = { gpu: id(1), bmc: id(2), host: id(3), restarted: id(4), shelf: id(5) };

let h: AgentHarness;
let image: ImageRef;

beforeAll(async () => {
  const bmcs: EmulatedBmcSpec[] = [
    { id: C.gpu, behaviour: { activation: "ac" } },
    { id: C.bmc, behaviour: { activation: "bmc" } },
    { id: C.host },
    { id: C.restarted, behaviour: { activation: "ac" } },
    { id: C.shelf, behaviour: { activation: "ac" } },
  ];
  h = await startAgentHarness(bmcs, { emulator: { rebootMs: 100 } });
  image = h.images.add("2.0.0");
});

afterAll(async () => {
  await h?.stop();
});

const reset = (requestId: string, kind: ResetCommand["kind"]): ResetCommand => ({
  v: 3,
  type: "reset",
  requestId,
  taskId: "7a000000-0000-4000-8000-00000000aaaa",
  kind,
  issuedAt: 1_767_225_600_000,
});

describe("BMC agent: activation over Redfish", () => {
  it("a whole-rack cycle at the power shelf: Chassis.Reset PowerCycle on its chassis, answered once back", async () => {
    await h.send(C.shelf, h.update("u-shelf", "2.0.0", image));
    expect((await h.eventsUntilResult(C.shelf, "u-shelf")).at(-1)).toMatchObject({
      type: "result",
      error: { code: "NOT_APPLIED" },
    });
    await h.send(C.shelf, reset("r-rack", "rack"));
    expect(await h.eventsUntilResult(C.shelf, "r-rack")).toEqual([
      ack("r-rack"),
      { v: 1, type: "status", requestId: "r-rack", version: "2.0.0" },
    ]);
    expect(h.emulator.record(C.shelf).resets).toEqual(["Chassis.Reset PowerCycle"]);
  });

  it("firmware that needs an AC cycle: staged by the flash, active after the Chassis power cycle, read back", async () => {
    await h.send(C.gpu, h.update("u-gpu", "2.0.0", image));
    const flashed = await h.eventsUntilResult(C.gpu, "u-gpu");
    expect(flashed.at(-1)).toMatchObject({
      type: "result",
      ok: false,
      version: "1.0.0",
      error: { code: "NOT_APPLIED" },
    });
    expect(h.emulator.versionOf(C.gpu)).toBe("1.0.0");

    // A BMC reset does not activate what needs an AC cycle.
    await h.send(C.gpu, reset("r-gpu-bmc", "bmc"));
    expect(await h.eventsUntilResult(C.gpu, "r-gpu-bmc")).toEqual([
      ack("r-gpu-bmc"),
      { v: 1, type: "status", requestId: "r-gpu-bmc", version: "1.0.0" },
    ]);
    await h.send(C.gpu, reset("r-gpu-ac", "ac"));
    expect(await h.eventsUntilResult(C.gpu, "r-gpu-ac")).toEqual([
      ack("r-gpu-ac"),
      { v: 1, type: "status", requestId: "r-gpu-ac", version: "2.0.0" },
    ]);
    expect(h.emulator.record(C.gpu).resets).toEqual([
      "Manager.Reset GracefulRestart",
      "Chassis.Reset PowerCycle",
    ]);
    // Both took the BMC down, and the agent logged in again after each.
    expect(h.emulator.record(C.gpu).reboots).toBe(2);

    // The same request id again: its answer again, no second power cycle.
    await h.send(C.gpu, reset("r-gpu-ac", "ac"));
    const again = await h.eventsUntilResult(C.gpu, "r-gpu-ac", 2);
    expect(again.at(-1)).toEqual({ v: 1, type: "status", requestId: "r-gpu-ac", version: "2.0.0" });
    expect(h.emulator.record(C.gpu).resets).toHaveLength(2);
  });

  it("a BMC reset is Manager.Reset and activates the BMC's own firmware", async () => {
    await h.send(C.bmc, h.update("u-bmc", "2.0.0", image));
    await h.eventsUntilResult(C.bmc, "u-bmc");
    await h.send(C.bmc, reset("r-bmc", "bmc"));
    expect((await h.eventsUntilResult(C.bmc, "r-bmc")).at(-1)).toEqual({
      v: 1,
      type: "status",
      requestId: "r-bmc",
      version: "2.0.0",
    });
    expect(h.emulator.record(C.bmc).resets).toEqual(["Manager.Reset GracefulRestart"]);
  });

  it("a host power cycle is ComputerSystem.Reset GracefulRestart; the BMC stays up", async () => {
    await h.send(C.host, reset("r-host", "host"));
    expect(await h.eventsUntilResult(C.host, "r-host")).toEqual([
      ack("r-host"),
      { v: 1, type: "status", requestId: "r-host", version: "1.0.0" },
    ]);
    expect(h.emulator.record(C.host)).toMatchObject({
      resets: ["ComputerSystem.Reset GracefulRestart"],
      reboots: 0,
    });
  });
});

describe("BMC agent: resets remembered across restarts", () => {
  it("a reset performed before a restart is answered from the journal: one power cycle", async () => {
    await h.send(C.restarted, h.update("u-restarted", "2.0.0", image));
    await h.eventsUntilResult(C.restarted, "u-restarted");
    await h.send(C.restarted, reset("r-restarted", "ac"));
    expect(await h.eventsUntilResult(C.restarted, "r-restarted")).toEqual([
      ack("r-restarted"),
      { v: 1, type: "status", requestId: "r-restarted", version: "2.0.0" },
    ]);
    await h.restartAgent();
    await h.send(C.restarted, reset("r-restarted", "ac"));
    const again = await h.eventsUntilResult(C.restarted, "r-restarted", 2);
    expect(again.slice(2)).toEqual([{ v: 1, type: "status", requestId: "r-restarted", version: "2.0.0" }]);
    expect(h.emulator.record(C.restarted)).toMatchObject({
      resets: ["Chassis.Reset PowerCycle"],
      reboots: 1,
    });
  });

  it("a reset an agent stopped after posting is answered once the BMC answers, never posted again", async () => {
    // What an agent stopped between its POST and its answer leaves behind: `resetting`. Written
    // here directly, so no race with a stopping agent.
    await h.stopAgent();
    const journal = await FileJournal.open(h.stateDir);
    await journal.record({ componentId: C.restarted, requestId: "r-cut", phase: "resetting", kind: "bmc" });
    await journal.close();
    await h.restartAgent();
    await h.send(C.restarted, reset("r-cut", "bmc"));
    expect(await h.eventsUntilResult(C.restarted, "r-cut")).toEqual([
      ack("r-cut"),
      { v: 1, type: "status", requestId: "r-cut", version: "2.0.0" },
    ]);
    expect(h.emulator.record(C.restarted).resets).toEqual(["Chassis.Reset PowerCycle"]);
  });
});

describe("BMC agent: health", () => {
  it("a query carries the worst Status.HealthRollup of the system, chassis and manager, only when not OK", async () => {
    await h.send(C.host, { v: 1, type: "query", requestId: "q-healthy" });
    expect(await h.eventsUntilResult(C.host, "q-healthy")).toEqual([
      { v: 1, type: "status", requestId: "q-healthy", version: "1.0.0" },
    ]);
    h.emulator.setBehaviour(C.host, { unhealthy: true });
    await h.send(C.host, { v: 1, type: "query", requestId: "q-sick" });
    expect(await h.eventsUntilResult(C.host, "q-sick")).toEqual([
      {
        v: 3,
        type: "status",
        requestId: "q-sick",
        version: "1.0.0",
        health: "Critical",
        healthReason: "/redfish/v1/Systems/1 reports HealthRollup Critical",
      },
    ]);
  });
});
