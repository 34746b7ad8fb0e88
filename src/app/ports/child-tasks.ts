/** Child tasks: submission and execution, the steps' BMC commands, credentials and versions. The contract rules for every port: src/app/ports.ts. */
import type { BmcCommand, EncryptedAuth } from "../../domain/bmc-protocol.js";
import type { BmcAddress } from "../../domain/bmc-topics.js";
import type {
  CommandEntry,
  CommandFamily,
  CommandSet,
  EntryWrite,
  WaitToStore,
  WakeOutput,
} from "../../domain/command-sets.js";
import type { ExternalCheckConfig, ExternalCheckRequest } from "../../domain/external-check.js";
import type {
  ComponentsForType,
  FirmwareAuthentication,
  FirmwareTemplate,
  VersionGroup,
} from "../../domain/model.js";
import type { OperationRule } from "../../domain/operation-rules.js";
import type { Task } from "../../domain/task.js";

// ---------------------------------------------------------------------------------------------
// Child tasks: submission and execution
//
// The dispatcher claims a target and hands it to a `ChildTaskSubmitter`; the task service
// (src/app/child-task/task-service.ts) implements it by taking the rack lock, creating the task
// under its idempotency key and starting a `TaskExecutor` execution (Step Functions in AWS and
// locally via aws-local-stepfunctions).
//
// When a child task ends, the task path records the outcome on the task AND on the run's target
// (RunStore.recordOutcome: counters move exactly once), releases the rack lock, and the DynamoDB
// stream of that target transition wakes the dispatcher for the run, which refills the slot.

/** `operation-run-target:<targetId>`: a retried submission finds the task instead of making a second. */
export const targetIdempotencyKey = (targetId: string): string => `operation-run-target:${targetId}`;

export interface ChildTaskRequest {
  idempotencyKey: string;
  runId: string;
  targetId: string;
  /** The target's phase, frozen on the task (Task.targetPhaseIndex). */
  phaseIndex?: number;
  /**
   * The target was PENDING when this submission's claim took it, so it was never submitted
   * before and no task can exist under the key: the service skips its idempotency lookup
   * (creating the task under the key still refuses a second one).
   */
  firstAttempt?: boolean;
  rackId: string;
  /** The target's frozen rack external id, frozen on the task too. */
  rackExternalId?: string;
  componentsByType: ComponentsForType[];
  /** Each component's version, frozen at create from the baselines (Target.versions). */
  versions?: VersionGroup[];
  /** The run's frozen rule (Run.rule); absent: the built-in default. */
  rule?: OperationRule;
  /** The run's frozen upgrade template; its targetSpec is ignored (the target is the rack). */
  template: FirmwareTemplate;
}

export type SubmitOutcome =
  /** The task exists (now or from an earlier attempt) and its execution was started. */
  | { kind: "submitted"; taskId: string }
  /** The rack is busy with another task (conflict strategy REJECT): block and back off. */
  | { kind: "conflict"; message: string }
  /** Any other submission error: the target fails with this text. */
  | { kind: "rejected"; message: string };

export interface ChildTaskSubmitter {
  /**
   * Idempotent per `idempotencyKey`: a retry (after a crash, a lost response or a lease expiry)
   * returns the same task id and never starts a second execution, so a rack is never flashed twice.
   */
  submit(request: ChildTaskRequest, now: number): Promise<SubmitOutcome>;
  /**
   * Best effort: stops the task's execution. When it stops, the task path records TERMINATED on the
   * task and its target. Stopping an already finished task is a no-op.
   */
  cancel(taskId: string, reason: string): Promise<void>;
}

/** Runs one child task. Implementations: Step Functions (AWS), aws-local-stepfunctions (local). */
export interface TaskExecutor {
  /** Idempotent: the execution name is the task id, so a repeat start returns the same execution. */
  start(task: Task): Promise<{ executionId: string }>;
  /** Idempotent: stopping a stopped or finished execution is a no-op. */
  stop(executionId: string, cause: string): Promise<void>;
}

/**
 * Wakes the dispatcher for one run (a slot freed, a phase may be complete, a gate may trip), called
 * by whoever just recorded a target's outcome. Best effort and never throws: the targets stream
 * wakes the run too, a little later, and the tick after that. Resolves once the wake-up is handed
 * on (an asynchronous Lambda invocation accepted; locally, a pass queued), not when the pass ends.
 */
export interface RunWaker {
  wake(runId: string): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Child-task steps: BMC requests and commands, credentials, firmware versions

/**
 * A cheap question to the data store that says whether it can be reached: resolves when it
 * answered (whatever it answered), rejects when it could not be reached or kept throttling.
 */
export interface StoreProbe {
  probe(): Promise<void>;
}

/**
 * A child task's BMC commands as command sets (src/domain/command-sets.ts): one record per task and
 * family (updates, preflight queries, verify queries), one entry per command. Every report for
 * one of a task's commands lands on its entry, found from the request id alone.
 */
export interface CommandSetStore {
  /**
   * Adds `entries` to the task's `family` record, creating it if absent; an entry already there
   * keeps what it holds (its first window and publication: a retried step learns it published).
   * A closed record (`close`) takes none: it is returned as it is, with its `closedAt`. Returns
   * the record as stored. One write.
   *
   * With `part` (the update set only): the entries go in that part of the set, closed by `close`
   * like the set's first record.
   *
   * With `wake`: the same write also stores that the execution holding `wake.token` waits for
   * the entries `wake.keys` (as `awaitAnswers`, replacing a wait stored before): a step that
   * sends from its own wait writes its commands and its token at once. A closed record takes
   * neither.
   *
   * With `rackId`: the rack the commands go to, stored with the record's first write (it stays).
   */
  open(
    taskId: string,
    family: CommandFamily,
    entries: Record<string, CommandEntry>,
    part?: number,
    wake?: WaitToStore,
    rackId?: string,
  ): Promise<CommandSet>;
  /**
   * Closes the task's update and verify records and these parts of its update set (creating them
   * if absent): no `open` adds a command to them again; reports on the commands already there are
   * still stored. The first close stays. One write each, at once.
   */
  close(taskId: string, now: number, parts: readonly number[]): Promise<void>;
  /** Marks these entries of the record (`part`: that part of the update set) published (the first time stays). One write. */
  markPublished(
    taskId: string,
    family: CommandFamily,
    entryKeys: readonly string[],
    now: number,
    part?: number,
  ): Promise<void>;
  /**
   * Stores that the execution holding `wake.token` waits for the entries `wake.keys` (replacing a
   * wait stored before), with its heartbeat (`heartbeatSeconds`; absent: the wait has none), and
   * returns the record as it is then, so the caller sees results that came first. Undefined: no
   * such record. One write.
   */
  awaitAnswers(
    taskId: string,
    family: CommandFamily,
    wake: WaitToStore,
    part?: number,
  ): Promise<CommandSet | undefined>;
  /** One record (`part`: that part of the update set), strongly consistent; undefined: no such record. */
  get(taskId: string, family: CommandFamily, part?: number): Promise<CommandSet | undefined>;
  /**
   * The whole update set: its first record and these parts, merged (src/domain/command-sets.ts
   * `mergeParts`), in ONE strongly consistent request; undefined: none of them exists.
   */
  getUpdates(taskId: string, parts: readonly number[]): Promise<CommandSet | undefined>;
  /**
   * The task item and its records of these families in ONE strongly consistent request, where the
   * store keeps them together (DynamoDB: one BatchGetItem on the Tasks table), and these `parts`
   * of the update set, merged as `u` (with its first record when "u" is among the families).
   * Absent: the caller reads them apart (task-item.ts `loadTaskWith`).
   */
  getWithTask?(
    taskId: string,
    families: readonly CommandFamily[],
    parts?: readonly number[],
  ): Promise<{ task: Task | undefined; sets: Partial<Record<CommandFamily, CommandSet>> }>;
  /**
   * The `family` records of many tasks, by task id (those without one left out), for listings:
   * eventually consistent, one request per 100 records; the update set with these `parts` merged in.
   */
  getMany(
    taskIds: readonly string[],
    family: CommandFamily,
    parts?: readonly number[],
  ): Promise<Map<string, CommandSet>>;
  /**
   * Re-driven tasks: these entries (by key) get their new window and are no longer marked
   * published, so the next send step publishes them again under the same request ids. One write.
   */
  reopen(
    taskId: string,
    family: CommandFamily,
    windows: Record<string, { sentAt: number; deadline: number }>,
    part?: number,
  ): Promise<void>;
  /**
   * Stores BMC reports' changes (`writes`, by entry key) on one record, in ONE conditional write:
   * every entry must exist, a result or an answer only where none is stored (the first wins),
   * progress only upwards and only before a result, a lone acknowledgement only where none is
   * stored. All or nothing: 'refused' writes nothing and returns the record as it is (absent: no
   * such record), from which the caller works out what still changes something and writes that.
   * 'written' returns the record after only with `returnSet` (a receiver that wakes waits: is a
   * waiting execution's wave complete, or still reporting?), on the same write (DynamoDB
   * ReturnValues: no request and no read unit more, only the response's bytes: a stage's part is
   * a few hundred); otherwise the caller knows what it wrote. `heardAt` (when the reports were
   * received): the same write also stores it as the record's last write of reports, and the one
   * stored before as the one before it (`CommandSet.heard`, read back with the set), so the
   * receiver paces heartbeats from the record itself (`heartbeatDue`). `rackId` (the rack whose
   * topic the reports came on): refused, like any other condition, when the record stores another
   * rack (`CommandSet.rackId`), so a rack's agent cannot store reports on another rack's commands.
   */
  record(
    taskId: string,
    family: CommandFamily,
    writes: Record<string, EntryWrite>,
    options?: { returnSet?: boolean; part?: number; heardAt?: number; rackId?: string },
  ): Promise<{ outcome: "written"; set?: CommandSet } | { outcome: "refused"; set?: CommandSet }>;
}

/**
 * Wakes an execution waiting in its AwaitWave state (Step Functions SendTaskSuccess with the task
 * token the wait stored). A token the execution no longer waits on (it timed out into its check,
 * or was woken already, or ended) is no error: nothing happens. Throws only when the wake-up may
 * not have been delivered (the service unreachable): the caller tries again.
 */
export interface WaveWaker {
  /**
   * `output`: the waiting state's result: what the wait waited for, as stored (`awaitedAnswers`),
   * within the wait's resume when it stored one (`wakeOutput`).
   */
  wake(token: string, output: WakeOutput): Promise<void>;
  /**
   * Keeps the wait alive (Step Functions SendTaskHeartbeat): its BMCs are still heard from, so its
   * heartbeat timeout (`awaitSeconds`) starts again. A token whose wait is over is no error, as
   * for `wake`; throws when the service could not be reached.
   */
  heartbeat(token: string): Promise<void>;
  /**
   * Ends the wait with an error (Step Functions SendTaskFailure: `error` its name, which the
   * state's Catch matches, `cause` why): how a judging wait ends when it sends no next step
   * (src/domain/step-errors.ts `JUDGE_EXITS`). A token whose wait is over is no error, as for `wake`.
   */
  fail(token: string, error: string, cause: string): Promise<void>;
}

/** What the receiver uses of the WaveWaker: it wakes and keeps waits alive, it never fails one. */
export type ReportWaker = Pick<WaveWaker, "wake" | "heartbeat">;

/**
 * Hands a rack to an external health check (src/domain/external-check.ts): a Lambda invoked
 * asynchronously, an HTTPS endpoint POSTed to, a command (the local stack). Resolves once the
 * check has the request; throws when it cannot be handed over. The check answers later, with the
 * request's task token (SendTaskSuccess).
 */
export interface ExternalCheckRunner {
  start(check: ExternalCheckConfig, request: ExternalCheckRequest): Promise<void>;
}

/** Firmware credentials of a plain UpgradeFirmware task (run children use RunStore.getRunSecrets). */
export interface TaskSecretStore {
  put(taskId: string, authentication: FirmwareAuthentication): Promise<void>;
  get(taskId: string): Promise<FirmwareAuthentication | undefined>;
}

/** Encrypts one credential for one BMC; only that BMC can open it. */
export interface BmcAuthSealer {
  seal(secret: string, to: BmcAddress, requestId: string): Promise<EncryptedAuth>;
}

/** Records verified firmware versions on the inventory's components. Idempotent. */
export interface FirmwareVersionRecorder {
  /**
   * `at`: where each component was in the rack's inventory when the task's preflight read it
   * (its index in the rack's components). Where it names every component, the versions are
   * written there without a read first, on the condition that each index still holds its
   * component; otherwise (or that condition failed: an import moved them) the rack is read first.
   */
  record(
    rackId: string,
    versions: readonly { componentId: string; version: string }[],
    at?: Readonly<Record<string, number>>,
  ): Promise<void>;
}

/** The port the child task's steps depend on. Implementations must be safe to call twice. */
export interface BmcCommandPublisher {
  /** Publishes on the BMC's command topic, which names its rack (src/domain/bmc-topics.ts). */
  publish(to: BmcAddress, command: BmcCommand): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Secrets

/** Authenticated encryption of small secrets; `context` is bound in (AAD), e.g. the run id. */
export interface Cipher {
  encrypt(plaintext: Uint8Array, context: string): Promise<Uint8Array>;
  /** Throws if the ciphertext or its context was tampered with. */
  decrypt(ciphertext: Uint8Array, context: string): Promise<Uint8Array>;
}
