/**
 * The documents the Redfish BMC emulator (local/redfish-emulator.ts) serves, in the shape of a
 * rack server's BMC as DMTF's public-rackmount1 mockup shows it (ServiceRoot v1_20, UpdateService
 * v1_17 with MultipartHttpPushUri and SimpleUpdate, SoftwareInventory v1_13, Task v1_7,
 * Session v1_8), written for this project from the schemas: only what an update touches.
 */

export const V1 = "/redfish/v1";
export const SESSIONS = `${V1}/SessionService/Sessions`;
export const UPDATE_SERVICE = `${V1}/UpdateService`;
export const FIRMWARE_INVENTORY = `${UPDATE_SERVICE}/FirmwareInventory`;
export const MULTIPART_PUSH = `${UPDATE_SERVICE}/update-multipart`;
export const HTTP_PUSH = `${UPDATE_SERVICE}/update`;
export const SIMPLE_UPDATE = `${UPDATE_SERVICE}/Actions/UpdateService.SimpleUpdate`;
export const SIMPLE_UPDATE_INFO = `${UPDATE_SERVICE}/SimpleUpdateActionInfo`;
export const TASKS = `${V1}/TaskService/Tasks`;
export const TASK_MONITORS = `${V1}/TaskService/TaskMonitors`;
export const MANAGER = `${V1}/Managers/BMC`;
export const SYSTEM = `${V1}/Systems/1`;
export const CHASSIS = `${V1}/Chassis/1`;

/** The reset actions and the ResetTypes each allows (what the DMTF mockup's resources list). */
export const RESETS = {
  manager: { target: `${MANAGER}/Actions/Manager.Reset`, allowed: ["GracefulRestart", "ForceRestart"] },
  system: {
    target: `${SYSTEM}/Actions/ComputerSystem.Reset`,
    allowed: ["On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "PowerCycle"],
  },
  chassis: { target: `${CHASSIS}/Actions/Chassis.Reset`, allowed: ["PowerCycle", "ForceOff", "On"] },
} as const;

const resetAction = (action: { target: string; allowed: readonly string[] }) => ({
  target: action.target,
  "ResetType@Redfish.AllowableValues": [...action.allowed],
});

export type PushMethod = "multipart" | "simple" | "http-push";

export interface TreeState {
  uuid: string;
  updateServiceEnabled: boolean;
  methods: readonly PushMethod[];
  transferProtocols: readonly string[];
  maxImageSizeBytes?: number;
  pushApplyTime: string;
}

export interface MemberState {
  id: string;
  version: string;
  updateable: boolean;
  /** What the firmware belongs to: the Manager (the BMC's own), the System (BIOS), … */
  relatedItem: string;
}

export interface TaskDoc {
  id: string;
  state: string;
  status: string;
  percent: number;
  messages: { MessageId: string; Message: string; Severity: string }[];
  startTime: string;
  endTime?: string;
}

const link = (id: string) => ({ "@odata.id": id });

export function serviceRoot(s: TreeState): object {
  return {
    "@odata.type": "#ServiceRoot.v1_20_0.ServiceRoot",
    "@odata.id": `${V1}/`,
    Id: "RootService",
    Name: "Root Service",
    RedfishVersion: "1.15.0",
    UUID: s.uuid,
    Systems: link(`${V1}/Systems`),
    Managers: link(`${V1}/Managers`),
    Chassis: link(`${V1}/Chassis`),
    Tasks: link(`${V1}/TaskService`),
    SessionService: link(`${V1}/SessionService`),
    UpdateService: link(UPDATE_SERVICE),
    Links: { Sessions: link(SESSIONS) },
  };
}

export function collection(id: string, type: string, members: readonly string[]): object {
  return {
    "@odata.type": `#${type}.${type}`,
    "@odata.id": id,
    Name: type,
    "Members@odata.count": members.length,
    Members: members.map(link),
  };
}

export function manager(firmwareVersion: string): object {
  return {
    "@odata.type": "#Manager.v1_19_0.Manager",
    "@odata.id": MANAGER,
    Id: "BMC",
    Name: "Manager",
    ManagerType: "BMC",
    FirmwareVersion: firmwareVersion,
    Status: { State: "Enabled", Health: "OK" },
    Links: { ManagerForServers: [link(SYSTEM)] },
    Actions: { "#Manager.Reset": resetAction(RESETS.manager) },
  };
}

export function system(biosVersion: string, healthRollup = "OK"): object {
  return {
    "@odata.type": "#ComputerSystem.v1_22_0.ComputerSystem",
    "@odata.id": SYSTEM,
    Id: "1",
    Name: "Compute node",
    SystemType: "Physical",
    BiosVersion: biosVersion,
    PowerState: "On",
    Status: { State: "Enabled", Health: "OK", HealthRollup: healthRollup },
    Actions: { "#ComputerSystem.Reset": resetAction(RESETS.system) },
  };
}

export function chassis(): object {
  return {
    "@odata.type": "#Chassis.v1_25_0.Chassis",
    "@odata.id": CHASSIS,
    Id: "1",
    Name: "Tray",
    ChassisType: "RackMount",
    PowerState: "On",
    Status: { State: "Enabled", Health: "OK" },
    Actions: { "#Chassis.Reset": resetAction(RESETS.chassis) },
  };
}

export function sessionService(): object {
  return {
    "@odata.type": "#SessionService.v1_2_0.SessionService",
    "@odata.id": `${V1}/SessionService`,
    Id: "SessionService",
    Name: "Session Service",
    ServiceEnabled: true,
    SessionTimeout: 1800,
    Sessions: link(SESSIONS),
  };
}

export function session(id: string, user: string): object {
  return {
    "@odata.type": "#Session.v1_8_0.Session",
    "@odata.id": `${SESSIONS}/${id}`,
    Id: id,
    Name: "User Session",
    UserName: user,
  };
}

export function updateService(s: TreeState): object {
  const doc: Record<string, unknown> = {
    "@odata.type": "#UpdateService.v1_17_0.UpdateService",
    "@odata.id": UPDATE_SERVICE,
    Id: "UpdateService",
    Name: "Update service",
    Status: { State: s.updateServiceEnabled ? "Enabled" : "Disabled", Health: "OK" },
    ServiceEnabled: s.updateServiceEnabled,
    FirmwareInventory: link(FIRMWARE_INVENTORY),
    HttpPushUriOptionsBusy: false,
  };
  if (s.methods.includes("multipart")) doc.MultipartHttpPushUri = MULTIPART_PUSH;
  if (s.methods.includes("http-push")) {
    doc.HttpPushUri = HTTP_PUSH;
    doc.HttpPushUriOptions = {
      HttpPushUriApplyTime: {
        ApplyTime: s.pushApplyTime,
        "ApplyTime@Redfish.AllowableValues": ["Immediate", "OnReset"],
      },
    };
  }
  if (s.maxImageSizeBytes !== undefined) doc.MaxImageSizeBytes = s.maxImageSizeBytes;
  if (s.methods.includes("simple")) {
    doc.Actions = {
      "#UpdateService.SimpleUpdate": { target: SIMPLE_UPDATE, "@Redfish.ActionInfo": SIMPLE_UPDATE_INFO },
    };
  }
  return doc;
}

export function simpleUpdateActionInfo(s: TreeState): object {
  return {
    "@odata.type": "#ActionInfo.v1_5_0.ActionInfo",
    "@odata.id": SIMPLE_UPDATE_INFO,
    Id: "SimpleUpdateActionInfo",
    Name: "Simple Update Action Info",
    Parameters: [
      { Name: "ImageURI", Required: true, DataType: "String" },
      {
        Name: "TransferProtocol",
        Required: false,
        DataType: "String",
        AllowableValues: [...s.transferProtocols],
      },
      { Name: "Targets", Required: false, DataType: "StringArray" },
    ],
  };
}

export function softwareInventory(m: MemberState): object {
  return {
    "@odata.type": "#SoftwareInventory.v1_13_0.SoftwareInventory",
    "@odata.id": `${FIRMWARE_INVENTORY}/${m.id}`,
    Id: m.id,
    Name: `${m.id} firmware`,
    Status: { State: "Enabled", Health: "OK" },
    Updateable: m.updateable,
    Version: m.version,
    RelatedItem: [link(m.relatedItem)],
  };
}

export function task(t: TaskDoc): object {
  const doc: Record<string, unknown> = {
    "@odata.type": "#Task.v1_7_4.Task",
    "@odata.id": `${TASKS}/${t.id}`,
    Id: t.id,
    Name: `Task ${t.id}`,
    TaskMonitor: `${TASK_MONITORS}/${t.id}`,
    TaskState: t.state,
    TaskStatus: t.status,
    PercentComplete: t.percent,
    StartTime: t.startTime,
    Messages: t.messages,
  };
  if (t.endTime !== undefined) doc.EndTime = t.endTime;
  return doc;
}

/** A Redfish error body (DSP0266 "Error responses") with one message. */
export function redfishError(messageId: string, message: string): object {
  return {
    error: {
      code: messageId,
      message,
      "@Message.ExtendedInfo": [{ MessageId: messageId, Message: message, Severity: "Critical" }],
    },
  };
}
