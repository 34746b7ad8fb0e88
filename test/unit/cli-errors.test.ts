/**
 * flowctl's NOT_FOUND lines: each kind of thing the service may not find gets the command that
 * lists it. The messages are the service's own (made by the code that throws them), so a reworded
 * message that loses its hint fails here.
 */

import type { ServiceError } from "@grpc/grpc-js";
import { Metadata, status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { describeServiceError } from "../../cli/errors.js";
import { taskNotFound } from "../../src/app/child-task/task-service.js";
import { runNotFound } from "../../src/app/runs.js";
import type { TargetSpec } from "../../src/domain/model.js";
import { resolveTargetSpec } from "../../src/domain/planner.js";

function notFound(details: string): ServiceError {
  return Object.assign(new Error(`5 NOT_FOUND: ${details}`), {
    code: status.NOT_FOUND,
    details,
    metadata: new Metadata(),
  });
}

/** What the planner says about `spec` against an empty inventory. */
function plannerMessage(spec: TargetSpec): string {
  try {
    resolveTargetSpec(spec, []);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error("the planner found it");
}

const ID = "0a6f1a9e-0000-4000-8000-00000000beef";
const INVENTORY =
  "check the rack: `flowctl inventory list` shows each rack's ID, name, external ID and NVL domain";

describe("flowctl: the hint for each kind of NOT_FOUND", () => {
  it.each([
    ["a run", runNotFound(ID).message, "check the run ID: `flowctl run list` shows existing runs"],
    ["a task", taskNotFound(ID).message, "check the task ID: `flowctl task list` shows existing tasks"],
    [
      "a rack by external id",
      plannerMessage({
        kind: "racks",
        racks: [{ ref: { by: "externalId", externalId: "EXT-9" }, componentTypes: [] }],
      }),
      INVENTORY,
    ],
    [
      "a rack by id",
      plannerMessage({ kind: "racks", racks: [{ ref: { by: "id", id: ID }, componentTypes: [] }] }),
      INVENTORY,
    ],
    [
      "a rack by name",
      plannerMessage({ kind: "racks", racks: [{ ref: { by: "name", name: "rack-9" }, componentTypes: [] }] }),
      INVENTORY,
    ],
    [
      "an NVLink domain",
      plannerMessage({
        kind: "nvlDomains",
        domains: [{ ref: { by: "name", name: "nvl-9" }, componentTypes: [] }],
      }),
      INVENTORY,
    ],
    [
      "a component by id",
      plannerMessage({ kind: "components", components: [{ by: "id", id: ID }] }),
      "check the component: `flowctl inventory list -o yaml` shows each rack's components with their IDs and external IDs",
    ],
    [
      "a component by external id",
      plannerMessage({
        kind: "components",
        components: [{ by: "external", type: "COMPUTE", externalId: "SN-9" }],
      }),
      "check the component: `flowctl inventory list -o yaml` shows each rack's components with their IDs and external IDs",
    ],
    [
      "anything else",
      "something not found",
      "check the ID: `flowctl run list`, `flowctl task list` and `flowctl inventory list` show existing ones",
    ],
  ])("%s", (_, details, hint) => {
    expect(describeServiceError(notFound(details), { endpoint: "127.0.0.1:50051" })).toEqual([
      `error: ${details} (NOT_FOUND)`,
      `  ${hint}`,
    ]);
  });
});
