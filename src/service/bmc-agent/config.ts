/**
 * The BMC agent's configuration (one JSON file, `flow-bmc-agent --config FILE`), read once at
 * start, validated, frozen. Every problem names its field and the rule, all at once, and the
 * agent exits 2 (src/service/bmc-agent/main.ts):
 *
 *   bmcs[1].url: plain http:// is allowed only to a loopback address (got "http://10.0.3.17");
 *   bmcs[2].passwordFile: cannot be read (ENOENT)
 *
 * Secrets never appear in a problem or a log: a password is read from `passwordFile` or the
 * environment variable `passwordEnv`; `password` inline is accepted (local tests) with a warning.
 * Unknown fields are problems too: a setting the agent would silently ignore is a promise it breaks.
 * docs/agent.md is the reference of every field.
 */
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { dirname, resolve } from "node:path";
import type { AgentTimings } from "../../app/bmc-agent/bmc-link.js";
import { isIotRuleName } from "../../domain/bmc-topics.js";
import { ConfigError } from "../env-reader.js";

export interface AgentBmcConfig {
  componentId: string;
  url: string;
  username: string;
  /** The secret, behind a function so a dump of the config never shows it. */
  password: () => string;
  tls: { caFile?: string; fingerprint?: string; insecure?: boolean };
  allowBasicAuth: boolean;
  firmwareMember?: string;
  subTargets: Record<string, string>;
  applyTime: string;
}

export interface AgentMqttConfig {
  url: string;
  clientId: string;
  caFile?: string;
  certFile?: string;
  keyFile?: string;
}

/**
 * How the agent opens update commands' `auth` blobs (docs/agent.md, "Credentials"): KMS in
 * `region`, with credentials from the IoT credentials provider (`iot`: the agent's certificate,
 * `roleAlias` at `credentialsEndpoint`) or the SDK's default chain (`environment`, for a host that
 * has a role of its own, and the tests); `kmsEndpoint` for an AWS-compatible endpoint.
 */
export type AgentCommandAuth =
  | {
      credentials: "iot";
      region: string;
      credentialsEndpoint: string;
      roleAlias: string;
      kmsEndpoint?: string;
    }
  | { credentials: "environment"; region: string; kmsEndpoint?: string };

export interface AgentConfig {
  /** Absent: an update's `auth` blob is not read; the config's password is the BMC's. */
  commandAuth?: AgentCommandAuth;
  /**
   * The rack whose BMCs the agent serves (lowercase UUID): it listens on that rack's topics
   * (protocol v4, src/domain/bmc-topics.ts). Absent: each BMC's v1–v3 per-component topic.
   */
  rackId?: string;
  /**
   * The IoT rule that takes the rack's reports (the stack's output BmcReportsRuleName): every
   * report then goes to `$aws/rules/<reportsRule>/flow/rack/...` (AWS IoT Basic Ingest: no
   * messaging charge). Absent: the plain evt topics, through the message broker.
   */
  reportsRule?: string;
  /**
   * How long the agent gathers its BMCs' events before sending them as one message on the rack's
   * reports topic (`flow/rack/<rackId>/reports`; through Basic Ingest with reportsRule). 0: each
   * event its own message on its component's evt topic. Always 0 without rackId.
   */
  reportFlushMs: number;
  mqtt: AgentMqttConfig;
  stateDir: string;
  cacheDir: string;
  imageServer: { host: string; port: number; advertiseHost?: string };
  timings: AgentTimings;
  requestTimeoutMs: number;
  shutdownGraceMs: number;
  bmcs: AgentBmcConfig[];
  /** Said once at start (inline passwords, insecure TLS), never secrets. */
  warnings: string[];
}

export const DEFAULT_TIMINGS: AgentTimings = {
  pollIntervalMs: 1_000,
  maxRetryAfterMs: 30_000,
  noProgressTimeoutMs: 600_000,
  rebootTimeoutMs: 900_000,
  settleTimeoutMs: 300_000,
  busyTimeoutMs: 600_000,
  progressIntervalMs: 60_000,
};

/**
 * The longest `timings.progressIntervalMs`: progress is what keeps the child task's wait for a
 * wave alive (it lapses after 300 s without a report: 5 × its longest poll, 60 s), so a running
 * flash must be heard from about twice in that time at least.
 */
export const MAX_PROGRESS_INTERVAL_MS = 150_000;

/** The default `reportFlushMs`: a rack's events of the same second travel together. */
export const DEFAULT_REPORT_FLUSH_MS = 1_000;
/**
 * The longest `reportFlushMs`: every report waits up to this long before it leaves, a result
 * included, and the child task's receiver gathers them for another second.
 */
export const MAX_REPORT_FLUSH_MS = 10_000;

const APPLY_TIMES = [
  "Immediate",
  "OnReset",
  "AtMaintenanceWindowStart",
  "InMaintenanceWindowOnReset",
  "OnStartUpdateRequest",
];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const FINGERPRINT = /^([0-9A-Fa-f]{2}:){31}[0-9A-Fa-f]{2}$|^[0-9A-Fa-f]{64}$/;

type Json = Record<string, unknown>;

/** Reads and validates the file; throws ConfigError listing every problem. */
export function readAgentConfig(file: string, env: NodeJS.ProcessEnv = process.env): Readonly<AgentConfig> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new ConfigError([
      `--config: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? "error"})`,
    ]);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new ConfigError([`--config: ${file} is not valid JSON`]);
  }
  return parseAgentConfig(doc, { baseDir: dirname(resolve(file)), env });
}

export function parseAgentConfig(
  doc: unknown,
  context: { baseDir: string; env: NodeJS.ProcessEnv },
): Readonly<AgentConfig> {
  const problems: string[] = [];
  const warnings: string[] = [];
  const p = (field: string, rule: string) => problems.push(`${field}: ${rule}`);
  const path = (value: string) => resolve(context.baseDir, value);

  const root = asObject(doc, "(root)", p);
  known(
    root,
    [
      "rackId",
      "reportsRule",
      "reportFlushMs",
      "commandAuth",
      "mqtt",
      "bmcs",
      "stateDir",
      "cacheDir",
      "imageServer",
      "timings",
      "requestTimeoutMs",
      "shutdownGraceMs",
    ],
    "",
    p,
  );

  const rackId = str(root.rackId, "rackId", p)?.toLowerCase();
  if (rackId !== undefined && !UUID.test(rackId))
    p("rackId", `must be the inventory rack's id, a UUID (got ${JSON.stringify(root.rackId)})`);
  if (rackId === undefined)
    warnings.push(
      "no rackId: listening on each BMC's per-component topic (protocol v1-v3), which the product publishes on only when its deployment keeps the legacy topics; set rackId",
    );

  const reportsRule = str(root.reportsRule, "reportsRule", p);
  if (reportsRule !== undefined && !isIotRuleName(reportsRule))
    p(
      "reportsRule",
      `must be an AWS IoT rule name: 1 to 128 letters, digits and underscores (got ${JSON.stringify(reportsRule)})`,
    );
  if (reportsRule !== undefined && rackId === undefined)
    p("reportsRule", "needs rackId: Basic Ingest carries the rack-scoped reports (flow/rack/<rackId>/...)");

  const flushGiven = int(root.reportFlushMs, "reportFlushMs", 0, MAX_REPORT_FLUSH_MS, p);
  if (flushGiven !== undefined && flushGiven > 0 && rackId === undefined)
    p(
      "reportFlushMs",
      "needs rackId: a rack's reports travel on its rack topic (flow/rack/<rackId>/reports); 0 or absent without it",
    );
  const reportFlushMs = rackId === undefined ? 0 : (flushGiven ?? DEFAULT_REPORT_FLUSH_MS);

  const mqttDoc = asObject(root.mqtt, "mqtt", p, true);
  known(mqttDoc, ["url", "clientId", "caFile", "certFile", "keyFile"], "mqtt.", p);
  const mqttUrl = str(mqttDoc.url, "mqtt.url", p, isObject(root.mqtt)) ?? "";
  if (mqttUrl !== "" && !/^(mqtts?|wss?):\/\/[^/]+/.test(mqttUrl))
    p("mqtt.url", `must be an mqtt://, mqtts://, ws:// or wss:// URL (got ${JSON.stringify(mqttUrl)})`);
  const mqtt: AgentMqttConfig = {
    url: mqttUrl,
    clientId: str(mqttDoc.clientId, "mqtt.clientId", p) ?? `flow-bmc-agent-${process.pid}`,
  };
  for (const key of ["caFile", "certFile", "keyFile"] as const) {
    const value = str(mqttDoc[key], `mqtt.${key}`, p);
    if (value !== undefined) mqtt[key] = readable(path(value), `mqtt.${key}`, p);
  }
  if ((mqtt.certFile === undefined) !== (mqtt.keyFile === undefined))
    p("mqtt.keyFile", "mqtt.certFile and mqtt.keyFile go together");

  const commandAuth = readCommandAuth(root.commandAuth, { rackId, mqtt }, p);

  const stateDir = path(str(root.stateDir, "stateDir", p) ?? ".flow-bmc-agent");
  const cacheDir = path(str(root.cacheDir, "cacheDir", p) ?? `${stateDir}/images`);

  const serverDoc = asObject(root.imageServer ?? {}, "imageServer", p);
  known(serverDoc, ["host", "port", "advertiseHost"], "imageServer.", p);
  const imageServer: AgentConfig["imageServer"] = {
    host: str(serverDoc.host, "imageServer.host", p) ?? "127.0.0.1",
    port: int(serverDoc.port, "imageServer.port", 0, 65_535, p) ?? 0,
  };
  const advertise = str(serverDoc.advertiseHost, "imageServer.advertiseHost", p);
  if (advertise !== undefined) imageServer.advertiseHost = advertise;

  const timingsDoc = asObject(root.timings ?? {}, "timings", p);
  known(timingsDoc, Object.keys(DEFAULT_TIMINGS), "timings.", p);
  const timings = { ...DEFAULT_TIMINGS };
  for (const key of Object.keys(DEFAULT_TIMINGS) as (keyof AgentTimings)[]) {
    if (key === "progressIntervalMs") continue;
    const value = int(timingsDoc[key], `timings.${key}`, 1, 86_400_000, p);
    if (value !== undefined) timings[key] = value;
  }
  const progressIntervalMs = timingsDoc.progressIntervalMs;
  if (
    typeof progressIntervalMs === "number" &&
    Number.isInteger(progressIntervalMs) &&
    progressIntervalMs > MAX_PROGRESS_INTERVAL_MS
  ) {
    p(
      "timings.progressIntervalMs",
      `must be at most ${MAX_PROGRESS_INTERVAL_MS} (got ${progressIntervalMs}): the child task's wait for a wave lapses after 300000 ms without a report`,
    );
  } else {
    const value = int(progressIntervalMs, "timings.progressIntervalMs", 0, MAX_PROGRESS_INTERVAL_MS, p);
    if (value !== undefined) timings.progressIntervalMs = value;
  }
  const requestTimeoutMs = int(root.requestTimeoutMs, "requestTimeoutMs", 1, 3_600_000, p) ?? 120_000;
  const shutdownGraceMs = int(root.shutdownGraceMs, "shutdownGraceMs", 0, 3_600_000, p) ?? 10_000;

  const bmcs: AgentBmcConfig[] = [];
  if (!Array.isArray(root.bmcs) || root.bmcs.length === 0) p("bmcs", "must be a non-empty array");
  const seen = new Set<string>();
  (Array.isArray(root.bmcs) ? root.bmcs : []).forEach((entry, i) => {
    const at = `bmcs[${i}]`;
    const b = asObject(entry, at, p);
    known(
      b,
      [
        "componentId",
        "url",
        "username",
        "password",
        "passwordFile",
        "passwordEnv",
        "caFile",
        "fingerprint",
        "insecure",
        "allowBasicAuth",
        "firmwareMember",
        "subTargets",
        "applyTime",
      ],
      `${at}.`,
      p,
    );
    const componentId = (str(b.componentId, `${at}.componentId`, p, true) ?? "").toLowerCase();
    if (componentId !== "" && !UUID.test(componentId))
      p(
        `${at}.componentId`,
        `must be the inventory component's id, a UUID (got ${JSON.stringify(b.componentId)})`,
      );
    if (seen.has(componentId)) p(`${at}.componentId`, `${componentId} is listed twice`);
    seen.add(componentId);
    const url = checkBmcUrl(str(b.url, `${at}.url`, p, true), `${at}.url`, p);
    const username = str(b.username, `${at}.username`, p, true) ?? "";
    const password = secret(b, at, context.env, path, p, warnings);
    const tls: AgentBmcConfig["tls"] = {};
    const caFile = str(b.caFile, `${at}.caFile`, p);
    if (caFile !== undefined) tls.caFile = readable(path(caFile), `${at}.caFile`, p);
    const fingerprint = str(b.fingerprint, `${at}.fingerprint`, p);
    if (fingerprint !== undefined) {
      if (FINGERPRINT.test(fingerprint)) tls.fingerprint = fingerprint;
      else p(`${at}.fingerprint`, "must be a SHA-256 fingerprint: 64 hex digits, with or without colons");
    }
    if (b.insecure !== undefined && typeof b.insecure !== "boolean")
      p(`${at}.insecure`, "must be true or false");
    if (b.insecure === true) tls.insecure = true;
    const ways = [tls.caFile, tls.fingerprint, tls.insecure].filter((v) => v !== undefined).length;
    if (ways > 1) p(`${at}`, "give at most one of caFile, fingerprint and insecure");
    if (tls.insecure && url.startsWith("https:")) {
      warnings.push(
        `${at} (${componentId}): insecure: true, the BMC's certificate is NOT verified; pin it with fingerprint or give its caFile`,
      );
    }
    if (b.allowBasicAuth !== undefined && typeof b.allowBasicAuth !== "boolean")
      p(`${at}.allowBasicAuth`, "must be true or false");
    const applyTime = str(b.applyTime, `${at}.applyTime`, p) ?? "Immediate";
    if (!APPLY_TIMES.includes(applyTime))
      p(`${at}.applyTime`, `must be one of ${APPLY_TIMES.join(", ")} (got ${JSON.stringify(applyTime)})`);
    const subTargets: Record<string, string> = {};
    const subDoc = asObject(b.subTargets ?? {}, `${at}.subTargets`, p);
    for (const [name, member] of Object.entries(subDoc)) {
      if (typeof member === "string" && member !== "") subTargets[name.toLowerCase()] = member;
      else p(`${at}.subTargets.${name}`, "must be a firmware inventory member's Id");
    }
    const bmc: AgentBmcConfig = {
      componentId,
      url,
      username,
      password,
      tls,
      allowBasicAuth: b.allowBasicAuth === true,
      subTargets,
      applyTime,
    };
    const member = str(b.firmwareMember, `${at}.firmwareMember`, p);
    if (member !== undefined) bmc.firmwareMember = member;
    bmcs.push(bmc);
  });

  if (problems.length > 0) throw new ConfigError(problems);
  return {
    ...(rackId === undefined ? {} : { rackId }),
    ...(reportsRule === undefined ? {} : { reportsRule }),
    reportFlushMs,
    ...(commandAuth === undefined ? {} : { commandAuth }),
    mqtt,
    stateDir,
    cacheDir,
    imageServer,
    timings,
    requestTimeoutMs,
    shutdownGraceMs,
    bmcs,
    warnings,
  };
}

function readCommandAuth(
  value: unknown,
  agent: { rackId: string | undefined; mqtt: AgentMqttConfig },
  p: (field: string, rule: string) => void,
): AgentCommandAuth | undefined {
  if (value === undefined) return undefined;
  const doc = asObject(value, "commandAuth", p);
  known(doc, ["credentials", "region", "credentialsEndpoint", "roleAlias", "kmsEndpoint"], "commandAuth.", p);
  const credentials = str(doc.credentials, "commandAuth.credentials", p) ?? "iot";
  const region = str(doc.region, "commandAuth.region", p, true) ?? "";
  const kmsEndpoint = str(doc.kmsEndpoint, "commandAuth.kmsEndpoint", p);
  if (agent.rackId === undefined)
    p("commandAuth", "needs rackId: the blobs are sealed for the rack (bmc:<rackId>:<component>:<request>)");
  const endpoint = kmsEndpoint === undefined ? {} : { kmsEndpoint };
  if (credentials === "environment") {
    for (const f of ["credentialsEndpoint", "roleAlias"])
      if (doc[f] !== undefined) p(`commandAuth.${f}`, 'is for credentials "iot" only');
    return { credentials, region, ...endpoint };
  }
  if (credentials !== "iot") {
    p("commandAuth.credentials", `must be "iot" or "environment" (got ${JSON.stringify(credentials)})`);
    return undefined;
  }
  const credentialsEndpoint = str(doc.credentialsEndpoint, "commandAuth.credentialsEndpoint", p, true) ?? "";
  const roleAlias = str(doc.roleAlias, "commandAuth.roleAlias", p, true) ?? "";
  if (agent.mqtt.certFile === undefined)
    p("commandAuth.credentials", '"iot" needs mqtt.certFile and mqtt.keyFile (the agent\'s certificate)');
  return { credentials, region, credentialsEndpoint, roleAlias, ...endpoint };
}

function secret(
  b: Json,
  at: string,
  env: NodeJS.ProcessEnv,
  path: (v: string) => string,
  p: (field: string, rule: string) => void,
  warnings: string[],
): () => string {
  const given = ["password", "passwordFile", "passwordEnv"].filter((k) => b[k] !== undefined);
  if (given.length !== 1) {
    p(`${at}.passwordFile`, "give exactly one of passwordFile, passwordEnv and password");
    return () => "";
  }
  if (b.password !== undefined) {
    if (typeof b.password !== "string" || b.password === "")
      p(`${at}.password`, "must be a non-empty string");
    else warnings.push(`${at}: password given inline; use passwordFile or passwordEnv outside local tests`);
    const value = String(b.password);
    return () => value;
  }
  if (b.passwordEnv !== undefined) {
    const name = str(b.passwordEnv, `${at}.passwordEnv`, p) ?? "";
    const value = env[name];
    if (name !== "" && (value === undefined || value === ""))
      p(`${at}.passwordEnv`, `the environment variable ${name} is not set`);
    return () => value ?? "";
  }
  const file = str(b.passwordFile, `${at}.passwordFile`, p);
  if (file === undefined) return () => "";
  try {
    // One trailing newline (what `echo pw > file` writes) is not part of the password.
    const value = readFileSync(path(file), "utf8").replace(/\r?\n$/, "");
    if (value === "") p(`${at}.passwordFile`, "is empty");
    return () => value;
  } catch (err) {
    p(`${at}.passwordFile`, `cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})`);
    return () => "";
  }
}

function checkBmcUrl(url: string | undefined, field: string, p: (f: string, r: string) => void): string {
  if (url === undefined) return "";
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    p(field, `must be an https:// URL (got ${JSON.stringify(url)})`);
    return "";
  }
  if (parsed.protocol === "http:") {
    const host = parsed.hostname.replace(/^\[|\]$/g, "");
    const loopback = host === "localhost" || host === "::1" || (isIP(host) === 4 && host.startsWith("127."));
    if (!loopback)
      p(field, `plain http:// is allowed only to a loopback address (got ${JSON.stringify(url)})`);
  } else if (parsed.protocol !== "https:") {
    p(field, `must be an https:// URL (got ${JSON.stringify(url)})`);
  }
  if (parsed.pathname !== "/" || parsed.search !== "" || parsed.username !== "" || parsed.password !== "") {
    p(field, "must be the BMC's origin only (scheme, host, port): no path, query or credentials");
    return "";
  }
  return parsed.origin;
}

function isObject(value: unknown): boolean {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function asObject(value: unknown, field: string, p: (f: string, r: string) => void, required = false): Json {
  if (value === undefined && !required) return {};
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    p(field, value === undefined ? "is required" : "must be a JSON object");
    return {};
  }
  return value as Json;
}

function known(
  doc: Json,
  fields: readonly string[],
  prefix: string,
  p: (f: string, r: string) => void,
): void {
  for (const key of Object.keys(doc)) {
    if (!fields.includes(key)) p(`${prefix}${key}`, `is not a known field (known: ${fields.join(", ")})`);
  }
}

function str(
  value: unknown,
  field: string,
  p: (f: string, r: string) => void,
  required = false,
): string | undefined {
  if (value === undefined) {
    if (required) p(field, "is required");
    return undefined;
  }
  if (typeof value !== "string" || value.trim() === "") {
    p(field, "must be a non-empty string");
    return undefined;
  }
  return value;
}

function int(
  value: unknown,
  field: string,
  min: number,
  max: number,
  p: (f: string, r: string) => void,
): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    p(field, `must be an integer from ${min} to ${max} (got ${JSON.stringify(value)})`);
    return undefined;
  }
  return value;
}

function readable(file: string, field: string, p: (f: string, r: string) => void): string {
  try {
    readFileSync(file);
  } catch (err) {
    p(field, `cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})`);
  }
  return file;
}
