import { describe, expect, it } from "vitest";
import {
  BASIC_INGEST_PREFIX,
  BMC_CMD_TOPIC_FILTER,
  BMC_EVT_TOPIC_FILTER,
  BMC_TOPIC_LAYOUT_VERSION,
  basicIngestEvtTopic,
  basicIngestEvtTopicFilter,
  bmcAuthContext,
  bmcCmdTopic,
  bmcEvtTopic,
  isIotRuleName,
  LEGACY_BMC_EVT_TOPIC_FILTER,
  legacyBmcCmdTopic,
  legacyBmcEvtTopic,
  parseBmcTopic,
  rackCmdTopicFilter,
} from "../../src/domain/bmc-topics.js";

const RACK = "3f2a1b0c-0000-4000-8000-0000000000a1";
const COMPONENT = "0b9a3c1e-5d2f-8a41-9c3e-7f1a2b3c4d5e";
const at = { rackId: RACK, componentId: COMPONENT };

describe("bmc topics: rack-scoped (v4)", () => {
  it("cmd and evt topics name the rack, then the component", () => {
    expect(BMC_TOPIC_LAYOUT_VERSION).toBe(4);
    expect(bmcCmdTopic(at)).toBe(`flow/rack/${RACK}/bmc/${COMPONENT}/cmd`);
    expect(bmcEvtTopic(at)).toBe(`flow/rack/${RACK}/bmc/${COMPONENT}/evt`);
  });

  it("one filter covers a rack's commands; the fleet-wide filters cover every rack", () => {
    expect(rackCmdTopicFilter(RACK)).toBe(`flow/rack/${RACK}/bmc/+/cmd`);
    expect(BMC_CMD_TOPIC_FILTER).toBe("flow/rack/+/bmc/+/cmd");
    expect(BMC_EVT_TOPIC_FILTER).toBe("flow/rack/+/bmc/+/evt");
  });

  it("parseBmcTopic reads rack, component and channel back", () => {
    expect(parseBmcTopic(bmcCmdTopic(at))).toEqual({ rackId: RACK, componentId: COMPONENT, channel: "cmd" });
    expect(parseBmcTopic(bmcEvtTopic(at))).toEqual({ rackId: RACK, componentId: COMPONENT, channel: "evt" });
  });
});

describe("bmc topics: a rack's reports through Basic Ingest", () => {
  const RULE = "Flow_prod_rack_bmc_events";

  it("the event topic under $aws/rules/<rule>/, and the filter of every rack's", () => {
    expect(BASIC_INGEST_PREFIX).toBe("$aws/rules");
    expect(basicIngestEvtTopic(RULE, at)).toBe(`$aws/rules/${RULE}/flow/rack/${RACK}/bmc/${COMPONENT}/evt`);
    expect(basicIngestEvtTopicFilter(RULE)).toBe(`$aws/rules/${RULE}/flow/rack/+/bmc/+/evt`);
  });

  it("parseBmcTopic reads it as the plain event topic", () => {
    expect(parseBmcTopic(basicIngestEvtTopic(RULE, at))).toEqual({
      rackId: RACK,
      componentId: COMPONENT,
      channel: "evt",
    });
  });

  it("a rule name is 1 to 128 letters, digits and underscores, as IoT takes it", () => {
    for (const name of ["r", "Flow_dev_rack_bmc_events", "A9_", "x".repeat(128)])
      expect(isIotRuleName(name), name).toBe(true);
    for (const name of ["", "Flow-dev", "rule.name", "a/b", "+", "#", "$aws", "x".repeat(129)])
      expect(isIotRuleName(name), name).toBe(false);
  });

  it.each([
    // commands never travel through Basic Ingest, nor v1-v3 topics
    `$aws/rules/${RULE}/flow/rack/r/bmc/c/cmd`,
    `$aws/rules/${RULE}/flow/bmc/c/evt`,
    // no rule, an invalid rule name, a nested prefix, another $aws topic
    "$aws/rules/flow/rack/r/bmc/c/evt",
    "$aws/rules//flow/rack/r/bmc/c/evt",
    "$aws/rules/Flow-dev/flow/rack/r/bmc/c/evt",
    `$aws/rules/${RULE}/$aws/rules/${RULE}/flow/rack/r/bmc/c/evt`,
    "$aws/things/r/shadow/update",
    `$aws/rules/${RULE}`,
    `$aws/rules/${RULE}/flow/rack/+/bmc/c/evt`,
    `$aws/rules/${RULE}/flow/rack/r/bmc/c/evt/extra`,
  ])("parseBmcTopic(%s) → undefined", (topic) => {
    expect(parseBmcTopic(topic)).toBeUndefined();
  });
});

describe("bmc topics: per component (v1-v3)", () => {
  it("cmd and evt topics embed the component id only", () => {
    expect(legacyBmcCmdTopic(COMPONENT)).toBe(`flow/bmc/${COMPONENT}/cmd`);
    expect(legacyBmcEvtTopic(COMPONENT)).toBe(`flow/bmc/${COMPONENT}/evt`);
    expect(LEGACY_BMC_EVT_TOPIC_FILTER).toBe("flow/bmc/+/evt");
  });

  it("parseBmcTopic reads them back without a rack", () => {
    expect(parseBmcTopic(legacyBmcCmdTopic(COMPONENT))).toEqual({ componentId: COMPONENT, channel: "cmd" });
    expect(parseBmcTopic(legacyBmcEvtTopic(COMPONENT))).toEqual({ componentId: COMPONENT, channel: "evt" });
  });
});

describe("bmc topics: anything else is no BMC topic", () => {
  it.each([
    "flow/bmc/x/other",
    "flow/bmc//cmd",
    "flow/bmc/+/cmd",
    "flow/bmc/#/evt",
    "flow/bmc/x/cmd/extra",
    "other/bmc/x/cmd",
    "flow/bmx/x/cmd",
    "flow/rack/r/bmc/c/other",
    "flow/rack//bmc/c/cmd",
    "flow/rack/r/bmc//cmd",
    "flow/rack/+/bmc/c/cmd",
    "flow/rack/r/bmc/+/cmd",
    "flow/rack/r/bmc/#/evt",
    "flow/rack/r/bmx/c/cmd",
    "flow/rack/r/bmc/c/cmd/extra",
    "flow/rack/r/c/cmd",
  ])("parseBmcTopic(%s) → undefined", (topic) => {
    expect(parseBmcTopic(topic)).toBeUndefined();
  });
});

describe("bmc topics: the auth blob's encryption context", () => {
  it("names the rack, the component and the request", () => {
    expect(bmcAuthContext(at, "upd-1")).toBe(`bmc:${RACK}:${COMPONENT}:upd-1`);
  });
});
