/**
 * What the Redfish BMC emulator (local/redfish-emulator.ts) is told and what it tells: how each
 * emulated BMC behaves, the emulator's options, and its record of what it was asked.
 */
import type { PushMethod } from "./redfish-tree.js";

export interface RedfishBehaviour {
  /** The task ends in Exception half-way, the version unchanged. */
  fail?: boolean;
  /** The task stops at 25 % and never moves again. */
  hang?: boolean;
  /** Half-way the BMC reboots: drops every connection, refuses them for rebootMs, forgets tasks and sessions; the new version runs after. */
  rebootMidUpdate?: boolean;
  /** 503 with Retry-After for this many pushes first. */
  busyPushes?: number;
  /** The task ends Completed with TaskStatus Critical, the version unchanged. */
  critical?: boolean;
  /**
   * Tasks vanish as soon as they end (HPE iLO, bmcweb after a restart): the flash completes right
   * after its first step and the monitor answers 404 from then on, never a final 200.
   */
  vanishingTasks?: boolean;
  rejectSessions?: boolean;
  notUpdateable?: boolean;
  updateServiceDisabled?: boolean;
  /** MaxImageSizeBytes: advertised (unless `hideMaxImageSize`), and 413 for a larger image. */
  maxImageSizeBytes?: number;
  /** The cap is enforced (413) but not advertised, as bmcweb's 30 MiB body limit is not. */
  hideMaxImageSize?: boolean;
  /** Default ["multipart", "simple"] (what the mockup and OpenBMC-like BMCs offer). */
  methods?: PushMethod[];
  /**
   * What a flashed version needs to become active even when pushed `Immediate` (GPU or CPLD
   * firmware): the reset of the Manager (`bmc`), of the ComputerSystem (`host`) or the Chassis
   * power cycle (`ac`, which resets everything). Absent: Immediate applies at once, and a version
   * pushed `OnReset` is applied by any reset.
   */
  activation?: "bmc" | "host" | "ac";
  /** The ComputerSystem's `Status.HealthRollup` is Critical (a GPU lost), the rest OK. */
  unhealthy?: boolean;
  /**
   * A task's PercentComplete at each step before it completes: [25, 50, 75] by default; 1 … 99
   * for a BMC that ticks a percent at a time, a value repeated for one that stalls.
   */
  percents?: readonly number[];
}

export interface EmulatedBmcSpec {
  /** The emulator's key for it: the inventory component id. */
  id: string;
  /** Firmware inventory: member Id → version. Default `{ BMC: "1.0.0", BIOS: "1.0.0" }`. */
  firmware?: Record<string, string>;
  behaviour?: RedfishBehaviour;
  /** Loopback address to listen on (default 127.0.0.1). */
  host?: string;
}

export interface RedfishRecord {
  sessionsCreated: number;
  sessionsDeleted: number;
  sessionsRefused: number;
  basicAuthRequests: number;
  /** Pushes accepted (a task started), per firmware member flashed. */
  pushes: Record<string, number>;
  pushesByMethod: Record<string, number>;
  busyRejections: number;
  tooLarge: number;
  reboots: number;
  /** Reset actions accepted, as `<Resource>.Reset <ResetType>` (e.g. `Chassis.Reset PowerCycle`). */
  resets: string[];
  applyTimes: string[];
  /** Bytes of image received (pushed or pulled). */
  imageBytes: number;
}

export interface RedfishEmulatorOptions {
  bmcs: EmulatedBmcSpec[];
  /** PEM; absent: plain HTTP (loopback only). */
  tls?: { cert: string | Buffer; key: string | Buffer };
  username?: string;
  password?: string;
  /** Whether requests with HTTP Basic auth are accepted. Default true. */
  basicAuth?: boolean;
  schedule?: "per-poll" | { stepMs: number };
  rebootMs?: number;
  /** The Retry-After (seconds) on 202 and 503 answers. Default 0. */
  retryAfterSeconds?: number;
}

export interface RedfishEmulator {
  urlOf(id: string): string;
  record(id: string): RedfishRecord;
  versionOf(id: string, member?: string): string | undefined;
  setBehaviour(id: string, behaviour: RedfishBehaviour): void;
  /** How long each of the BMC's tasks took, push accepted → ended (ms), for the benchmark. */
  flashTimes(id: string): number[];
  stop(): Promise<void>;
}

export function emptyRecord(): RedfishRecord {
  return {
    sessionsCreated: 0,
    sessionsDeleted: 0,
    sessionsRefused: 0,
    basicAuthRequests: 0,
    pushes: {},
    pushesByMethod: {},
    busyRejections: 0,
    tooLarge: 0,
    reboots: 0,
    resets: [],
    applyTimes: [],
    imageBytes: 0,
  };
}
