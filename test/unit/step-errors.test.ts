/** Step errors: stable names (the state machine matches on them) and the text RecordFailure keeps. */
import { describe, expect, it } from "vitest";
import {
  causeText,
  componentLabel,
  rackConflictMessage,
  STEP_ERROR_NAMES,
  StepError,
} from "../../src/domain/step-errors.js";

describe("StepError", () => {
  it("its name is the step error name, which Step Functions matches Retry and Catch on", () => {
    const error = new StepError("BmcTimeout", "component c (COMPUTE): hung");
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("BmcTimeout");
    expect(error.stepErrorName).toBe("BmcTimeout");
    expect(error.message).toBe("component c (COMPUTE): hung");
  });

  it("RecordFailure keeps a step error's message as it is; any other error gets its name in front", () => {
    for (const name of STEP_ERROR_NAMES) expect(causeText({ Error: name, Cause: "why" })).toBe("why");
    expect(causeText({ Error: "BmcPublishError", Cause: "why" })).toBe("BmcPublishError: why");
  });
});

describe("messages", () => {
  it("a busy rack reads as the reference's conflict text", () => {
    expect(rackConflictMessage("r-1")).toBe(
      "failed to create task for required rack r-1: rack r-1 already has a conflicting task: rack conflict",
    );
  });

  it("a component is named by id and type", () => {
    expect(componentLabel("c-1", "NVSWITCH")).toBe("component c-1 (NVSWITCH)");
  });
});

describe("causeText", () => {
  it("reads the Lambda error document AWS puts in Cause, keeping our own messages as they are", () => {
    const cause = JSON.stringify({
      errorType: "BmcTimeout",
      errorMessage: "component c (COMPUTE): hung",
      trace: ["x"],
    });
    expect(causeText({ Error: "BmcTimeout", Cause: cause })).toBe("component c (COMPUTE): hung");
  });
  it("reads the plain message aws-local-stepfunctions puts there", () => {
    expect(causeText({ Error: "VersionMismatch", Cause: "component c (NVSWITCH): runs 1" })).toBe(
      "component c (NVSWITCH): runs 1",
    );
  });
  it("prefixes foreign errors with their name, and copes with missing parts", () => {
    expect(causeText({ Error: "States.Timeout", Cause: "Task timed out" })).toBe(
      "States.Timeout: Task timed out",
    );
    expect(causeText({ Error: "TypeError", Cause: '{"errorMessage":"x is undefined"}' })).toBe(
      "TypeError: x is undefined",
    );
    expect(causeText({ Error: "Lambda.Unknown" })).toBe("Lambda.Unknown");
    expect(causeText({ Error: "X", Cause: "{not json" })).toBe("X: {not json");
    expect(causeText(undefined)).toBe("unknown error");
  });
  it("a non-string Cause is shown as JSON; a null one leaves the name alone", () => {
    expect(causeText({ Error: "States.DataLimitExceeded", Cause: { size: 300_000 } })).toBe(
      'States.DataLimitExceeded: {"size":300000}',
    );
    expect(causeText({ Error: "X", Cause: null })).toBe("X");
    expect(causeText({ Cause: "boom" })).toBe("Error: boom");
  });
});
