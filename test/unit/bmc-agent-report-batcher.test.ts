/**
 * The agent's reports, one message per rack per moment (src/app/bmc-agent/report-batcher.ts), on
 * an injected clock whose sleeps end only when the test says: what is held, when it leaves, how
 * a batch is split, in which order messages go, and what a failed publish does.
 */
import { describe, expect, it } from "vitest";
import { ReportBatcher } from "../../src/app/bmc-agent/report-batcher.js";
import type { AgentClock } from "../../src/app/ports/bmc-agent.js";
import type { BmcEvent } from "../../src/domain/bmc-protocol.js";
import { readRackReports } from "../../src/domain/bmc-rack-reports.js";

/** A clock whose sleeps wait until `release()` ends them (oldest first), recording their lengths. */
function heldClock() {
  const sleeps: { ms: number; end: () => void }[] = [];
  const clock: AgentClock = {
    now: () => 0,
    sleep: (ms) => new Promise<void>((resolve) => sleeps.push({ ms, end: resolve })),
  };
  return {
    clock,
    pending: () => sleeps.map((s) => s.ms),
    /** Ends the oldest sleep and lets what it started run. */
    async release() {
      sleeps.shift()?.end();
      await settle();
    },
  };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
const noLog = () => {};

/** A broker stand-in: every payload it was sent, decoded; `failNext` refuses that many. */
function broker() {
  const sent: { componentId: string; requestId: string; type: string }[][] = [];
  let failNext = 0;
  return {
    sent,
    failOnce: () => {
      failNext += 1;
    },
    send: async (payload: string) => {
      if (failNext > 0) {
        failNext -= 1;
        throw new Error("connection lost");
      }
      const read = readRackReports(JSON.parse(payload) as Record<string, unknown>);
      if (!read.ok) throw new Error(read.message);
      sent.push(
        read.value.map((item) => {
          if (!item.ok) throw new Error(item.message);
          return {
            componentId: item.value.componentId,
            requestId: item.value.event.requestId,
            type: item.value.event.type,
          };
        }),
      );
    },
  };
}

const ack = (requestId: string): BmcEvent => ({ v: 1, type: "ack", requestId });
const result = (requestId: string): BmcEvent => ({
  v: 1,
  type: "result",
  requestId,
  ok: true,
  version: "2.0.0",
});

describe("the agent's report batcher: one message per rack per moment", () => {
  it("holds every event of the window (publish resolves at once: the worker goes on) and sends them as one message when it ends", async () => {
    const time = heldClock();
    const out = broker();
    const batcher = new ReportBatcher({ clock: time.clock, flushMs: 1_000, send: out.send, log: noLog });
    for (const c of ["c1", "c2", "c3"]) await batcher.publish(c, ack(`upd-${c}`));
    // One window for all three, of the configured length; nothing sent yet.
    expect(time.pending()).toEqual([1_000]);
    expect(batcher.stats()).toEqual({ messages: 0, events: 0, held: 3 });
    expect(out.sent).toEqual([]);
    await time.release();
    expect(out.sent).toEqual([
      [
        { componentId: "c1", requestId: "upd-c1", type: "ack" },
        { componentId: "c2", requestId: "upd-c2", type: "ack" },
        { componentId: "c3", requestId: "upd-c3", type: "ack" },
      ],
    ]);
    expect(batcher.stats()).toEqual({ messages: 1, events: 3, held: 0 });
  });

  it("the window is fixed from its first event: later events do not extend it, and the next event opens a new one", async () => {
    const time = heldClock();
    const out = broker();
    const batcher = new ReportBatcher({ clock: time.clock, flushMs: 1_000, send: out.send, log: noLog });
    await batcher.publish("c1", ack("upd-1"));
    await settle();
    await batcher.publish("c2", ack("upd-2"));
    await settle();
    expect(time.pending()).toEqual([1_000]);
    await time.release();
    expect(out.sent.map((m) => m.map((r) => r.componentId))).toEqual([["c1", "c2"]]);
    await batcher.publish("c1", result("upd-1"));
    expect(time.pending()).toEqual([1_000]);
    await time.release();
    expect(out.sent.map((m) => m.map((r) => `${r.componentId}:${r.type}`))).toEqual([
      ["c1:ack", "c2:ack"],
      ["c1:result"],
    ]);
  });

  it("splits a window's events over messages within the size limit, in order", async () => {
    const time = heldClock();
    const out = broker();
    const batcher = new ReportBatcher({
      clock: time.clock,
      flushMs: 1_000,
      send: out.send,
      maxBytes: 300,
      log: noLog,
    });
    for (let i = 0; i < 12; i++) await batcher.publish(`c${i}`, ack(`upd-${i}`));
    await time.release();
    expect(out.sent.length).toBeGreaterThan(1);
    expect(out.sent.flat().map((r) => r.componentId)).toEqual(Array.from({ length: 12 }, (_, i) => `c${i}`));
    expect(batcher.stats()).toEqual({ messages: out.sent.length, events: 12, held: 0 });
  });

  it("a message that fails to go is logged with what it carried; the next message still goes, after it", async () => {
    const time = heldClock();
    const out = broker();
    const lines: string[] = [];
    const batcher = new ReportBatcher({
      clock: time.clock,
      flushMs: 1_000,
      send: out.send,
      maxBytes: 150,
      log: (line) => lines.push(line),
    });
    out.failOnce();
    for (const c of ["c1", "c2"]) await batcher.publish(c, ack(`upd-${c}`));
    await time.release();
    // 150 bytes hold one ack: c1's message failed, c2's went.
    expect(lines).toEqual(["bmc-agent: publishing the rack's reports (c1 ack) failed: connection lost"]);
    expect(out.sent.map((m) => m.map((r) => r.componentId))).toEqual([["c2"]]);
    expect(batcher.stats()).toEqual({ messages: 1, events: 1, held: 0 });
  });

  it("flush() sends what is held at once (the agent stopping) and the window's end then sends nothing again", async () => {
    const time = heldClock();
    const out = broker();
    const batcher = new ReportBatcher({ clock: time.clock, flushMs: 1_000, send: out.send, log: noLog });
    await batcher.publish("c1", result("upd-1"));
    await batcher.flush();
    expect(out.sent).toHaveLength(1);
    // The old window's timer ends: it belongs to a window already sent.
    await time.release();
    expect(out.sent).toHaveLength(1);
    // A new event opens a new window of its own.
    await batcher.publish("c2", ack("upd-2"));
    expect(time.pending()).toEqual([1_000]);
    await time.release();
    expect(out.sent.map((m) => m.map((r) => r.componentId))).toEqual([["c1"], ["c2"]]);
  });

  it("messages go one after another: a window's message waits for the one before it to be acknowledged", async () => {
    const time = heldClock();
    const order: string[] = [];
    let releaseFirst: () => void = () => {};
    let calls = 0;
    const batcher = new ReportBatcher({
      clock: time.clock,
      flushMs: 1_000,
      log: noLog,
      send: async (payload) => {
        calls += 1;
        const ids = (JSON.parse(payload) as { reports: { componentId: string }[] }).reports.map(
          (r) => r.componentId,
        );
        if (calls === 1) await new Promise<void>((resolve) => (releaseFirst = resolve));
        order.push(ids.join(","));
      },
    });
    await batcher.publish("c1", ack("upd-1"));
    await time.release();
    await batcher.publish("c1", result("upd-1"));
    await time.release();
    // The second window ended while the first message is still unacknowledged: nothing overtakes it.
    expect(calls).toBe(1);
    releaseFirst();
    await batcher.flush();
    expect(order).toEqual(["c1", "c1"]);
    expect(calls).toBe(2);
  });
});
