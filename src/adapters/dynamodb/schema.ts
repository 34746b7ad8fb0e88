/**
 * The DynamoDB tables as plain data, read by BOTH the local stack (CreateTable, see tables.ts) and
 * the CDK app (infra/), so the two cannot drift. docs/data-model.md puts every access pattern next
 * to the key or index that serves it.
 *
 * Six tables, one per aggregate, because each has a different lifecycle and hot path: runs (few,
 * hot items: the in-flight counter), targets (≤ 100 per run, under the run's partition), run
 * events (the run's history: insert-only, under the run's partition, its stream published to
 * EventBridge), tasks (one per rack operation, ever growing), inventory (bulk-loaded, read
 * mostly), rack locks (short-lived, TTL). Transactions span tables freely, so nothing is lost by
 * splitting them: a run change and the history events it records commit in one.
 *
 * Sort keys that carry numbers are zero-padded strings so that string order is numeric order:
 * `createdKey` = 15-digit epoch ms + "#" + id (newest first = descending, ties by id descending);
 * `orderKey` = "p" + 4-digit phase + "#s" + 6-digit sequence (phase, then sequence, ascending).
 * `queueKey` = "p" + 4-digit phase + "#" + class + "#s" + 6-digit sequence, on targets not yet handed
 * to a task only; class 0 = held (BLOCKED or CLAIMED), class 1 = PENDING. One key range per class
 * and phase, each in sequence order, so a pass reads every held target and only the first k
 * PENDING ones (Limit k).
 * `eventKey` = 15-digit run version (the run's updatedAt the change wrote) + "#" + 2-digit position
 * within that write: the history in the order it happened, ascending.
 */

export type AttributeType = "S" | "N";

export interface KeyAttribute {
  name: string;
  type: AttributeType;
}

export interface IndexDefinition {
  name: string;
  partitionKey: KeyAttribute;
  sortKey?: KeyAttribute;
  /** ALL, KEYS_ONLY, or INCLUDE with the listed non-key attributes. */
  projection: { type: "ALL" } | { type: "KEYS_ONLY" } | { type: "INCLUDE"; attributes: string[] };
  /** A sparse index: only items that carry the partition key attribute appear in it. */
  sparse: boolean;
  /** Which access pattern it serves (also in docs/data-model.md). */
  serves: string;
}

export interface TableDefinition {
  /** The logical name: CDK construct id, local table name suffix (`<prefix><logicalName>`). */
  logicalName: "Runs" | "Targets" | "RunEvents" | "Tasks" | "Inventory" | "RackLocks";
  partitionKey: KeyAttribute;
  sortKey?: KeyAttribute;
  globalSecondaryIndexes: IndexDefinition[];
  /** Local secondary indexes share the table's partition key; only the sort key differs. */
  localSecondaryIndexes: (Omit<IndexDefinition, "partitionKey" | "sortKey"> & { sortKey: KeyAttribute })[];
  stream: "NEW_AND_OLD_IMAGES" | "NEW_IMAGE" | undefined;
  /** Epoch SECONDS; DynamoDB deletes the item some time after it passes. */
  ttlAttribute: string | undefined;
}

export const INDEX = {
  runsByCreated: "byCreated",
  runsActive: "active",
  runsDue: "due",
  targetsByOrder: "byOrder",
  targetsQueued: "queued",
  tasksByRack: "byRack",
  tasksActiveByRack: "activeByRack",
  tasksByCreated: "byCreated",
  racksByName: "byName",
  racksByExternalId: "byExternalId",
  racksByNvlDomainId: "byNvlDomainId",
  racksByNvlDomainName: "byNvlDomainName",
  racksInScope: "byScope",
  componentsByExternalRef: "byComponentExternalRef",
} as const;

/** Fixed partition values of the list indexes (one partition: fine at thousands of runs). */
export const LIST_PARTITION = {
  runs: "RUN",
  activeRuns: "ACTIVE",
  dueRuns: "DUE",
  tasks: "TASK",
  racks: "RACK",
} as const;

const S = (name: string): KeyAttribute => ({ name, type: "S" });

export const RUNS_TABLE: TableDefinition = {
  logicalName: "Runs",
  partitionKey: S("runId"),
  globalSecondaryIndexes: [
    {
      name: INDEX.runsByCreated,
      partitionKey: S("listPk"),
      sortKey: S("createdKey"),
      // The summary fields ListOperationRuns filters on; the page's full items are then batch-read.
      projection: {
        type: "INCLUDE",
        attributes: ["name", "status", "reason", "operationKind", "createdAt"],
      },
      // Only committed runs carry listPk: an uncommitted (mid-create) run is invisible here.
      sparse: true,
      serves: "list runs newest first (ties by id desc), filters, offset pagination, total",
    },
    {
      name: INDEX.runsActive,
      partitionKey: S("activePk"),
      sortKey: S("runId"),
      projection: { type: "KEYS_ONLY" },
      sparse: true,
      serves: "dispatcher: runs in PENDING or RUNNING (cost grows with active runs, not history)",
    },
    {
      name: INDEX.runsDue,
      partitionKey: S("duePk"),
      // When the run next needs a dispatcher pass (epoch ms; 0 = now): due-index.ts.
      sortKey: { name: "dueAt", type: "N" },
      projection: { type: "KEYS_ONLY" },
      // Only runs that will need a pass carry duePk: one waiting for its flashes to end does not.
      sparse: true,
      serves:
        "dispatcher's tick: runs that need a pass by now (cost grows with the runs to serve, not the active ones)",
    },
  ],
  localSecondaryIndexes: [],
  stream: "NEW_AND_OLD_IMAGES",
  ttlAttribute: undefined,
};

export const TARGETS_TABLE: TableDefinition = {
  logicalName: "Targets",
  partitionKey: S("runId"),
  sortKey: S("targetId"),
  globalSecondaryIndexes: [],
  localSecondaryIndexes: [
    {
      name: INDEX.targetsByOrder,
      sortKey: S("orderKey"),
      projection: { type: "ALL" },
      sparse: false,
      serves:
        "targets of a run in phase-then-sequence order, by phase range (key condition) and status (filter)",
    },
    {
      name: INDEX.targetsQueued,
      sortKey: S("queueKey"),
      projection: { type: "ALL" },
      // Only targets not yet handed to a task (PENDING, BLOCKED, CLAIMED) carry queueKey.
      sparse: true,
      serves:
        "dispatcher: a phase's held targets (BLOCKED, CLAIMED) and its first k PENDING ones, strongly consistent; cost grows with what a pass claims, not with the phase",
    },
  ],
  stream: "NEW_AND_OLD_IMAGES",
  // Set only on targets written before their run's commit; removed when the run is sealed.
  ttlAttribute: "expiresAt",
};

export const RUN_EVENTS_TABLE: TableDefinition = {
  logicalName: "RunEvents",
  partitionKey: S("runId"),
  sortKey: S("eventKey"),
  // The one read is the history of a run, oldest first: a Query on the key alone.
  globalSecondaryIndexes: [],
  localSecondaryIndexes: [],
  // Events are only ever inserted, so the new image is the whole record; the publisher reads it
  // (src/adapters/dynamodb/run-event-records.ts) and sends each event to EventBridge.
  stream: "NEW_IMAGE",
  // A run's history lives as long as the run (runs never expire).
  ttlAttribute: undefined,
};

export const TASKS_TABLE: TableDefinition = {
  logicalName: "Tasks",
  // Task items: the task id. Idempotency items: "idem:" + key (they carry no index attributes).
  partitionKey: S("id"),
  globalSecondaryIndexes: [
    {
      name: INDEX.tasksByRack,
      partitionKey: S("rackId"),
      sortKey: S("createdKey"),
      projection: { type: "ALL" },
      sparse: true,
      serves: "tasks of a rack, newest first (component filter applied on top)",
    },
    {
      name: INDEX.tasksActiveByRack,
      partitionKey: S("activeRackId"),
      sortKey: S("createdKey"),
      projection: { type: "ALL" },
      sparse: true,
      serves: "active (non-terminal) tasks of a rack",
    },
    {
      name: INDEX.tasksByCreated,
      partitionKey: S("listPk"),
      sortKey: S("createdKey"),
      projection: { type: "ALL" },
      sparse: true,
      serves: "all tasks newest first (ListTasks without a rack)",
    },
  ],
  localSecondaryIndexes: [],
  // No stream: nothing decides on task items (a task's outcome reaches its run through its target,
  // on the Targets stream). The stream it had until 2026-12-02 was never consumed; in the local
  // stack it cost moto a stream record per write (the images of every task and command-set item).
  stream: undefined,
  // The child task's `cmds#<taskId>#<family>` command sets carry `ttl` (epoch seconds: their
  // latest deadline plus a retention, command-set-store.ts); tasks themselves never expire.
  ttlAttribute: "ttl",
};

export const INVENTORY_TABLE: TableDefinition = {
  logicalName: "Inventory",
  // "rack#<id>" (the rack with its components) and "component#<id>" (a pointer to the rack).
  partitionKey: S("pk"),
  globalSecondaryIndexes: [
    {
      name: INDEX.racksByName,
      partitionKey: S("rackName"),
      projection: { type: "ALL" },
      sparse: true,
      serves: "rack by name",
    },
    {
      name: INDEX.racksByExternalId,
      partitionKey: S("rackExternalId"),
      projection: { type: "ALL" },
      sparse: true,
      serves: "rack by external id",
    },
    {
      name: INDEX.racksByNvlDomainId,
      partitionKey: S("nvlDomainId"),
      projection: { type: "ALL" },
      sparse: true,
      serves: "racks of an NVLink domain by domain id",
    },
    {
      name: INDEX.racksByNvlDomainName,
      partitionKey: S("nvlDomainName"),
      projection: { type: "ALL" },
      sparse: true,
      serves: "racks of an NVLink domain by domain name",
    },
    {
      name: INDEX.racksInScope,
      partitionKey: S("scopePk"),
      sortKey: S("pk"),
      // What planning the default scope reads of a rack: about 40 bytes a component where the rack
      // item is ~4 KB, and none of the ~40 pointer items per rack a Scan of the table also reads.
      projection: { type: "INCLUDE", attributes: ["rackName", "rackExternalId", "componentIdsByType"] },
      // Only rack items carry scopePk.
      sparse: true,
      serves:
        "the default scope: racks in id order with their component ids by type, read until 101 qualify (a run takes at most 100)",
    },
    {
      name: INDEX.componentsByExternalRef,
      partitionKey: S("componentExtRef"),
      projection: { type: "INCLUDE", attributes: ["rackId"] },
      // Only component pointers of components with an external id carry componentExtRef.
      sparse: true,
      serves:
        "components by (type, external id): every rack holding one, so a reference two components share is ambiguous",
    },
  ],
  localSecondaryIndexes: [],
  stream: undefined,
  ttlAttribute: undefined,
};

export const RACK_LOCKS_TABLE: TableDefinition = {
  logicalName: "RackLocks",
  partitionKey: S("rackId"),
  globalSecondaryIndexes: [],
  localSecondaryIndexes: [],
  stream: undefined,
  // Expired locks are also ignored by the acquire condition; TTL only tidies them away.
  ttlAttribute: "ttl",
};

export const TABLES: readonly TableDefinition[] = [
  RUNS_TABLE,
  TARGETS_TABLE,
  RUN_EVENTS_TABLE,
  TASKS_TABLE,
  INVENTORY_TABLE,
  RACK_LOCKS_TABLE,
];

export interface TableNames {
  runs: string;
  targets: string;
  runEvents: string;
  tasks: string;
  inventory: string;
  rackLocks: string;
}

/** Local and test names: `<prefix>Runs`, … (CDK lets CloudFormation name them). */
export function tableNames(prefix: string): TableNames {
  return {
    runs: `${prefix}Runs`,
    targets: `${prefix}Targets`,
    runEvents: `${prefix}RunEvents`,
    tasks: `${prefix}Tasks`,
    inventory: `${prefix}Inventory`,
    rackLocks: `${prefix}RackLocks`,
  };
}

export function tableNameOf(names: TableNames, def: TableDefinition): string {
  switch (def.logicalName) {
    case "Runs":
      return names.runs;
    case "Targets":
      return names.targets;
    case "RunEvents":
      return names.runEvents;
    case "Tasks":
      return names.tasks;
    case "Inventory":
      return names.inventory;
    case "RackLocks":
      return names.rackLocks;
  }
}

/** Epoch ms, 15 digits: good until the year 33658. */
export function createdKey(createdAt: number, id: string): string {
  return `${String(createdAt).padStart(15, "0")}#${id}`;
}

/** "p0002#s000017": phase 2, sequence 17. */
export function orderKey(phaseIndex: number, sequenceIndex: number): string {
  return `p${String(phaseIndex).padStart(4, "0")}#s${String(sequenceIndex).padStart(6, "0")}`;
}

export type QueueClass = "held" | "pending";

function queuePrefix(phaseIndex: number, cls: QueueClass): string {
  return `p${String(phaseIndex).padStart(4, "0")}#${cls === "held" ? 0 : 1}#`;
}

/** The queueKey of a target in `cls`; see the module comment. */
export function queueKey(phaseIndex: number, sequenceIndex: number, cls: QueueClass): string {
  return `${queuePrefix(phaseIndex, cls)}s${String(sequenceIndex).padStart(6, "0")}`;
}

/** The inclusive queueKey range of one phase's targets in `cls`. */
export function queueKeyRange(phaseIndex: number, cls: QueueClass): [string, string] {
  const prefix = queuePrefix(phaseIndex, cls);
  return [prefix, `${prefix}~`];
}

/** The queue class of a target status; undefined once the target is handed to a task or done. */
export function queueClassOf(status: string): QueueClass | undefined {
  if (status === "PENDING") return "pending";
  return status === "BLOCKED" || status === "CLAIMED" ? "held" : undefined;
}

/** "001800000001000#01": the second event written with run version 1800000001000. */
export function eventKey(at: number, seq: number): string {
  return `${String(at).padStart(15, "0")}#${String(seq).padStart(2, "0")}`;
}

/** The inclusive orderKey range of phases `from..to`. */
export function phaseKeyRange(from: number, to: number): [string, string] {
  return [`p${String(from).padStart(4, "0")}#`, `p${String(to).padStart(4, "0")}#~`];
}
