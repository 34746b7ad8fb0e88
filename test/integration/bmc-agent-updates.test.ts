/**
 * The BMC agent against the Redfish emulator, over the real local MQTT broker and HTTPS: for each
 * behaviour of a BMC, the exact events a child task receives on the BMC's evt topic, and the
 * emulator's record of what the agent asked (sessions, pushes per firmware member).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileJournal } from "../../src/adapters/bmc-agent/journal.js";
import { RedfishClient } from "../../src/adapters/redfish/client.js";
import {
  type AgentHarness,
  ack,
  failed,
  type ImageRef,
  ok,
  PASSWORD,
  progress,
  startAgentHarness,
  USERNAME,
} from "../support/redfish-agent.js";

const id = (n: number): string => `7b000000-0000-4000-8000-0000000001${String(n).padStart(2, "0")}`;
const C = {
  happy: id(1),
  fail: id(2),
  reboot: id(3),
  repeat: id(4),
  hang: id(5),
  busy: id(6),
  critical: id(7),
  resume: id(8),
  simple: id(9),
  httpPush: id(10),
  subTargets: id(11),
  vanishing: id(12),
};

let h: AgentHarness;
let image: ImageRef;

beforeAll(async () => {
  h = await startAgentHarness(
    [
      { id: C.happy },
      { id: C.fail, behaviour: { fail: true } },
      { id: C.reboot, behaviour: { rebootMidUpdate: true } },
      { id: C.repeat },
      { id: C.hang, behaviour: { hang: true } },
      { id: C.busy, behaviour: { busyPushes: 2 } },
      { id: C.critical, behaviour: { critical: true } },
      { id: C.resume },
      { id: C.simple, behaviour: { methods: ["simple"] } },
      { id: C.httpPush, behaviour: { methods: ["http-push"] } },
      { id: C.subTargets },
      { id: C.vanishing, behaviour: { vanishingTasks: true } },
    ],
    { emulator: { rebootMs: 150 } },
  );
  image = h.images.add("1.3.0");
});

afterAll(async () => {
  await h?.stop();
});

describe("bmc agent: query", () => {
  it("a query is answered with the version of the BMC's own firmware member, ready", async () => {
    await h.send(C.happy, { v: 1, type: "query", requestId: "q-happy" });
    expect(await h.eventsUntilResult(C.happy, "q-happy")).toEqual([
      { v: 1, type: "status", requestId: "q-happy", version: "1.0.0" },
    ]);
  });
});

describe("bmc agent: update over MultipartHttpPushUri", () => {
  it("ack, progress 25/50/75 from PercentComplete, result once the inventory reads the version; one session, one push, Immediate", async () => {
    await h.send(C.happy, h.update("u-happy", "1.3.0", image));
    expect(await h.eventsUntilResult(C.happy, "u-happy")).toEqual([
      ack("u-happy"),
      progress("u-happy", 25),
      progress("u-happy", 50),
      progress("u-happy", 75),
      ok("u-happy", "1.3.0"),
    ]);
    const record = h.emulator.record(C.happy);
    expect(record).toMatchObject({
      sessionsCreated: 1,
      pushes: { BMC: 1 },
      pushesByMethod: { multipart: 1 },
      applyTimes: ["Immediate"],
      basicAuthRequests: 0,
    });
    expect(h.emulator.versionOf(C.happy)).toBe("1.3.0");
  });

  it("a task that ends in Exception → FLASH_FAILED with the BMC's message, the version unchanged", async () => {
    await h.send(C.fail, h.update("u-fail", "1.3.0", image));
    expect(await h.eventsUntilResult(C.fail, "u-fail")).toEqual([
      ack("u-fail"),
      progress("u-fail", 25),
      failed(
        "u-fail",
        "1.0.0",
        "FLASH_FAILED",
        "task Exception (TaskStatus Critical): applying 1.3.0 failed: the device rejected the image",
      ),
    ]);
    expect(h.emulator.record(C.fail).pushes).toEqual({ BMC: 1 });
    expect(h.emulator.versionOf(C.fail)).toBe("1.0.0");
  });

  it("Completed with TaskStatus Critical → FLASH_FAILED with the BMC's message", async () => {
    await h.send(C.critical, h.update("u-critical", "1.3.0", image));
    expect(await h.eventsUntilResult(C.critical, "u-critical")).toEqual([
      ack("u-critical"),
      progress("u-critical", 25),
      progress("u-critical", 50),
      progress("u-critical", 75),
      failed(
        "u-critical",
        "1.0.0",
        "FLASH_FAILED",
        "task Completed (TaskStatus Critical): verifying 1.3.0 failed after the write; the previous image is still active",
      ),
    ]);
    expect(h.emulator.record(C.critical).pushes).toEqual({ BMC: 1 });
  });

  it("a BMC that reboots mid-update (connections dropped, tasks and sessions forgotten): the inventory decides; one push, a second session", async () => {
    await h.send(C.reboot, h.update("u-reboot", "1.3.0", image));
    expect(await h.eventsUntilResult(C.reboot, "u-reboot")).toEqual([
      ack("u-reboot"),
      progress("u-reboot", 25),
      ok("u-reboot", "1.3.0"),
    ]);
    expect(h.emulator.record(C.reboot)).toMatchObject({ reboots: 1, pushes: { BMC: 1 }, sessionsCreated: 2 });
  });

  it("a task monitor that answers 404 (the task ended and was forgotten): the inventory decides", async () => {
    await h.send(C.vanishing, h.update("u-vanish", "1.3.0", image));
    expect(await h.eventsUntilResult(C.vanishing, "u-vanish")).toEqual([
      ack("u-vanish"),
      progress("u-vanish", 25),
      ok("u-vanish", "1.3.0"),
    ]);
    expect(h.emulator.record(C.vanishing).pushes).toEqual({ BMC: 1 });
  });

  it("a task that stops moving → FLASH_TIMEOUT after the no-progress timeout, with the task's state", async () => {
    await h.send(C.hang, h.update("u-hang", "1.3.0", image));
    expect(await h.eventsUntilResult(C.hang, "u-hang")).toEqual([
      ack("u-hang"),
      progress("u-hang", 25),
      failed(
        "u-hang",
        "1.0.0",
        "FLASH_TIMEOUT",
        "no progress for 300 ms (last at 25%): task Running (TaskStatus OK)",
      ),
    ]);
  });

  it("a BMC that answers 503 busy: the push is retried after Retry-After and the update goes through", async () => {
    await h.send(C.busy, h.update("u-busy", "1.3.0", image));
    expect(await h.eventsUntilResult(C.busy, "u-busy")).toEqual([
      ack("u-busy"),
      progress("u-busy", 25),
      progress("u-busy", 50),
      progress("u-busy", 75),
      ok("u-busy", "1.3.0"),
    ]);
    expect(h.emulator.record(C.busy)).toMatchObject({ busyRejections: 2, pushes: { BMC: 1 } });
  });

  it("sub-targets go to Targets: only those members are flashed, and the result names them (v2)", async () => {
    await h.send(C.subTargets, h.update("u-sub", "1.3.0", image, { subTargets: ["bios"] }));
    expect(await h.eventsUntilResult(C.subTargets, "u-sub")).toEqual([
      ack("u-sub"),
      progress("u-sub", 25),
      progress("u-sub", 50),
      progress("u-sub", 75),
      { v: 2, type: "result", requestId: "u-sub", ok: true, version: "1.3.0", subTargets: ["bios"] },
    ]);
    expect(h.emulator.record(C.subTargets).pushes).toEqual({ BIOS: 1 });
    expect([h.emulator.versionOf(C.subTargets, "BIOS"), h.emulator.versionOf(C.subTargets, "BMC")]).toEqual([
      "1.3.0",
      "1.0.0",
    ]);
  });
});

describe("bmc agent: other update methods", () => {
  it("SimpleUpdate (no multipart push): the BMC pulls the image from the agent's own URL over HTTP, apply time explicit", async () => {
    await h.send(C.simple, h.update("u-simple", "1.3.0", image));
    expect(await h.eventsUntilResult(C.simple, "u-simple")).toEqual([
      ack("u-simple"),
      progress("u-simple", 25),
      progress("u-simple", 50),
      progress("u-simple", 75),
      ok("u-simple", "1.3.0"),
    ]);
    expect(h.emulator.record(C.simple)).toMatchObject({
      pushesByMethod: { simple: 1 },
      pushes: { BMC: 1 },
      applyTimes: ["Immediate"],
      imageBytes: image.size,
    });
  });

  it("HttpPushUri only: the apply time is set on the UpdateService first, then the octets are pushed", async () => {
    await h.send(C.httpPush, h.update("u-push", "1.3.0", image));
    expect(await h.eventsUntilResult(C.httpPush, "u-push")).toEqual([
      ack("u-push"),
      progress("u-push", 25),
      progress("u-push", 50),
      progress("u-push", 75),
      ok("u-push", "1.3.0"),
    ]);
    expect(h.emulator.record(C.httpPush)).toMatchObject({
      pushesByMethod: { "http-push": 1 },
      applyTimes: ["Immediate"],
    });
  });
});

describe("bmc agent: idempotency by request id", () => {
  it("the same update again (same agent) re-sends the stored result, never a second push", async () => {
    await h.send(C.repeat, h.update("u-repeat", "1.3.0", image));
    await h.eventsUntilResult(C.repeat, "u-repeat");
    await h.send(C.repeat, h.update("u-repeat", "1.3.0", image));
    const events = await h.eventsUntilResult(C.repeat, "u-repeat", 2);
    expect(events.slice(-1)).toEqual([ok("u-repeat", "1.3.0")]);
    expect(h.emulator.record(C.repeat).pushes).toEqual({ BMC: 1 });
  });

  it("after a restart, a repeated update is answered from the journal: no push, no new session; the stopped agent logged out", async () => {
    const before = h.emulator.record(C.repeat);
    await h.restartAgent();
    expect(h.emulator.record(C.repeat).sessionsDeleted).toBe(before.sessionsDeleted + 1);
    await h.send(C.repeat, h.update("u-repeat", "1.3.0", image));
    const events = await h.eventsUntilResult(C.repeat, "u-repeat", 3);
    expect(events.slice(-1)).toEqual([ok("u-repeat", "1.3.0")]);
    expect(h.emulator.record(C.repeat)).toMatchObject({
      pushes: { BMC: 1 },
      sessionsCreated: before.sessionsCreated,
    });
  });

  it("an update an earlier run pushed but never finished is resumed from its recorded task monitor: ack, progress, result; no second push", async () => {
    // What an agent stopped mid-task leaves behind: the BMC's task running and the journal's
    // "pushed" entry with its monitor. Made here directly, so no race with a stopping agent.
    await h.stopAgent();
    const client = new RedfishClient({
      url: h.emulator.urlOf(C.resume),
      username: USERNAME,
      password: () => PASSWORD,
      tls: { caFile: h.certs.file("ca.crt") },
      allowBasicAuth: false,
      requestTimeoutMs: 5_000,
    });
    const file = join(h.stateDir, "pushed.bin");
    writeFileSync(file, h.images.bytesOf(image));
    const monitor = await client.push({
      method: "multipart",
      uri: "/redfish/v1/UpdateService/update-multipart",
      file: { path: file, size: image.size, sha256: image.sha256 },
      parameters: { "@Redfish.OperationApplyTime": "Immediate" },
    });
    await client.close();
    const journal = await FileJournal.open(h.stateDir);
    await journal.record({
      componentId: C.resume,
      requestId: "u-resume",
      phase: "pushed",
      targetVersion: "1.3.0",
      monitor,
    });
    await journal.close();

    await h.restartAgent();
    await h.send(C.resume, h.update("u-resume", "1.3.0", image));
    expect(await h.eventsUntilResult(C.resume, "u-resume")).toEqual([
      ack("u-resume"),
      progress("u-resume", 25),
      progress("u-resume", 50),
      progress("u-resume", 75),
      ok("u-resume", "1.3.0"),
    ]);
    expect(h.emulator.record(C.resume).pushes).toEqual({ BMC: 1 });
  });
});
