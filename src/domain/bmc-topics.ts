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
 * `"flow/bmc/c1/cmd"` → `{ componentId: "c1", channel: "cmd" }`; anything else → undefined.
 */
export function parseBmcTopic(topic: string): BmcTopic | undefined {
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
