/**
 * Items ↔ domain values, both ways, in one place. Attribute names here and the key layout in
 * schema.ts are the whole storage format (docs/data-model.md describes it).
 */
import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { ScopeRack } from "../../app/ports.js";
import type { Actor } from "../../domain/actor.js";
import { entryKey, updateAddress } from "../../domain/command-sets.js";
import type { RunEventDetail, RunHistoryEvent } from "../../domain/history-event.js";
import type { InventoryRack } from "../../domain/inventory.js";
import type {
  ComponentSkip,
  ComponentsForType,
  ComponentType,
  FollowUp,
  OutcomeCounts,
  OutcomeStatus,
  PriorVersion,
  Run,
  RunConfig,
  RunOrigin,
  Target,
  VersionGroup,
} from "../../domain/model.js";
import type { OperationRule } from "../../domain/operation-rules.js";
import type { Task } from "../../domain/task.js";
import { createdKey, eventKey, LIST_PARTITION, orderKey, queueClassOf, queueKey } from "./schema.js";

export type Item = Record<string, unknown>;

const OUTCOME_FIELD: Record<OutcomeStatus, keyof OutcomeCounts> = {
  COMPLETED: "completed",
  FAILED: "failed",
  TERMINATED: "terminated",
  SKIPPED: "skipped",
};

/** The run item attribute holding one phase's counter: "c2_failed" = phase 2, failed. */
export function counterAttribute(phaseIndex: number, status: OutcomeStatus): string {
  return `c${phaseIndex}_${OUTCOME_FIELD[status]}`;
}

/**
 * (ours) The run item's in-flight counter of one failure domain: `dif:dc1/A`. Moved with inFlight
 * in the same conditional writes (target-transitions.ts); the cap is the item's `spreadMax`.
 */
export const DOMAIN_COUNTER_PREFIX = "dif:";
export function domainCounterAttribute(domain: string): string {
  return `${DOMAIN_COUNTER_PREFIX}${domain}`;
}

export function isActiveRunStatus(status: Run["status"]): boolean {
  return status === "PENDING" || status === "RUNNING";
}

/** The configuration as stored: everything but the firmware credentials. */
export function publicConfig(config: RunConfig): RunConfig {
  const { authentication: _secret, ...firmware } = config.operation.firmware;
  return { ...config, operation: { ...config.operation, firmware } };
}

export function runToItem(run: Run): Item {
  const item: Item = {
    runId: run.id,
    listPk: LIST_PARTITION.runs,
    createdKey: createdKey(run.createdAt, run.id),
    name: run.name,
    description: run.description,
    operationKind: run.config.operation.kind,
    configJson: JSON.stringify(publicConfig(run.config)),
    // The pinned operation rule as frozen at create; absent for the built-in default.
    ruleJson: run.rule === undefined ? undefined : JSON.stringify(run.rule),
    // A retry or rollback run's origin; the runs made from this one (appended by their creates).
    origin: run.origin,
    followUps: run.followUps,
    status: run.status,
    reason: run.reason,
    statusMessage: run.statusMessage,
    phaseSizes: run.phaseSizes,
    currentPhaseIndex: run.currentPhaseIndex,
    maxConcurrent: run.config.maxConcurrentTargets,
    // The claim condition's hard end (run-store.ts RUN_CLAIMABLE); frozen like the configuration.
    windowEndsAt: run.config.operation.firmware.endTime,
    inFlight: run.inFlight,
    // The spread's cap, frozen like maxConcurrent, for the claim condition.
    spreadMax: run.config.failureDomainSpread?.maxInFlight,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
    soakEndsAt: run.soakEndsAt,
  };
  if (isActiveRunStatus(run.status)) {
    item.activePk = LIST_PARTITION.activeRuns;
    // Due now: its first pass (due-index.ts).
    item.duePk = LIST_PARTITION.dueRuns;
    item.dueAt = 0;
  }
  for (const [domain, n] of Object.entries(run.domainInFlight ?? {})) {
    if (n !== 0) item[domainCounterAttribute(domain)] = n;
  }
  run.counters.forEach((counts, phase) => {
    for (const status of Object.keys(OUTCOME_FIELD) as OutcomeStatus[]) {
      const n = counts[OUTCOME_FIELD[status]];
      if (n !== 0) item[counterAttribute(phase, status)] = n;
    }
  });
  return item;
}

export function itemToRun(item: Item): Run {
  const phaseSizes = (item.phaseSizes as number[]).map(Number);
  const counters: OutcomeCounts[] = phaseSizes.map((_, phase) => ({
    completed: num(item[counterAttribute(phase, "COMPLETED")]),
    failed: num(item[counterAttribute(phase, "FAILED")]),
    terminated: num(item[counterAttribute(phase, "TERMINATED")]),
    skipped: num(item[counterAttribute(phase, "SKIPPED")]),
  }));
  const run: Run = {
    id: item.runId as string,
    name: item.name as string,
    description: item.description as string,
    config: JSON.parse(item.configJson as string) as RunConfig,
    status: item.status as Run["status"],
    reason: item.reason as Run["reason"],
    statusMessage: item.statusMessage as string,
    phaseSizes,
    currentPhaseIndex: num(item.currentPhaseIndex),
    counters,
    inFlight: num(item.inFlight),
    createdAt: num(item.createdAt),
    updatedAt: num(item.updatedAt),
  };
  if (item.ruleJson !== undefined) run.rule = JSON.parse(item.ruleJson as string) as OperationRule;
  if (item.origin !== undefined) run.origin = item.origin as RunOrigin;
  if (item.followUps !== undefined) run.followUps = item.followUps as FollowUp[];
  const domains = Object.keys(item).filter((k) => k.startsWith(DOMAIN_COUNTER_PREFIX));
  if (domains.length > 0) {
    run.domainInFlight = Object.fromEntries(
      domains.map((k) => [k.slice(DOMAIN_COUNTER_PREFIX.length), num(item[k])]),
    );
  }
  if (item.startedAt !== undefined) run.startedAt = num(item.startedAt);
  if (item.finishedAt !== undefined) run.finishedAt = num(item.finishedAt);
  if (item.soakEndsAt !== undefined) run.soakEndsAt = num(item.soakEndsAt);
  return run;
}

export function targetToItem(target: Target): Item {
  const queued = queueClassOf(target.status);
  return {
    runId: target.runId,
    targetId: target.id,
    orderKey: orderKey(target.phaseIndex, target.sequenceIndex),
    queueKey: queued === undefined ? undefined : queueKey(target.phaseIndex, target.sequenceIndex, queued),
    rackId: target.rackId,
    sequenceIndex: target.sequenceIndex,
    phaseIndex: target.phaseIndex,
    status: target.status,
    message: target.message,
    taskId: target.taskId,
    componentsByType: target.componentsByType,
    rackExternalId: target.rackExternalId,
    failureDomain: target.failureDomain,
    versions: target.versions,
    priorVersions: target.priorVersions,
    skippedComponents: target.skippedComponents,
    createdAt: target.createdAt,
    updatedAt: target.updatedAt,
    leaseExpiresAt: target.leaseExpiresAt,
    conflictAttempts: target.conflictAttempts,
    firstBlockedAt: target.firstBlockedAt,
    retryAt: target.retryAt,
    failureReportedBy: target.failureReportedBy,
    failureReportedAt: target.failureReportedAt,
  };
}

export function itemToTarget(item: Item): Target {
  const target: Target = {
    id: item.targetId as string,
    runId: item.runId as string,
    rackId: item.rackId as string,
    sequenceIndex: num(item.sequenceIndex),
    phaseIndex: num(item.phaseIndex),
    status: item.status as Target["status"],
    message: (item.message as string | undefined) ?? "",
    componentsByType: (item.componentsByType as ComponentsForType[] | undefined) ?? [],
    createdAt: num(item.createdAt),
    updatedAt: num(item.updatedAt),
    conflictAttempts: num(item.conflictAttempts),
  };
  if (item.taskId !== undefined) target.taskId = item.taskId as string;
  if (item.rackExternalId !== undefined) target.rackExternalId = item.rackExternalId as string;
  if (item.versions !== undefined) target.versions = item.versions as VersionGroup[];
  if (item.priorVersions !== undefined) target.priorVersions = item.priorVersions as PriorVersion[];
  if (item.skippedComponents !== undefined)
    target.skippedComponents = item.skippedComponents as ComponentSkip[];
  if (item.failureDomain !== undefined) target.failureDomain = item.failureDomain as string;
  if (item.leaseExpiresAt !== undefined) target.leaseExpiresAt = num(item.leaseExpiresAt);
  if (item.firstBlockedAt !== undefined) target.firstBlockedAt = num(item.firstBlockedAt);
  if (item.retryAt !== undefined) target.retryAt = num(item.retryAt);
  if (item.failureReportedBy !== undefined) target.failureReportedBy = item.failureReportedBy as Actor;
  if (item.failureReportedAt !== undefined) target.failureReportedAt = num(item.failureReportedAt);
  return target;
}

/**
 * A history event as stored: the key (run, eventKey) and the event's fields as they are, nested
 * values as maps. The RunEvents stream carries this image to the publisher, which reads it back
 * with `itemToRunEvent`.
 */
export function runEventToItem(event: RunHistoryEvent): Item {
  return {
    runId: event.runId,
    eventKey: eventKey(event.at, event.seq),
    at: event.at,
    seq: event.seq,
    kind: event.kind,
    runName: event.runName,
    status: event.status,
    reason: event.reason,
    message: event.message,
    phaseIndex: event.phaseIndex,
    totalPhases: event.totalPhases,
    stats: event.stats,
    actor: event.actor,
    detail: event.detail,
  };
}

export function itemToRunEvent(item: Item): RunHistoryEvent {
  const event: RunHistoryEvent = {
    runId: item.runId as string,
    at: num(item.at),
    seq: num(item.seq),
    kind: item.kind as RunHistoryEvent["kind"],
    runName: item.runName as string,
    status: item.status as RunHistoryEvent["status"],
    reason: item.reason as RunHistoryEvent["reason"],
    message: (item.message as string | undefined) ?? "",
    phaseIndex: num(item.phaseIndex),
    totalPhases: num(item.totalPhases),
    stats: item.stats as RunHistoryEvent["stats"],
  };
  if (item.actor !== undefined) event.actor = item.actor as Actor;
  if (item.detail !== undefined) event.detail = item.detail as RunEventDetail;
  return event;
}

const ACTIVE_TASK = new Set(["PENDING", "RUNNING", "WAITING"]);

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A lowercase UUID as its 16 bytes; undefined when the text is not one. */
export function uuidBytes(id: string): Uint8Array | undefined {
  return UUID_TEXT.test(id) ? Buffer.from(id.replaceAll("-", ""), "hex") : undefined;
}

/**
 * Component ids as a binary set (16 bytes each, which `contains` can test in a FilterExpression)
 * and their order (a set has none): for each position, the id's index among the set's elements
 * sorted bytewise, one byte each. Undefined when any id is not a lowercase UUID, an id repeats,
 * there is none or more than 256 (the ids are then stored as a list, which `contains` tests too).
 */
function componentIdSet(ids: readonly string[]): { set: Set<Uint8Array>; order: Uint8Array } | undefined {
  const bytes = ids.map(uuidBytes);
  if (ids.length === 0 || ids.length > 256 || new Set(ids).size !== ids.length) return undefined;
  if (bytes.some((b) => b === undefined)) return undefined;
  const sorted = (bytes as Buffer[]).slice().sort(Buffer.compare);
  const order = Buffer.from((bytes as Buffer[]).map((b) => sorted.findIndex((s) => s.equals(b))));
  return { set: new Set(sorted), order };
}

function idsFromSet(set: Set<Uint8Array>, order: Uint8Array): string[] {
  const sorted = [...set].map((b) => Buffer.from(b)).sort(Buffer.compare);
  return [...order].flatMap((i) => unpackUuids(sorted[i] as Buffer));
}

/** 16 bytes per id → the ids as lowercase UUID text. */
export function unpackUuids(bytes: Uint8Array): string[] {
  const hex = Buffer.from(bytes).toString("hex");
  const ids: string[] = [];
  for (let i = 0; i + 32 <= hex.length; i += 32) {
    const h = hex.slice(i, i + 32);
    ids.push(`${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`);
  }
  return ids;
}

/** The preset dictionary a task's report is deflated with: its component ids, which it repeats. */
const reportDictionary = (componentIds: readonly string[]) => Buffer.from(componentIds.join(""), "utf8");

/**
 * What every task report repeats: its keys, the values of its enums, the default rule's header.
 * FROZEN: `reportZ2` items are read with it, so a change needs an attribute of its own.
 */
const REPORT_BOILERPLATE =
  '{"v":2,"targetVersion":"","overrideVersionCheck":false,"overrideReadinessCheck":false,' +
  '"rule":{"id":"00000000-0000-4000-8000-000000000001","version":1,"name":"default"},' +
  '"groupOrder":["POWERSHELF","NVSWITCH","COMPUTE","CDU","UMS","TORSWITCH"],"warnings":[""],' +
  '"error":{"name":"","message":""},"subTargets":[""],"progress":,' +
  '"status":"PENDING","status":"UPDATING","status":"SKIPPED","status":"NOT_ATTEMPTED",' +
  '"status":"TERMINATED","status":"FAILED","status":"COMPLETED",' +
  '"components":[{"id":"","type":"COMPUTE","status":"","versionBefore":"","requestId":"upd-';

/**
 * The preset dictionary of `reportZ2`: the boilerplate, then what this task's report repeats:
 * each component's id and the entry key of its first update (src/domain/command-sets.ts), so a
 * request id costs a back-reference instead of twelve hex digits; ~1,040 bytes of a 39-component
 * final report become ~550, which keeps the task item under 2 KB (a write unit less, five times
 * over: the table, a transaction's second copy, the three indexes).
 */
const reportDictionaryV2 = (taskId: string, componentIds: readonly string[]) =>
  Buffer.from(
    `${REPORT_BOILERPLATE}${taskId}.u0p0.","startedAt":,"finishedAt":,"versionAfter":"` +
      componentIds.map((id) => id + entryKey(updateAddress(taskId, 0), id)).join(""),
    "utf8",
  );

/**
 * A task item. Every task write pays for the item's size in the table and again in each of the
 * Tasks table's three ALL-projection indexes (four times in all, twice that in a transaction), so
 * the two large fields are stored compact:
 *   - `Task.report` (~10 KB of JSON for 39 components) deflated with a preset dictionary of what
 *     it repeats: its keys and enums, each component's id and first request id's entry key
 *     (`reportZ2`, binary: ~550 bytes for a finished 39-component task; `reportDictionaryV2`);
 *   - `componentIds`, when every one is a UUID (a task's always are), as a binary set of 16 bytes
 *     each (`componentIdSet`) and their order, a byte an id (`componentOrder`): 663 bytes for 39
 *     against 1,458 as a list of strings. A listing by component tests the set with `contains`
 *     in its FilterExpression (task-store.ts), so only the component's tasks leave the table.
 * Items written before hold `report` as text, `reportZ` (deflated, no dictionary) or `reportZd`
 * (the component ids alone as the dictionary: ~1 KB) and `componentIds` as a list or packed into
 * one binary (`componentIdsB`, 16 bytes an id, in order), and are read as they are.
 */
export function taskToItem(task: Task): Item {
  const { report, componentIds, ...rest } = task;
  const ids = componentIdSet(componentIds);
  const item: Item = {
    ...rest,
    ...(ids === undefined ? { componentIds } : { componentIdSet: ids.set, componentOrder: ids.order }),
    listPk: LIST_PARTITION.tasks,
    createdKey: createdKey(task.createdAt, task.id),
  };
  const text = Buffer.from(report, "utf8");
  if (componentIds.length > 0) {
    item.reportZ2 = deflateRawSync(text, { dictionary: reportDictionaryV2(task.id, componentIds), level: 9 });
  } else item.reportZ = deflateRawSync(text);
  if (ACTIVE_TASK.has(task.status)) item.activeRackId = task.rackId;
  return item;
}

export function itemToTask(item: Item): Task {
  const {
    listPk: _l,
    createdKey: _c,
    activeRackId: _a,
    reportZ2,
    reportZd,
    reportZ,
    report,
    componentIdSet: set,
    componentOrder,
    componentIdsB,
    componentIds: listed,
    ...rest
  } = item;
  const componentIds =
    set instanceof Set && componentOrder instanceof Uint8Array
      ? idsFromSet(set as Set<Uint8Array>, componentOrder)
      : componentIdsB instanceof Uint8Array
        ? unpackUuids(componentIdsB)
        : ((listed as string[]) ?? []);
  const text =
    reportZ2 instanceof Uint8Array
      ? inflateRawSync(reportZ2, { dictionary: reportDictionaryV2(String(rest.id), componentIds) }).toString(
          "utf8",
        )
      : reportZd instanceof Uint8Array
        ? inflateRawSync(reportZd, { dictionary: reportDictionary(componentIds) }).toString("utf8")
        : reportZ instanceof Uint8Array
          ? inflateRawSync(reportZ).toString("utf8")
          : ((report as string) ?? "");
  return { ...rest, componentIds, report: text } as unknown as Task;
}

export const rackPk = (id: string): string => `rack#${id}`;
export const componentPk = (id: string): string => `component#${id}`;
/** The `componentExtRef` of a component pointer: its (type, external id), the reference specs use. */
export const componentExternalRef = (type: ComponentType, externalId: string): string =>
  `${type}#${externalId}`;

export function rackToItem(rack: InventoryRack): Item {
  const componentIdsByType: Partial<Record<ComponentType, string[]>> = {};
  for (const c of rack.components) {
    const ids = componentIdsByType[c.type] ?? [];
    ids.push(c.id);
    componentIdsByType[c.type] = ids;
  }
  return {
    pk: rackPk(rack.id),
    kind: "rack",
    rack: rack,
    rackName: rack.name,
    rackExternalId: rack.externalId,
    nvlDomainId: rack.nvlDomain?.id,
    nvlDomainName: rack.nvlDomain?.name,
    scopePk: LIST_PARTITION.racks,
    componentIdsByType,
  };
}

export function itemToRack(item: Item): InventoryRack {
  return item.rack as InventoryRack;
}

/** A `byScope` index entry → the rack as the default scope plans it (components grouped by type). */
export function itemToScopeRack(item: Item): ScopeRack {
  const byType = (item.componentIdsByType ?? {}) as Partial<Record<ComponentType, string[]>>;
  const rack: ScopeRack = {
    id: (item.pk as string).slice(rackPk("").length),
    name: item.rackName as string,
    components: Object.entries(byType).flatMap(([type, ids]) =>
      (ids ?? []).map((id) => ({ id, type: type as ComponentType })),
    ),
  };
  if (item.rackExternalId !== undefined) rack.externalId = item.rackExternalId as string;
  return rack;
}

function num(value: unknown): number {
  return value === undefined ? 0 : Number(value);
}
