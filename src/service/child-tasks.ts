/**
 * The child-task machinery from its parts, assembled the same way on AWS (the task-steps,
 * bmc-result, dispatcher and stream-evaluator Lambdas, the gRPC front) and on the local stack
 * (local/child-tasks.ts): the BMC request and task secret records in the Tasks table, the sealer
 * of BMC credentials, the outcome recorder's deps, and from them the step handlers, the task
 * service and the bmc-result receiver. What differs between the two is passed in: the executor
 * (Step Functions, or local/step-functions.ts running the same ASL), the publisher's client (IoT
 * Core, or the local IoT shim), the waker (the dispatcher Lambda, or a pass in-process), the logger
 * and metrics (Powertools on AWS, lines or nothing locally).
 */
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { DynamoCommandSetStore } from "../adapters/dynamodb/command-set-store.js";
import { DynamoTaskSecretStore } from "../adapters/dynamodb/task-secret-store.js";
import { CipherBmcAuthSealer } from "../adapters/stepfunctions/bmc-auth.js";
import type { TaskStepsDeps } from "../app/child-task/deps.js";
import type { CommandImageDeps } from "../app/child-task/images.js";
import type { OutcomeDeps } from "../app/child-task/outcome.js";
import { type BmcResultReceiver, createBmcResultReceiver } from "../app/child-task/receiving.js";
import { cachedRunSecrets } from "../app/child-task/run-secrets-cache.js";
import { createTaskSteps, type TaskSteps } from "../app/child-task/steps.js";
import { createTaskService, type TaskService, type TaskServiceDeps } from "../app/child-task/task-service.js";
import type { Logger, Metrics } from "../app/observability.js";
import type { PlanInventory } from "../app/plan-inventory.js";
import type {
  BmcAuthSealer,
  BmcCommandPublisher,
  Cipher,
  FirmwareVersionRecorder,
  RackLockStore,
  ReadinessStore,
  RunStore,
  RunWaker,
  TaskStore,
  WaveWaker,
} from "../app/ports.js";

export interface ChildTaskPartsDeps {
  doc: DynamoDBDocumentClient;
  /** Command sets (the BMC commands and their reports) and task secrets live in the Tasks table. */
  tasksTable: string;
  stores: {
    tasks: TaskStore;
    runs: Pick<RunStore, "getRunSecrets" | "recordOutcome" | "recordPriorVersions">;
    locks: RackLockStore;
  };
  /**
   * Seals credentials at rest and for the BMC; `keyId` is what a BMC command names as its key.
   * Absent: a task with credentials is refused.
   */
  cipher?: { cipher: Cipher; keyId: string };
  /** Where a task's verified versions go on inventory (at its end: every ending records them). */
  firmware: FirmwareVersionRecorder;
  clock: () => number;
  waker?: RunWaker;
  /** Wakes executions waiting for their wave (AwaitWave): the steps and the receiver use it. */
  waveWaker?: WaveWaker;
  metrics?: Metrics;
  /** Every part logs through it: the steps, the task service, the receiver, the outcome recorder. */
  logger?: Logger;
}

export interface ChildTaskParts {
  runs: Pick<RunStore, "getRunSecrets" | "recordOutcome" | "recordPriorVersions">;
  commands: DynamoCommandSetStore;
  secrets: DynamoTaskSecretStore;
  sealer: BmcAuthSealer;
  /** What recording an outcome needs: the step `recordOutcome`, cancels and execution endings alike. */
  outcome: OutcomeDeps;
  waveWaker?: WaveWaker;
}

const noCipher: BmcAuthSealer = {
  seal: async () => {
    throw new Error("firmware credentials need a cipher; none is configured");
  },
};

export function childTaskParts(deps: ChildTaskPartsDeps): ChildTaskParts {
  const { stores } = deps;
  const commands = new DynamoCommandSetStore(deps.doc, deps.tasksTable);
  return {
    // The steps read a run's credentials at every update wave: kept a few minutes per process.
    runs: {
      ...cachedRunSecrets(stores.runs, deps.clock),
      recordOutcome: (...args) => stores.runs.recordOutcome(...args),
      recordPriorVersions: (...args) => stores.runs.recordPriorVersions(...args),
    },
    commands,
    secrets: new DynamoTaskSecretStore(deps.doc, deps.tasksTable, deps.cipher?.cipher),
    sealer: deps.cipher ? new CipherBmcAuthSealer(deps.cipher.cipher, deps.cipher.keyId) : noCipher,
    outcome: {
      tasks: stores.tasks,
      runs: stores.runs,
      locks: stores.locks,
      commands,
      firmware: deps.firmware,
      clock: deps.clock,
      ...(deps.waker === undefined ? {} : { waker: deps.waker }),
      ...(deps.metrics === undefined ? {} : { metrics: deps.metrics }),
      ...(deps.logger === undefined ? {} : { logger: deps.logger }),
    },
    ...(deps.waveWaker === undefined ? {} : { waveWaker: deps.waveWaker }),
  };
}

/** Every Task state of the child-task state machine. */
export function childTaskSteps(
  parts: ChildTaskParts,
  deps: {
    publisher: BmcCommandPublisher;
    readiness: Pick<ReadinessStore, "notReady" | "rackComponents">;
    /** The deployment's external health checks (CHECK_HEALTH steps that name one). */
    externalChecks?: TaskStepsDeps["externalChecks"];
  } & CommandImageDeps,
): TaskSteps {
  return createTaskSteps({
    ...parts.outcome,
    runs: parts.runs,
    commands: parts.commands,
    secrets: parts.secrets,
    sealer: parts.sealer,
    ...(parts.waveWaker === undefined ? {} : { waveWaker: parts.waveWaker }),
    ...deps,
  });
}

/** The dispatcher's submitter and the TasksApi, starting and stopping executions on `executor`. */
export function childTaskService(
  parts: ChildTaskParts,
  deps: Pick<TaskServiceDeps, "executor" | "newId" | "policy" | "images"> & {
    inventory: PlanInventory;
  },
): TaskService {
  return createTaskService({
    ...parts.outcome,
    commands: parts.commands,
    secrets: parts.secrets,
    ...deps,
  });
}

/** BMC reports onto their command sets; execution endings onto the task, target and lock. */
export function bmcResultReceiver(parts: ChildTaskParts): BmcResultReceiver {
  return createBmcResultReceiver({
    commands: parts.commands,
    outcome: parts.outcome,
    clock: parts.outcome.clock,
    ...(parts.outcome.logger === undefined ? {} : { logger: parts.outcome.logger }),
    ...(parts.waveWaker === undefined ? {} : { waveWaker: parts.waveWaker }),
  });
}
