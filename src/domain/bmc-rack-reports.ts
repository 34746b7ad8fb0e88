/**
 * A rack's reports in one message: what the rack's agent sends instead of one MQTT message per
 * event, on its rack's own topic (`flow/rack/<rackId>/reports`, bmc-topics.ts). Every event a
 * rack's BMCs produce within the agent's flush window travels together, each named by its
 * component:
 *
 *   {"v":5,"type":"reports","reports":[
 *     {"componentId":"7c1e…","v":1,"type":"ack","requestId":"upd-…"},
 *     {"componentId":"9d02…","v":1,"type":"progress","requestId":"upd-…","percent":25}]}
 *
 * Each element is the event exactly as it is encoded alone (bmc-protocol.ts, its own `v`) with
 * `componentId` first; the envelope is `v: 5`, which an older receiver refuses (an unsupported
 * version) rather than misreads. A component's events keep their order within a message, and the
 * agent sends a rack's messages one after another, so they keep it across messages too.
 *
 * A message stays under AWS IoT Core's size limit: more events than fit are split over several
 * messages, in order (`encodeRackReports`).
 */
import { type BmcEvent, encodeBmcMessage } from "./bmc-protocol.js";
import { type DecodeProblem, type DecodeResult, decodeBmcEvent } from "./bmc-protocol-decode.js";

/** The version of the batch envelope (its events keep their own). */
export const RACK_REPORTS_VERSION = 5 as const;
export const RACK_REPORTS_TYPE = "reports" as const;

/** AWS IoT Core's message size limit: a batch is split to stay within it. */
export const MAX_RACK_REPORTS_BYTES = 128 * 1024;

/** One component's event in a rack's batch. */
export interface RackReport {
  componentId: string;
  event: BmcEvent;
}

const utf8 = new TextEncoder();
const bytes = (text: string): number => utf8.encode(text).byteLength;

const HEAD = `{"v":${RACK_REPORTS_VERSION},"type":"${RACK_REPORTS_TYPE}","reports":[`;
const TAIL = "]}";

/** One element: the event's own encoding with `componentId` in front. */
function element(report: RackReport): string {
  return `{"componentId":${JSON.stringify(report.componentId)},${encodeBmcMessage(report.event).slice(1)}`;
}

/**
 * The JSON texts that carry `reports`, in order, each at most `maxBytes` (UTF-8): as many
 * consecutive reports per message as fit. A report too large to fit even alone gets a message of
 * its own (which the broker refuses as it would refuse the event alone). With each message, how
 * many reports it carries (the next that many of `reports`).
 */
export function encodeRackReports(
  reports: readonly RackReport[],
  maxBytes = MAX_RACK_REPORTS_BYTES,
): { payload: string; count: number }[] {
  const out: { payload: string; count: number }[] = [];
  const frame = bytes(HEAD) + bytes(TAIL);
  let parts: string[] = [];
  let size = frame;
  for (const report of reports) {
    const text = element(report);
    // A comma before every element but the first.
    const adds = bytes(text) + (parts.length > 0 ? 1 : 0);
    if (parts.length > 0 && size + adds > maxBytes) {
      out.push({ payload: HEAD + parts.join(",") + TAIL, count: parts.length });
      parts = [];
      size = frame;
    }
    size += bytes(text) + (parts.length > 0 ? 1 : 0);
    parts.push(text);
  }
  if (parts.length > 0) out.push({ payload: HEAD + parts.join(",") + TAIL, count: parts.length });
  return out;
}

/** Whether a parsed message is a rack's batch (has the envelope's type), to be read by `readRackReports`. */
export function isRackReports(raw: Record<string, unknown>): boolean {
  return raw.type === RACK_REPORTS_TYPE;
}

/**
 * A rack's batch, parsed: the envelope checked (version, type, a non-empty `reports` list), and each
 * element decoded on its own, so one bad element costs that element only: `{ ok: false }` names its
 * problems (`reports[3].componentId: missing required field`). Fields the envelope does not know
 * (the IoT rule's `rackId`) are ignored.
 */
export function readRackReports(raw: Record<string, unknown>): DecodeResult<DecodeResult<RackReport>[]> {
  if (raw.v !== RACK_REPORTS_VERSION) {
    const rule =
      typeof raw.v === "number"
        ? `unsupported protocol version ${raw.v} (a rack's reports are version ${RACK_REPORTS_VERSION})`
        : `must be the number ${RACK_REPORTS_VERSION} (got ${raw.v === undefined ? "nothing" : typeof raw.v})`;
    return failure([
      { code: raw.v === undefined ? "MISSING_FIELD" : "UNSUPPORTED_VERSION", path: "v", rule },
    ]);
  }
  if (raw.type !== RACK_REPORTS_TYPE) {
    return failure([
      {
        code: "UNKNOWN_TYPE",
        path: "type",
        rule: `must be ${RACK_REPORTS_TYPE} (got ${JSON.stringify(raw.type)})`,
      },
    ]);
  }
  const list = raw.reports;
  if (!Array.isArray(list) || list.length === 0) {
    return failure([{ code: "INVALID_VALUE", path: "reports", rule: "must be a non-empty array" }]);
  }
  return { ok: true, value: list.map((item, i) => readElement(item, `reports[${i}]`)) };
}

function readElement(item: unknown, at: string): DecodeResult<RackReport> {
  if (typeof item !== "object" || item === null || Array.isArray(item)) {
    return failure([{ code: "NOT_AN_OBJECT", path: at, rule: "must be a JSON object" }]);
  }
  const { componentId, ...event } = item as Record<string, unknown>;
  if (componentId === undefined) {
    return failure([{ code: "MISSING_FIELD", path: `${at}.componentId`, rule: "missing required field" }]);
  }
  if (typeof componentId !== "string" || componentId === "") {
    return failure([
      { code: "INVALID_VALUE", path: `${at}.componentId`, rule: "must be a non-empty string" },
    ]);
  }
  const decoded = decodeBmcEvent(JSON.stringify(event));
  if (!decoded.ok) {
    return failure(decoded.problems.map((p) => ({ ...p, path: `${at}.${p.path}` })));
  }
  return { ok: true, value: { componentId, event: decoded.value } };
}

function failure(problems: DecodeProblem[]): DecodeResult<never> {
  return { ok: false, problems, message: problems.map((p) => `${p.path}: ${p.rule}`).join("; ") };
}
