/** The bmc-result Lambda's events told apart: execution status changes (EventBridge) and BMC reports (IoT). */
import { describe, expect, it } from "vitest";
import { parseBmcResultEvent } from "../../src/adapters/lambda/bmc-result-event.js";

const statusChange = (detail: Record<string, unknown>) => ({
  version: "0",
  source: "aws.states",
  "detail-type": "Step Functions Execution Status Change",
  detail: { executionArn: "arn:aws:states:…:execution:child:t1", name: "t1", ...detail },
});

describe("bmc-result events", () => {
  it.each(["SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"])(
    "an execution %s is an ending of task `name`",
    (status) => {
      expect(parseBmcResultEvent(statusChange({ status, error: null, cause: null }))).toEqual({
        kind: "execution-ending",
        ending: { taskId: "t1", status },
      });
    },
  );

  it("an ending keeps the error and cause EventBridge sends, and drops null or empty ones", () => {
    expect(
      parseBmcResultEvent(statusChange({ status: "FAILED", error: "States.Runtime", cause: "bad path" })),
    ).toEqual({
      kind: "execution-ending",
      ending: { taskId: "t1", status: "FAILED", error: "States.Runtime", cause: "bad path" },
    });
    expect(parseBmcResultEvent(statusChange({ status: "ABORTED", error: "", cause: null }))).toEqual({
      kind: "execution-ending",
      ending: { taskId: "t1", status: "ABORTED" },
    });
  });

  it("a status change that is not an ending is one to ignore", () => {
    expect(parseBmcResultEvent(statusChange({ status: "RUNNING" }))).toEqual({
      kind: "execution-status",
      status: "RUNNING",
    });
  });

  it("any other object is a BMC report, passed on whole", () => {
    const report = { v: 1, type: "ack", requestId: "upd-1", componentId: "c-1" };
    expect(parseBmcResultEvent(report)).toEqual({ kind: "bmc-report", message: report });
  });

  it.each([null, undefined, "text", 7, [1, 2]])("%o is invalid", (event) => {
    expect(parseBmcResultEvent(event)).toEqual({ kind: "invalid" });
  });
});
