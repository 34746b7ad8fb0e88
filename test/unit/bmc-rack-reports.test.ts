/**
 * A rack's reports in one message (src/domain/bmc-rack-reports.ts): the encoding, its split under
 * IoT Core's size limit, reading it back element by element, and its topics (bmc-topics.ts).
 */
import { describe, expect, it } from "vitest";
import type { BmcEvent } from "../../src/domain/bmc-protocol.js";
import {
  encodeRackReports,
  isRackReports,
  MAX_RACK_REPORTS_BYTES,
  type RackReport,
  readRackReports,
} from "../../src/domain/bmc-rack-reports.js";
import {
  basicIngestRackReportsTopic,
  basicIngestRackReportsTopicFilter,
  parseBmcTopic,
  parseRackReportsTopic,
  RACK_REPORTS_TOPIC_FILTER,
  rackReportsTopic,
} from "../../src/domain/bmc-topics.js";

const ack = (requestId: string): BmcEvent => ({ v: 1, type: "ack", requestId });
const progress = (requestId: string, percent: number): BmcEvent => ({
  v: 1,
  type: "progress",
  requestId,
  percent,
});
const staged: BmcEvent = {
  v: 3,
  type: "result",
  requestId: "upd-3",
  ok: true,
  version: "1.2.0",
  pendingVersion: "1.3.0",
};

const read = (payload: string) => {
  const parsed = readRackReports(JSON.parse(payload) as Record<string, unknown>);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.value.map((item) => {
    if (!item.ok) throw new Error(item.message);
    return item.value;
  });
};

describe("a rack's reports: one message, each event as it is encoded alone with its component", () => {
  it("encodes the envelope (v 5, type reports) and each event with componentId first, and reads them back in order", () => {
    const reports: RackReport[] = [
      { componentId: "c1", event: ack("upd-1") },
      { componentId: "c2", event: progress("upd-2", 25) },
      { componentId: "c3", event: staged },
    ];
    const [message, ...more] = encodeRackReports(reports);
    expect(more).toEqual([]);
    expect(message!.count).toBe(3);
    expect(message!.payload).toBe(
      '{"v":5,"type":"reports","reports":[' +
        '{"componentId":"c1","v":1,"type":"ack","requestId":"upd-1"},' +
        '{"componentId":"c2","v":1,"type":"progress","requestId":"upd-2","percent":25},' +
        '{"componentId":"c3","v":3,"type":"result","requestId":"upd-3","ok":true,"version":"1.2.0","pendingVersion":"1.3.0"}]}',
    );
    expect(isRackReports(JSON.parse(message!.payload))).toBe(true);
    expect(read(message!.payload)).toEqual(reports);
  });

  it("splits into consecutive messages each within the limit, none empty, the order kept", () => {
    const reports: RackReport[] = Array.from({ length: 40 }, (_, i) => ({
      componentId: `c${i}`,
      event: progress(`upd-${i}`, i % 100),
    }));
    const limit = 400;
    const messages = encodeRackReports(reports, limit);
    expect(messages.length).toBeGreaterThan(1);
    for (const m of messages)
      expect(new TextEncoder().encode(m.payload).byteLength).toBeLessThanOrEqual(limit);
    expect(messages.reduce((n, m) => n + m.count, 0)).toBe(40);
    expect(messages.flatMap((m) => read(m.payload))).toEqual(reports);
    // The greedy split: each message but the last could not take the next report.
    const one = encodeRackReports(reports.slice(0, messages[0]!.count + 1), limit);
    expect(one).toHaveLength(2);
  });

  it("a rack's 351 reports of a default-rule rack fit IoT Core's 128 KB in one message", () => {
    const id = (n: number) => `7c1e${String(n).padStart(4, "0")}-0000-4000-8000-000000000000`;
    const request = (n: number) =>
      `upd-7a5c0000-0000-4000-8000-000000000001.u0p2.${String(n).padStart(12, "0")}`;
    const reports: RackReport[] = Array.from({ length: 351 }, (_, n) => ({
      componentId: id(n % 39),
      event: progress(request(n % 39), 50),
    }));
    const messages = encodeRackReports(reports);
    expect(messages.map((m) => m.count)).toEqual([351]);
    expect(new TextEncoder().encode(messages[0]!.payload).byteLength).toBeLessThan(MAX_RACK_REPORTS_BYTES);
  });

  it("a report too large for any message gets one of its own (the broker refuses it as it would alone)", () => {
    const big: BmcEvent = {
      v: 1,
      type: "result",
      requestId: "upd-9",
      ok: false,
      version: "1.0.0",
      error: { code: "FLASH_FAILED", message: "x".repeat(500) },
    };
    const messages = encodeRackReports(
      [
        { componentId: "c1", event: ack("upd-1") },
        { componentId: "c9", event: big },
        { componentId: "c2", event: ack("upd-2") },
      ],
      300,
    );
    expect(messages.map((m) => m.count)).toEqual([1, 1, 1]);
  });

  it("nothing to send is no message", () => {
    expect(encodeRackReports([])).toEqual([]);
  });

  it("refuses an envelope of another version, type or without reports, naming the field and the rule", () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ type: "reports", reports: [] }, "v: must be the number 5 (got nothing)"],
      [{ v: "5", type: "reports", reports: [{}] }, "v: must be the number 5 (got string)"],
      [
        { v: 1, type: "reports", reports: [{}] },
        "v: unsupported protocol version 1 (a rack's reports are version 5)",
      ],
      [{ v: 5, type: "ack", reports: [{}] }, 'type: must be reports (got "ack")'],
      [{ v: 5, type: "reports", reports: [] }, "reports: must be a non-empty array"],
      [{ v: 5, type: "reports", reports: {} }, "reports: must be a non-empty array"],
    ];
    for (const [raw, message] of cases) {
      const out = readRackReports(raw);
      expect(out.ok ? "ok" : out.message).toBe(message);
    }
  });

  it("reads each element on its own: a bad one names its place, the others still read", () => {
    const out = readRackReports({
      v: 5,
      type: "reports",
      rackId: "r1",
      reports: [
        { componentId: "c1", v: 1, type: "ack", requestId: "upd-1" },
        { v: 1, type: "ack", requestId: "upd-2" },
        { componentId: "c3", v: 1, type: "progress", requestId: "upd-3", percent: 101 },
        "ack",
        { componentId: "c5", v: 1, type: "update", requestId: "upd-5" },
        { componentId: "", v: 1, type: "ack", requestId: "upd-6" },
        { componentId: 7, v: 1, type: "ack", requestId: "upd-7" },
      ],
    });
    if (!out.ok) throw new Error(out.message);
    expect(out.value.map((item) => (item.ok ? item.value : item.message))).toEqual([
      { componentId: "c1", event: ack("upd-1") },
      "reports[1].componentId: missing required field",
      "reports[2].percent: must be an integer between 0 and 100 (got 101)",
      "reports[3]: must be a JSON object",
      'reports[4].type: must be one of ack, progress, result, status (got "update")',
      "reports[5].componentId: must be a non-empty string",
      "reports[6].componentId: must be a non-empty string",
    ]);
  });
});

describe("a rack's reports topic", () => {
  it("is flow/rack/<rack>/reports, plain or through Basic Ingest, and reads back as its rack only", () => {
    expect(rackReportsTopic("r1")).toBe("flow/rack/r1/reports");
    expect(RACK_REPORTS_TOPIC_FILTER).toBe("flow/rack/+/reports");
    expect(basicIngestRackReportsTopic("Flow_prod_rack_bmc_events", "r1")).toBe(
      "$aws/rules/Flow_prod_rack_bmc_events/flow/rack/r1/reports",
    );
    expect(basicIngestRackReportsTopicFilter("R")).toBe("$aws/rules/R/flow/rack/+/reports");
    expect(parseRackReportsTopic("flow/rack/r1/reports")).toBe("r1");
    expect(parseRackReportsTopic("$aws/rules/R_1/flow/rack/r1/reports")).toBe("r1");
    for (const other of [
      "flow/rack/+/reports",
      "flow/rack/r1/bmc/c1/evt",
      "flow/rack/r1/reports/x",
      "$aws/rules/bad-name/flow/rack/r1/reports",
      "flow/bmc/c1/evt",
    ]) {
      expect(parseRackReportsTopic(other)).toBeUndefined();
    }
    // Not a component's topic: the per-component parser does not take it.
    expect(parseBmcTopic("flow/rack/r1/reports")).toBeUndefined();
  });
});
