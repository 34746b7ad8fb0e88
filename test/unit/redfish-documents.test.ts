/**
 * Reading Redfish documents (src/adapters/redfish/documents.ts) from fixtures in the shape of
 * DMTF's public-rackmount1 mockup and DSP2046 examples (test/fixtures/redfish/), flaws included,
 * and judging a task's end (src/app/bmc-agent/update-outcome.ts).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  errorText,
  parseActionInfo,
  parseCollection,
  parseServiceRoot,
  parseSoftwareInventory,
  parseTask,
  parseUpdateService,
  RedfishDocumentError,
} from "../../src/adapters/redfish/documents.js";
import { pickFirmwareMember } from "../../src/app/bmc-agent/bmc-link.js";
import { judgeEndedTask } from "../../src/app/bmc-agent/update-outcome.js";

const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(join(import.meta.dirname, "..", "fixtures", "redfish", name), "utf8"));

describe("redfish documents: the mockup's shapes", () => {
  it("service root: UpdateService, Links.Sessions, Tasks, Managers, Systems, RedfishVersion", () => {
    expect(parseServiceRoot(fixture("service-root.json"))).toEqual({
      redfishVersion: "1.15.0",
      updateService: "/redfish/v1/UpdateService",
      sessions: "/redfish/v1/SessionService/Sessions",
      managers: "/redfish/v1/Managers",
      systems: "/redfish/v1/Systems",
      tasks: "/redfish/v1/TaskService",
    });
  });

  it("UpdateService: HttpPushUri and SimpleUpdate with its ActionInfo, no multipart push", () => {
    expect(parseUpdateService(fixture("update-service.json"))).toEqual({
      uri: "/redfish/v1/UpdateService",
      enabled: true,
      pushBusy: false,
      firmwareInventory: "/redfish/v1/UpdateService/FirmwareInventory",
      httpPushUri: "/FWUpdate",
      simpleUpdate: {
        target: "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate",
        actionInfo: "/redfish/v1/UpdateService/SimpleUpdateActionInfo",
      },
    });
  });

  it("SimpleUpdate ActionInfo: parameters, which are required, TransferProtocol's allowable values", () => {
    expect(parseActionInfo(fixture("simple-update-action-info.json"))).toEqual([
      { name: "ImageURI", required: true },
      {
        name: "TransferProtocol",
        required: false,
        allowableValues: ["FTP", "SFTP", "HTTP", "HTTPS", "SCP", "TFTP"],
      },
      { name: "Username", required: false },
      { name: "Password", required: false },
    ]);
  });

  it("FirmwareInventory: the Members list counts, not Members@odata.count (the mockup says 2, lists 3)", () => {
    expect(parseCollection(fixture("firmware-inventory.json"))).toEqual({
      members: [
        "/redfish/v1/UpdateService/FirmwareInventory/BMC",
        "/redfish/v1/UpdateService/FirmwareInventory/SS",
        "/redfish/v1/UpdateService/FirmwareInventory/BIOS",
      ],
      declaredCount: 2,
    });
  });

  it("SoftwareInventory: free-form versions kept as they are, Updateable, RelatedItem", () => {
    expect(parseSoftwareInventory(fixture("firmware-bmc.json"))).toEqual({
      uri: "/redfish/v1/UpdateService/FirmwareInventory/BMC",
      id: "BMC",
      version: "1.45.455b66-rev4",
      updateable: true,
      relatedItems: ["/redfish/v1/Managers/BMC"],
      state: "Enabled",
    });
    expect(parseSoftwareInventory(fixture("firmware-bios.json")).version).toBe("P79 v1.45");
    expect(parseSoftwareInventory(fixture("firmware-ac-rot0.json"))).toMatchObject({
      id: "AC-RoT0",
      relatedItems: [],
    });
  });

  it("the component's member: the one related to the Manager by default, else by its Id in any case", () => {
    const members = ["firmware-ss.json", "firmware-bios.json", "firmware-bmc.json"].map((f) =>
      parseSoftwareInventory(fixture(f)),
    );
    expect(pickFirmwareMember(members, undefined).id).toBe("BMC");
    expect(pickFirmwareMember(members, "bios").id).toBe("BIOS");
    expect(() => pickFirmwareMember(members, "cpld")).toThrow(
      "the firmware inventory has no member cpld (members: SS, BIOS, BMC)",
    );
  });

  it("a Task (DSP2046 example): state, status, messages matched by name whatever the registry version", () => {
    expect(parseTask(fixture("task-completed-warning.json"))).toEqual({
      uri: "/redfish/v1/TaskService/Tasks/545",
      state: "Completed",
      status: "OK",
      messages: [
        {
          name: "PropertyNotWritable",
          message: "The property SKU is a read only property and cannot be assigned a value",
          severity: "Warning",
        },
      ],
    });
  });
});

describe("redfish documents: refusals", () => {
  it("a member without @odata.id, a task without a known TaskState, a member without Version", () => {
    expect(() => parseCollection({ Members: [{}] }, "FirmwareInventory")).toThrow(
      new RedfishDocumentError("FirmwareInventory", "Members[0]", "has no @odata.id"),
    );
    expect(() => parseTask({ TaskState: "Done" })).toThrow(
      "Task: TaskState must be one of New, Starting, Running",
    );
    expect(() => parseSoftwareInventory({ "@odata.id": "/x/BMC", Id: "BMC" })).toThrow(
      "SoftwareInventory BMC: Version is missing",
    );
  });

  it("an error body's messages, without repeats", () => {
    const body = {
      error: {
        code: "Base.1.8.GeneralError",
        message: "busy",
        "@Message.ExtendedInfo": [{ MessageId: "Base.1.8.ServiceTemporarilyUnavailable", Message: "busy" }],
      },
    };
    expect(errorText(body)).toBe("busy");
    expect(errorText(undefined)).toBe("");
  });
});

describe("update outcome: an ended task, judged", () => {
  const task = (state: "Completed" | "Exception" | "Killed" | "Cancelled", status?: string) => ({
    state,
    ...(status === undefined ? {} : { status }),
    messages: [
      { name: "UpdateSuccessful", message: "written", severity: "OK" },
      { name: "ApplyFailed", message: "apply failed", severity: "Critical" },
    ],
  });
  it.each([
    ["Completed", "OK", undefined],
    ["Completed", "Warning", undefined],
    ["Completed", undefined, undefined],
    ["Completed", "Critical", "task Completed (TaskStatus Critical): apply failed; written"],
    ["Exception", "Critical", "task Exception (TaskStatus Critical): apply failed; written"],
    ["Killed", undefined, "task Killed: apply failed; written"],
    ["Cancelled", "OK", "task Cancelled (TaskStatus OK): apply failed; written"],
  ] as const)("%s with TaskStatus %s → %s", (state, status, message) => {
    const failure = judgeEndedTask(task(state, status));
    expect(failure === undefined ? undefined : [failure.code, failure.message]).toEqual(
      message === undefined ? undefined : ["FLASH_FAILED", message],
    );
  });
});
