/**
 * The BMC agent's ports: what its use cases (src/app/bmc-agent/) need from a BMC, from the image
 * store, from the broker, from disk and from the clock. The adapters are src/adapters/redfish/
 * (RedfishBmc), src/adapters/bmc-agent/ (images, journal, image server) and the MQTT wiring in
 * src/service/bmc-agent/; test fakes are typed from these interfaces.
 */
import type {
  BmcEvent,
  EncryptedAuth,
  ResetKind,
  ResultEvent,
  StatusEvent,
} from "../../domain/bmc-protocol.js";

// ---------------------------------------------------------------------------------------------
// What the agent reads from Redfish documents (src/adapters/redfish/documents.ts parses them)

export type TaskState =
  | "New"
  | "Starting"
  | "Running"
  | "Suspended"
  | "Interrupted"
  | "Pending"
  | "Stopping"
  | "Completed"
  | "Killed"
  | "Exception"
  | "Service"
  | "Cancelling"
  | "Cancelled";

export interface SimpleUpdateAction {
  target: string;
  /** `@Redfish.ActionInfo`, where the parameters are described. */
  actionInfo?: string;
  /** `TransferProtocol@Redfish.AllowableValues` when the action carries it inline. */
  transferProtocols?: string[];
}

export interface UpdateServiceInfo {
  /** Its `@odata.id`. */
  uri?: string;
  /** `ServiceEnabled`; absent counts as enabled. */
  enabled: boolean;
  firmwareInventory?: string;
  multipartHttpPushUri?: string;
  httpPushUri?: string;
  simpleUpdate?: SimpleUpdateAction;
  /** `MaxImageSizeBytes`: the largest image the service accepts. */
  maxImageSizeBytes?: number;
  /** `HttpPushUriOptionsBusy` / an OEM busy flag: another client is configuring a push. */
  pushBusy: boolean;
}

export interface FirmwareMember {
  /** `@odata.id`, what `Targets` names. */
  uri: string;
  id: string;
  version: string;
  updateable: boolean;
  /** `RelatedItem` links: which Manager, System or device this firmware belongs to. */
  relatedItems: string[];
  /** `Status.State`, e.g. Enabled, Updating, StandbyOffline. */
  state?: string;
}

export interface TaskMessage {
  /** The message's name: the last segment of its MessageId (`Update.1.0.ApplyFailed` → `ApplyFailed`). */
  name: string;
  message: string;
  severity?: string;
}

export interface TaskView {
  uri?: string;
  state: TaskState;
  /** `TaskStatus` (OK, Warning, Critical); absent: not said. */
  status?: string;
  percent?: number;
  messages: TaskMessage[];
}

/** A resource's reset action: where to POST it and the ResetTypes it allows (absent: not said). */
export interface ResetAction {
  target: string;
  allowed?: string[];
}

/** Which resource a reset acts on: the BMC itself (Manager), its host (ComputerSystem), its tray (Chassis). */
export type ResetResource = "manager" | "system" | "chassis";

// ---------------------------------------------------------------------------------------------
// Ports

export interface UpdateServiceFacts extends UpdateServiceInfo {
  /** Why updates cannot be made, when `enabled` is false. */
  reason?: string;
}

export interface LocalImage {
  path: string;
  size: number;
  sha256: string;
}

/** How an image reaches the BMC. */
export type PushRequest =
  | {
      method: "multipart";
      uri: string;
      file: LocalImage;
      /** The `UpdateParameters` part: `Targets`, `@Redfish.OperationApplyTime`. */
      parameters: Record<string, unknown>;
    }
  | { method: "simple"; uri: string; parameters: Record<string, unknown> }
  | { method: "http-push"; uri: string; file: LocalImage };

export interface TaskStarted {
  /** The task monitor (the 202's `Location`). */
  monitor: string;
  /** The task resource, when the BMC named it. */
  taskUri?: string;
  retryAfterMs?: number;
}

export type TaskPoll =
  | { kind: "running"; task?: TaskView; retryAfterMs?: number }
  | { kind: "ended"; task: TaskView }
  /** The monitor answers 404: the task ended and was forgotten, or the BMC rebooted. */
  | { kind: "gone" };

/**
 * One BMC over Redfish. Every method may throw RedfishUnreachableError (no answer),
 * RedfishHttpError (an unexpected status), RedfishAuthError (no session and no allowed fallback)
 * or RedfishTlsError; reads are safe to repeat, `push` is not (the caller makes sure it pushes an
 * image once per request id).
 */
export interface RedfishBmc {
  updateService(): Promise<UpdateServiceFacts>;
  firmwareInventory(): Promise<FirmwareMember[]>;
  firmwareMember(uri: string): Promise<FirmwareMember>;
  /** Starts an update; a 503 throws RedfishHttpError with `retryAfterMs`. */
  push(request: PushRequest): Promise<TaskStarted>;
  pollTask(started: TaskStarted): Promise<TaskPoll>;
  /** For HttpPushUri: sets `HttpPushUriOptions.HttpPushUriApplyTime.ApplyTime`. */
  setPushApplyTime(updateServiceUri: string, applyTime: string): Promise<void>;
  /** The first member of the resource's collection and its reset action; undefined: none. */
  resetAction(resource: ResetResource): Promise<ResetAction | undefined>;
  /** POSTs the action with `{ResetType}`; the BMC may drop the connection as it goes down. */
  reset(action: ResetAction, resetType: string): Promise<void>;
  /**
   * The worst `Status.HealthRollup` (else `Health`) of the first Manager, ComputerSystem and
   * Chassis, with which resource said so; OK when none says otherwise.
   */
  health(): Promise<{ health: "OK" | "Warning" | "Critical"; reason?: string }>;
  /**
   * From now on log in with this password (the update command's credentials); a session made with
   * other credentials is ended first. The same password again changes nothing.
   */
  useCredentials(password: string): Promise<void>;
  /** Logs out (deletes the session). */
  close(): Promise<void>;
}

/** Opens an update command's `auth` blob under its encryption context: the BMC password it carries. */
export interface CommandAuthOpener {
  open(auth: EncryptedAuth, context: string): Promise<string>;
}

export class ImageError extends Error {
  constructor(
    /** IMAGE_UNAVAILABLE, IMAGE_UNVERIFIED or IMAGE_DIGEST_MISMATCH. */
    readonly code: "IMAGE_UNAVAILABLE" | "IMAGE_UNVERIFIED" | "IMAGE_DIGEST_MISMATCH",
    message: string,
  ) {
    super(message);
    this.name = "ImageError";
  }
}

/**
 * Firmware images on local disk. `fetch` downloads an image once for all the BMCs that ask for
 * it at once or later (keyed by its digest), streaming it to disk while hashing it, and resolves
 * only once the digest matched; a mismatch is an ImageError every asker receives.
 */
export interface ImageCache {
  fetch(image: { uri: string; sha256: string; size?: number }): Promise<LocalImage>;
}

/** Serves a cached image to a BMC that pulls it (SimpleUpdate), for a while. */
export interface ImageServer {
  /** A URL the BMC can GET the file from until `release`; and the protocol it speaks. */
  offer(file: LocalImage): { url: string; protocol: "HTTP" | "HTTPS"; release: () => void };
}

/** Publishes the agent's reports on a BMC's evt topic (QoS 1). */
export interface EventSink {
  publish(componentId: string, event: BmcEvent): Promise<void>;
}

/**
 * What the agent remembers about each update and reset request across restarts, so a repeated
 * command is answered, never flashed or reset again. `record` is durable when it resolves.
 * A reset is `resetting` from just before its POST (an agent stopped after it only waits for the
 * BMC to come back), then `reset` with the answer it sent.
 */
export type JournalEntry =
  | { componentId: string; requestId: string; phase: "pushed"; monitor?: TaskStarted; targetVersion: string }
  | { componentId: string; requestId: string; phase: "done"; result: ResultEvent }
  | { componentId: string; requestId: string; phase: "resetting"; kind: ResetKind }
  | { componentId: string; requestId: string; phase: "reset"; status: StatusEvent };

export interface UpdateJournal {
  get(componentId: string, requestId: string): JournalEntry | undefined;
  record(entry: JournalEntry): Promise<void>;
}

export interface AgentClock {
  now(): number;
  /** Resolves after `ms`, or rejects once `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}
