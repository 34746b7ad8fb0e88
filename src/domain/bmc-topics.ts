/**
 * Where BMC protocol messages travel: the MQTT topics (docs/bmc-protocol.md, "Topics").
 *
 * v4 (rack-scoped, what the product sends): every topic lives under its rack,
 *   flow/rack/{rackId}/bmc/{componentId}/cmd   child task → BMC
 *   flow/rack/{rackId}/bmc/{componentId}/evt   BMC → child task
 * so one IoT policy with the variable `${iot:Connection.Thing.ThingName}` in place of the rack id
 * covers every rack's agent (thing name = rack id): an agent may use its own rack's topics and no
 * other's, whatever BMCs the rack holds.
 *
 * v1–v3 (per component, kept for BMCs that still listen there):
 *   flow/bmc/{componentId}/cmd, flow/bmc/{componentId}/evt
 * The child task publishes there too only when its deployment says so (legacy topics).
 *
 * Basic Ingest (reports only): a BMC's reports may instead go to
 *   $aws/rules/{ruleName}/flow/rack/{rackId}/bmc/{componentId}/evt
 * which AWS IoT Core hands straight to the named rule, skipping the message broker (no messaging
 * charge; nobody can subscribe to such a topic). The rule's SQL is the same: IoT does not count the
 * `$aws/rules/{ruleName}` prefix in `topic(N)`, so `topic(3)` is still the rack.
 *
 * A rack's batched reports (many components' events in one message, bmc-rack-reports.ts):
 *   flow/rack/{rackId}/reports                          agent → child task (the broker)
 *   $aws/rules/{ruleName}/flow/rack/{rackId}/reports    the same through Basic Ingest
 * Only the rack's agent may publish there (its policy); `topic(3)` is the rack either way.
 *
 * Ids are lowercase UUIDs: never empty, never an MQTT wildcard, never containing a `/`.
 */

/** Which BMC a message is for: the rack whose agent serves it, and its component. */
export interface BmcAddress {
  rackId: string;
  componentId: string;
}

export type BmcChannel = "cmd" | "evt";

/** The protocol version that introduced the rack-scoped layout (message bodies kept v1–v3's). */
export const BMC_TOPIC_LAYOUT_VERSION = 4 as const;

export const RACK_TOPIC_ROOT = "flow/rack";
/** The v1–v3 root: one topic pair per component, no rack. */
export const LEGACY_BMC_TOPIC_ROOT = "flow/bmc";

/** Every rack's commands (what the simulated fleet subscribes to). */
export const BMC_CMD_TOPIC_FILTER = `${RACK_TOPIC_ROOT}/+/bmc/+/cmd`;
/** Every rack's reports (what the IoT rule that feeds the waiting executions selects). */
export const BMC_EVT_TOPIC_FILTER = `${RACK_TOPIC_ROOT}/+/bmc/+/evt`;
/** Every v1–v3 component's reports (the IoT rule kept for BMCs on the per-component topics). */
export const LEGACY_BMC_EVT_TOPIC_FILTER = `${LEGACY_BMC_TOPIC_ROOT}/+/evt`;

/** Every rack's batched reports (what the rack reports' rule selects through the broker). */
export const RACK_REPORTS_TOPIC_FILTER = `${RACK_TOPIC_ROOT}/+/reports`;

/** The topic prefix that sends a message straight to an IoT rule (AWS IoT Basic Ingest). */
export const BASIC_INGEST_PREFIX = "$aws/rules";

/** An AWS IoT rule name as IoT accepts it: 1 to 128 letters, digits and underscores. */
export function isIotRuleName(name: string): boolean {
  return /^[A-Za-z0-9_]{1,128}$/.test(name);
}

/** A BMC's report topic through Basic Ingest: `$aws/rules/<ruleName>/flow/rack/<rack>/bmc/<component>/evt`. */
export function basicIngestEvtTopic(ruleName: string, to: BmcAddress): string {
  return `${BASIC_INGEST_PREFIX}/${ruleName}/${bmcEvtTopic(to)}`;
}

/**
 * Every rack's reports sent to `ruleName` through Basic Ingest (what the local stack's rule
 * stand-in subscribes to: an MQTT wildcard never matches a topic starting with `$`).
 */
export function basicIngestEvtTopicFilter(ruleName: string): string {
  return `${BASIC_INGEST_PREFIX}/${ruleName}/${BMC_EVT_TOPIC_FILTER}`;
}

/** A rack's batched reports: `flow/rack/<rack>/reports`. */
export function rackReportsTopic(rackId: string): string {
  return `${RACK_TOPIC_ROOT}/${rackId}/reports`;
}

/** A rack's batched reports through Basic Ingest: `$aws/rules/<ruleName>/flow/rack/<rack>/reports`. */
export function basicIngestRackReportsTopic(ruleName: string, rackId: string): string {
  return `${BASIC_INGEST_PREFIX}/${ruleName}/${rackReportsTopic(rackId)}`;
}

/** Every rack's batched reports sent to `ruleName` through Basic Ingest (the local rule stand-in). */
export function basicIngestRackReportsTopicFilter(ruleName: string): string {
  return `${BASIC_INGEST_PREFIX}/${ruleName}/${RACK_REPORTS_TOPIC_FILTER}`;
}

/**
 * The rack of a batched reports topic, plain or through Basic Ingest
 * (`"flow/rack/r1/reports"` → `"r1"`); anything else → undefined.
 */
export function parseRackReportsTopic(topic: string): string | undefined {
  let plain = topic;
  if (topic.startsWith(`${BASIC_INGEST_PREFIX}/`)) {
    const rest = topic.slice(BASIC_INGEST_PREFIX.length + 1);
    const slash = rest.indexOf("/");
    if (slash < 0 || !isIotRuleName(rest.slice(0, slash))) return undefined;
    plain = rest.slice(slash + 1);
  }
  const parts = plain.split("/");
  const ok = parts.length === 4 && parts[0] === "flow" && parts[1] === "rack" && parts[3] === "reports";
  return ok && isId(parts[2] as string) ? parts[2] : undefined;
}

export function bmcCmdTopic(to: BmcAddress): string {
  return `${RACK_TOPIC_ROOT}/${to.rackId}/bmc/${to.componentId}/cmd`;
}

export function bmcEvtTopic(to: BmcAddress): string {
  return `${RACK_TOPIC_ROOT}/${to.rackId}/bmc/${to.componentId}/evt`;
}

/** The one subscription a rack's agent makes: every command for its rack's BMCs. */
export function rackCmdTopicFilter(rackId: string): string {
  return `${RACK_TOPIC_ROOT}/${rackId}/bmc/+/cmd`;
}

export function legacyBmcCmdTopic(componentId: string): string {
  return `${LEGACY_BMC_TOPIC_ROOT}/${componentId}/cmd`;
}

export function legacyBmcEvtTopic(componentId: string): string {
  return `${LEGACY_BMC_TOPIC_ROOT}/${componentId}/evt`;
}

/**
 * The encryption context an update command's `auth` blob is sealed under: the rack, the component
 * and the request, `bmc:<rackId>:<componentId>:<requestId>`. A blob opens for that command only, and
 * a rack's agent may open only its own rack's (its role's KMS condition is `bmc:<its rack>:*`).
 */
export function bmcAuthContext(to: BmcAddress, requestId: string): string {
  return `bmc:${to.rackId}:${to.componentId}:${requestId}`;
}

/** A topic read back: the component, the channel, and the rack (absent on a v1–v3 topic). */
export interface BmcTopic {
  componentId: string;
  channel: BmcChannel;
  rackId?: string;
}

/**
 * `"flow/rack/r1/bmc/c1/evt"` → `{ rackId: "r1", componentId: "c1", channel: "evt" }`;
 * `"flow/bmc/c1/cmd"` → `{ componentId: "c1", channel: "cmd" }`; a rack's report through Basic
 * Ingest, `"$aws/rules/<rule>/flow/rack/r1/bmc/c1/evt"`, reads as the plain one (commands never
 * travel that way); anything else → undefined.
 */
export function parseBmcTopic(topic: string): BmcTopic | undefined {
  if (topic.startsWith(`${BASIC_INGEST_PREFIX}/`)) {
    const rest = topic.slice(BASIC_INGEST_PREFIX.length + 1);
    const slash = rest.indexOf("/");
    if (slash < 0 || !isIotRuleName(rest.slice(0, slash))) return undefined;
    const plain = parsePlainBmcTopic(rest.slice(slash + 1));
    return plain?.rackId !== undefined && plain.channel === "evt" ? plain : undefined;
  }
  return parsePlainBmcTopic(topic);
}

function parsePlainBmcTopic(topic: string): BmcTopic | undefined {
  const parts = topic.split("/");
  if (parts.length === 6 && parts[0] === "flow" && parts[1] === "rack" && parts[3] === "bmc") {
    const [, , rackId, , componentId, channel] = parts as [string, string, string, string, string, string];
    if (!isId(rackId) || !isId(componentId) || !isChannel(channel)) return undefined;
    return { rackId, componentId, channel };
  }
  if (parts.length === 4 && parts[0] === "flow" && parts[1] === "bmc") {
    const [, , componentId, channel] = parts as [string, string, string, string];
    if (!isId(componentId) || !isChannel(channel)) return undefined;
    return { componentId, channel };
  }
  return undefined;
}

const isId = (s: string): boolean => s !== "" && s !== "+" && s !== "#";
const isChannel = (s: string): s is BmcChannel => s === "cmd" || s === "evt";
