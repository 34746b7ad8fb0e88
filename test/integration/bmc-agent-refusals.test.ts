/**
 * The BMC agent against the Redfish emulator: what it refuses, and why, with the exact events a
 * child task receives, and the emulator's record proving nothing reached a BMC that should not
 * have (no push, no session); and a whole rack of 39 BMCs at once from one download.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatedBmcSpec } from "../../local/redfish-emulator.js";
import { until } from "../support/poll.js";
import {
  type AgentHarness,
  ack,
  failed,
  type ImageRef,
  startAgentHarness,
  TEST_TIMINGS,
} from "../support/redfish-agent.js";

const id = (n: number): string => `7c000000-0000-4000-8000-0000000002${String(n).padStart(2, "0")}`;
const C = {
  rejectSessions: id(1),
  basicFallback: id(2),
  notUpdateable: id(3),
  capped: id(4),
  hiddenCap: id(10),
  graceful: id(11),
  disabled: id(5),
  unverified: id(6),
  tampered: [id(7), id(8), id(9)],
};
const RACK = Array.from(
  { length: 39 },
  (_, i) => `7c000000-0000-4000-8000-0000000003${String(i).padStart(2, "0")}`,
);

let h: AgentHarness;
let image: ImageRef;

beforeAll(async () => {
  const bmcs: EmulatedBmcSpec[] = [
    { id: C.rejectSessions, behaviour: { rejectSessions: true } },
    { id: C.basicFallback, behaviour: { rejectSessions: true } },
    { id: C.notUpdateable, behaviour: { notUpdateable: true } },
    { id: C.capped, behaviour: { maxImageSizeBytes: 1000 } },
    { id: C.hiddenCap, behaviour: { maxImageSizeBytes: 1000, hideMaxImageSize: true } },
    { id: C.graceful, behaviour: { hang: true } },
    { id: C.disabled, behaviour: { updateServiceDisabled: true } },
    { id: C.unverified },
    ...C.tampered.map((t) => ({ id: t })),
    ...RACK.map((r) => ({ id: r })),
  ];
  h = await startAgentHarness(bmcs, {
    bmcConfig: { [C.basicFallback]: { allowBasicAuth: true } },
    // Long enough for the stopping test's held update (no other test here waits on either).
    agentConfig: { shutdownGraceMs: 30_000, timings: { ...TEST_TIMINGS, noProgressTimeoutMs: 60_000 } },
  });
  image = h.images.add("2.0.0");
});

afterAll(async () => {
  await h?.stop();
});

describe("bmc agent: sessions", () => {
  it("a BMC that refuses sessions: the query says not ready with the reason; the update fails AUTH_FAILED and pushes nothing", async () => {
    await h.send(C.rejectSessions, { v: 1, type: "query", requestId: "q-reject" });
    expect(await h.eventsUntilResult(C.rejectSessions, "q-reject")).toEqual([
      {
        v: 1,
        type: "status",
        requestId: "q-reject",
        version: "unknown",
        ready: false,
        reason: "the BMC refused a session for flow (401: session creation refused)",
      },
    ]);
    await h.send(C.rejectSessions, h.update("u-reject", "2.0.0", image));
    expect(await h.eventsUntilResult(C.rejectSessions, "u-reject")).toEqual([
      ack("u-reject"),
      failed(
        "u-reject",
        "unknown",
        "AUTH_FAILED",
        "the BMC refused a session for flow (401: session creation refused)",
      ),
    ]);
    expect(h.emulator.record(C.rejectSessions)).toMatchObject({
      sessionsCreated: 0,
      pushes: {},
      basicAuthRequests: 0,
    });
  });

  it("with allowBasicAuth, a BMC that refuses sessions is driven with Basic auth", async () => {
    await h.send(C.basicFallback, h.update("u-basic", "2.0.0", image));
    const events = await h.eventsUntilResult(C.basicFallback, "u-basic");
    expect(events.slice(-1)).toEqual([
      { v: 1, type: "result", requestId: "u-basic", ok: true, version: "2.0.0" },
    ]);
    const record = h.emulator.record(C.basicFallback);
    expect(record).toMatchObject({ sessionsCreated: 0, sessionsRefused: 1, pushes: { BMC: 1 } });
    expect(record.basicAuthRequests).toBeGreaterThan(0);
  });
});

describe("bmc agent: components that cannot be flashed", () => {
  it("Updateable false: not ready on query, NOT_UPDATEABLE on update, no push", async () => {
    await h.send(C.notUpdateable, { v: 1, type: "query", requestId: "q-nu" });
    expect(await h.eventsUntilResult(C.notUpdateable, "q-nu")).toEqual([
      {
        v: 1,
        type: "status",
        requestId: "q-nu",
        version: "1.0.0",
        ready: false,
        reason: "firmware BMC is not Updateable",
      },
    ]);
    await h.send(C.notUpdateable, h.update("u-nu", "2.0.0", image));
    expect(await h.eventsUntilResult(C.notUpdateable, "u-nu")).toEqual([
      ack("u-nu"),
      failed("u-nu", "1.0.0", "NOT_UPDATEABLE", "firmware BMC is not Updateable"),
    ]);
    expect(h.emulator.record(C.notUpdateable).pushes).toEqual({});
  });

  it("UpdateService disabled: not ready on query, UPDATE_SERVICE_DISABLED on update", async () => {
    await h.send(C.disabled, { v: 1, type: "query", requestId: "q-dis" });
    expect(await h.eventsUntilResult(C.disabled, "q-dis")).toEqual([
      {
        v: 1,
        type: "status",
        requestId: "q-dis",
        version: "1.0.0",
        ready: false,
        reason: "its UpdateService is disabled (ServiceEnabled false)",
      },
    ]);
    await h.send(C.disabled, h.update("u-dis", "2.0.0", image));
    expect(await h.eventsUntilResult(C.disabled, "u-dis")).toEqual([
      ack("u-dis"),
      failed(
        "u-dis",
        "1.0.0",
        "UPDATE_SERVICE_DISABLED",
        "its UpdateService is disabled (ServiceEnabled false)",
      ),
    ]);
  });

  it("an image over MaxImageSizeBytes is refused before a byte is pushed: IMAGE_TOO_LARGE", async () => {
    await h.send(C.capped, h.update("u-cap", "2.0.0", image));
    expect(await h.eventsUntilResult(C.capped, "u-cap")).toEqual([
      ack("u-cap"),
      failed(
        "u-cap",
        "1.0.0",
        "IMAGE_TOO_LARGE",
        "the image is 4096 bytes; the BMC takes at most 1000 (MaxImageSizeBytes)",
      ),
    ]);
    expect(h.emulator.record(C.capped)).toMatchObject({ pushes: {}, imageBytes: 0, tooLarge: 0 });
  });

  it("a BMC that caps the image without saying so answers 413: IMAGE_TOO_LARGE with its message", async () => {
    await h.send(C.hiddenCap, h.update("u-413", "2.0.0", image));
    expect(await h.eventsUntilResult(C.hiddenCap, "u-413")).toEqual([
      ack("u-413"),
      failed(
        "u-413",
        "1.0.0",
        "IMAGE_TOO_LARGE",
        "POST /redfish/v1/UpdateService/update-multipart answered 413: the image exceeds 1000 bytes",
      ),
    ]);
    expect(h.emulator.record(C.hiddenCap)).toMatchObject({ pushes: {}, tooLarge: 1 });
  });
});

describe("bmc agent: images", () => {
  it("an update without image.sha256 is refused IMAGE_UNVERIFIED; nothing is downloaded or pushed", async () => {
    const bare = h.images.add("2.0.1");
    const command = h.update("u-nosha", "2.0.1", bare);
    await h.send(C.unverified, { ...command, image: { uri: bare.uri } });
    expect(await h.eventsUntilResult(C.unverified, "u-nosha")).toEqual([
      ack("u-nosha"),
      failed(
        "u-nosha",
        "1.0.0",
        "IMAGE_UNVERIFIED",
        "the update carries no image.sha256; the agent flashes only verified images",
      ),
    ]);
    expect(h.images.getsOf(bare)).toBe(0);
    expect(h.emulator.record(C.unverified).pushes).toEqual({});
  });

  it("a digest mismatch fails every command for the image with IMAGE_DIGEST_MISMATCH after ONE download; no BMC receives a byte", async () => {
    const bad = h.images.add("2.0.2", { tampered: true });
    await Promise.all(C.tampered.map((c, i) => h.send(c, h.update(`u-bad-${i}`, "2.0.2", bad))));
    for (const [i, c] of C.tampered.entries()) {
      const events = await h.eventsUntilResult(c, `u-bad-${i}`);
      expect(events).toHaveLength(2);
      expect(events[0]).toEqual(ack(`u-bad-${i}`));
      expect(events[1]).toMatchObject({
        ok: false,
        version: "1.0.0",
        error: { code: "IMAGE_DIGEST_MISMATCH" },
      });
      expect((events[1] as { error: { message: string } }).error.message).toMatch(
        new RegExp(
          `^the image at http://127\\.0\\.0\\.1:\\d+/firmware/2\\.0\\.2-\\d+\\.bin\\?\\[redacted\\] is 4096 bytes with sha256 [0-9a-f]{64}; the command says sha256 ${bad.sha256}$`,
        ),
      );
      expect(h.emulator.record(c)).toMatchObject({ pushes: {}, imageBytes: 0 });
    }
    expect(h.images.getsOf(bad)).toBe(1);
  });
});

describe("bmc agent: a rack", () => {
  it("39 BMCs updated at once: one download, one session and one push each, every one reads the version back", async () => {
    const rackImage = h.images.add("3.0.0", { size: 256 * 1024 });
    await Promise.all(RACK.map((c, i) => h.send(c, h.update(`u-rack-${i}`, "3.0.0", rackImage))));
    for (const [i, c] of RACK.entries()) {
      const events = await h.eventsUntilResult(c, `u-rack-${i}`);
      expect(events.slice(-1)).toEqual([
        { v: 1, type: "result", requestId: `u-rack-${i}`, ok: true, version: "3.0.0" },
      ]);
      expect(h.emulator.record(c)).toMatchObject({
        sessionsCreated: 1,
        pushes: { BMC: 1 },
        imageBytes: rackImage.size,
      });
      expect(h.emulator.versionOf(c)).toBe("3.0.0");
    }
    expect(h.images.getsOf(rackImage)).toBe(1);
  });
});

describe("bmc agent: stopping", () => {
  it("stopped while an update runs, the agent lets it finish reporting (within shutdownGraceMs), then logs out", async () => {
    await h.send(C.graceful, h.update("u-grace", "2.0.0", image));
    // The BMC holds its task at 25 % until released: the update is certainly running at the stop.
    await until(
      "the first progress report",
      () => (h.events.get(C.graceful) ?? []).some((e) => e.type === "progress"),
      20_000,
    );
    const stopping = h.stopAgent();
    expect((h.events.get(C.graceful) ?? []).some((e) => e.type === "result")).toBe(false);
    h.emulator.setBehaviour(C.graceful, {});
    await stopping;
    const events = await h.eventsUntilResult(C.graceful, "u-grace");
    expect(events.slice(-1)).toEqual([
      { v: 1, type: "result", requestId: "u-grace", ok: true, version: "2.0.0" },
    ]);
    expect(h.emulator.record(C.graceful)).toMatchObject({
      pushes: { BMC: 1 },
      sessionsCreated: 1,
      sessionsDeleted: 1,
    });
  });
});

describe("bmc agent: logs", () => {
  it("no log line carries the BMC password or the presigned URL's signature", () => {
    const all = h.logs.join("\n");
    expect(all).not.toContain("s3cret-bmc-password");
    expect(all).not.toContain("X-Amz-Signature=secret");
  });
});
