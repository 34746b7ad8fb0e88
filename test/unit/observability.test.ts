/**
 * Logs and metrics as CloudWatch receives them from the deployables (Powertools, src/adapters/
 * observability/): JSON lines with the service, the Lambda context and the invocation's correlation
 * keys; EMF lines under the names, namespace and single `Service` dimension the dashboard reads; and
 * the task path driven end to end (the same ASL, on in-memory stores) with a firmware credential,
 * whose lines carry the run and task ids and never the credential. Also the line sink's repeat fold.
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { Context } from "aws-lambda";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LocalStepFunctionsExecutor } from "../../local/step-functions.js";
import { LocalAesGcmCipher } from "../../src/adapters/dynamodb/cipher.js";
import { lambdaObservability } from "../../src/adapters/observability/lambda.js";
import { powertoolsObservability } from "../../src/adapters/observability/powertools.js";
import { CipherBmcAuthSealer } from "../../src/adapters/stepfunctions/bmc-auth.js";
import { createBmcResultReceiver } from "../../src/app/child-task/receiving.js";
import { createTaskSteps } from "../../src/app/child-task/steps.js";
import { createTaskService } from "../../src/app/child-task/task-service.js";
import { FLOW_METRIC_NAMES, foldRepeats, metricUnit } from "../../src/app/observability.js";
import type { BmcCommandPublisher, RunStore } from "../../src/app/ports.js";
import type { BmcCommand, BmcEvent } from "../../src/domain/bmc-protocol.js";
import type { BmcAddress } from "../../src/domain/bmc-topics.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import { type CapturedOutput, captureOutput } from "../support/captured-output.js";
import { CREDENTIAL_CANARY } from "../support/credential-canary.js";
import {
  memoryCommandSetStore,
  memoryLockStore,
  memorySecretStore,
  memoryTaskStore,
} from "../support/memory-child-task.js";
import { everyImage } from "../support/memory-images.js";
import { MemoryInventoryStore } from "../support/memory-stores.js";

let output: CapturedOutput;
beforeEach(() => {
  output = captureOutput();
});
afterEach(() => output.restore());

/** A Lambda context as the runtime passes it (the fields Powertools reads). */
function lambdaContext(functionName: string, requestId: string): Context {
  return {
    functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: `arn:aws:lambda:eu-west-1:123456789012:function:${functionName}`,
    memoryLimitInMB: "512",
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: "2026/12/01/[$LATEST]0",
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => 30_000,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

const metricLines = () => output.json().filter((l) => l._aws !== undefined);
const logLines = () => output.json().filter((l) => l._aws === undefined);

describe("Powertools logger and metrics (every deployable; the Fargate front as is)", () => {
  it("one JSON line per entry: level, message, timestamp, service, then the fields", () => {
    const { logger } = powertoolsObservability("grpc");
    logger.info("flow gRPC front listening", { host: "0.0.0.0", port: 50051 });
    logger.warn("could not wake the dispatcher; the targets stream will", { runId: "r-1" });
    logger.error("dispatch pass failed");
    expect(output.lines()).toHaveLength(3);
    expect(logLines()).toEqual([
      expect.objectContaining({
        level: "INFO",
        message: "flow gRPC front listening",
        service: "grpc",
        timestamp: expect.any(String),
        host: "0.0.0.0",
        port: 50051,
      }),
      expect.objectContaining({ level: "WARN", service: "grpc", runId: "r-1" }),
      expect.objectContaining({ level: "ERROR", message: "dispatch pass failed", service: "grpc" }),
    ]);
    // A field named like one of the line's own keys is kept under another name, not dropped.
    logger.info("gRPC call failed", { message: "deadline", level: 3 });
    expect(logLines().at(-1)).toMatchObject({
      level: "INFO",
      message: "gRPC call failed",
      field_message: "deadline",
      field_level: 3,
    });
    expect(output.lines()).toHaveLength(4);
  });

  it("metrics: one EMF line per flush, namespace Flow, the one dimension Service, each name with its unit", () => {
    const { metrics } = powertoolsObservability("dispatcher");
    // Nothing added: a flush writes nothing, not even a warning.
    metrics.flush();
    expect(output.lines()).toEqual([]);

    for (const name of FLOW_METRIC_NAMES) metrics.add(name, 1);
    metrics.add("DispatchLatencyMs", 42);
    metrics.flush();
    metrics.flush();
    expect(output.lines()).toHaveLength(1);
    const [line] = metricLines();
    expect(line?._aws).toEqual({
      Timestamp: expect.any(Number),
      CloudWatchMetrics: [
        {
          Namespace: "Flow",
          Dimensions: [["Service"]],
          Metrics: FLOW_METRIC_NAMES.map((Name) => ({ Name, Unit: metricUnit(Name) })),
        },
      ],
    });
    expect(line?.Service).toBe("dispatcher");
    expect(line).not.toHaveProperty("service");
    // Two values between flushes are two data points: Sum adds them, percentiles see each.
    expect(line?.DispatchLatencyMs).toEqual([1, 42]);
    expect(line?.TargetsDispatched).toBe(1);
    expect(metricUnit("TickOverrunMs")).toBe("Milliseconds");
    expect(metricUnit("GateTrips")).toBe("Count");
  });
});

describe("a Lambda invocation (src/adapters/observability/lambda.ts)", () => {
  it("every line of an invocation carries the Lambda context and the event's keys, and only that invocation's", async () => {
    const obs = lambdaObservability("task-steps");
    await obs.invoke(lambdaContext("Flow-test-task-steps", "req-1"), { taskId: "t-1" }, async () => {
      obs.logger.info("task started", { rackId: "rack-1" });
      obs.logger.warn("second line");
    });
    obs.logger.info("between invocations");
    await obs.invoke(
      lambdaContext("Flow-test-task-steps", "req-2"),
      { taskId: "t-2", runId: "r-2" },
      async () => obs.logger.info("task finished"),
    );
    const byMessage = Object.fromEntries(logLines().map((l) => [l.message, l]));
    const context = {
      function_name: "Flow-test-task-steps",
      function_arn: "arn:aws:lambda:eu-west-1:123456789012:function:Flow-test-task-steps",
      service: "task-steps",
    };
    expect(byMessage["task started"]).toMatchObject({
      ...context,
      function_request_id: "req-1",
      taskId: "t-1",
      rackId: "rack-1",
    });
    expect(byMessage["task started"]).not.toHaveProperty("runId");
    expect(byMessage["second line"]).toMatchObject({ function_request_id: "req-1", taskId: "t-1" });
    expect(byMessage["between invocations"]).not.toHaveProperty("taskId");
    expect(byMessage["task finished"]).toMatchObject({
      ...context,
      function_request_id: "req-2",
      taskId: "t-2",
      runId: "r-2",
    });
  });

  it("the first invocation emits one ColdStart metric; an error passes through and its keys are forgotten", async () => {
    const obs = lambdaObservability("dispatcher");
    const failure = new Error("ProvisionedThroughputExceededException");
    await expect(
      obs.invoke(lambdaContext("Flow-test-dispatcher", "req-1"), { runId: "r-1" }, async () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await obs.invoke(lambdaContext("Flow-test-dispatcher", "req-2"), {}, async () => "done")).toBe(
      "done",
    );
    obs.logger.info("after");
    expect(logLines().find((l) => l.message === "after")).not.toHaveProperty("runId");
    expect(metricLines()).toEqual([
      {
        _aws: {
          Timestamp: expect.any(Number),
          CloudWatchMetrics: [
            {
              Namespace: "Flow",
              Dimensions: [["Service", "function_name"]],
              Metrics: [{ Name: "ColdStart", Unit: "Count" }],
            },
          ],
        },
        Service: "dispatcher",
        function_name: "Flow-test-dispatcher",
        ColdStart: 1,
      },
    ]);
  });

  it("off AWS the tracer is off: capture hands the client back unchanged", () => {
    const client = { send: async () => ({}) };
    expect(lambdaObservability("bmc-result").capture(client)).toBe(client);
  });
});

describe("the task path's lines: the run and task ids, never a credential", () => {
  const components = (rack: number) =>
    [1, 2].map((n) => ({
      id: `7a000000-0000-4000-8000-${String(rack * 10 + n).padStart(12, "0")}`,
      type: "COMPUTE" as const,
      firmwareVersion: "1.0.0",
    }));
  const rack = (n: number): InventoryRack => ({
    id: `4f000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
    name: `rack-${n}`,
    externalId: `EXT-${n}`,
    components: components(n),
  });
  const racks = [rack(1), rack(2), rack(3)];
  const RUN_ID = "0a000000-0000-4000-8000-000000000001";
  const HUNG_RACK = racks[2] as InventoryRack;

  /** The deployables, each with its own Powertools logger, as their roots build them. */
  function deployment() {
    const taskSteps = lambdaObservability("task-steps");
    const bmcResult = lambdaObservability("bmc-result");
    const front = powertoolsObservability("grpc");
    let requests = 0;
    const context = (name: string) => lambdaContext(`Flow-test-${name}`, `req-${++requests}`);

    const tasks = memoryTaskStore();
    const locks = memoryLockStore();
    const requestStore = memoryCommandSetStore();
    const secrets = memorySecretStore();
    const runs: Pick<RunStore, "getRunSecrets" | "recordOutcome" | "recordPriorVersions"> = {
      getRunSecrets: async (runId) =>
        runId === RUN_ID ? { kind: "shared", secret: CREDENTIAL_CANARY } : undefined,
      recordOutcome: async () => "recorded",
      recordPriorVersions: async () => "recorded",
    };
    const cipher = new LocalAesGcmCipher(randomBytes(32));
    const sealer = new CipherBmcAuthSealer(cipher, "local-aes-256-gcm");

    const receiver = createBmcResultReceiver({
      commands: requestStore,
      outcome: {
        tasks,
        runs,
        locks,
        commands: requestStore,
        firmware: { record: async () => {} },
        clock: Date.now,
        logger: bmcResult.logger,
      },
      clock: Date.now,
      logger: bmcResult.logger,
    });
    // The BMCs answer every query with their version (1.0.0 until flashed) and every update with
    // success, except the hung rack's updates; each update is also echoed back as a report the
    // receiver must drop (auth and all).
    const flashed = new Set<string>();
    const sealed: string[] = [];
    const deliveries = new Set<Promise<unknown>>();
    let hungUpdate = () => {};
    const hung = new Promise<void>((resolve) => {
      hungUpdate = resolve;
    });
    const report = (componentId: string, message: BmcEvent | Record<string, unknown>) => {
      const delivery = new Promise((resolve) => setImmediate(resolve)).then(() =>
        bmcResult.invoke(context("bmc-result"), {}, () =>
          receiver.receive({ kind: "bmc-report", message: { ...message, componentId } }),
        ),
      );
      deliveries.add(delivery);
    };
    const publisher: BmcCommandPublisher = {
      async publish({ componentId }: BmcAddress, command: BmcCommand) {
        if (command.type !== "update") {
          const version = flashed.has(componentId) ? "2.0.0" : "1.0.0";
          report(componentId, { v: 1, type: "status", requestId: command.requestId, version });
          return;
        }
        if (command.auth !== undefined) sealed.push(command.auth.ciphertext);
        report(componentId, { ...command });
        if (HUNG_RACK.components.some((c) => c.id === componentId)) {
          hungUpdate();
          return;
        }
        report(componentId, { v: 1, type: "ack", requestId: command.requestId });
        flashed.add(componentId);
        report(componentId, {
          v: 1,
          type: "result",
          requestId: command.requestId,
          ok: true,
          version: "2.0.0",
        });
      },
    };
    const steps = createTaskSteps({
      tasks,
      runs,
      locks,
      commands: requestStore,
      secrets,
      sealer,
      publisher,
      firmware: { record: async () => {} },
      readiness: { notReady: async () => new Map(), rackComponents: async () => [] },
      images: everyImage,
      imageUrls: { presignGet: async (key) => `https://images.example/${key}` },
      clock: Date.now,
      logger: taskSteps.logger,
    });
    const executor = new LocalStepFunctionsExecutor({
      // Each Task state is one task-steps invocation, as lambdas/task-steps.ts makes it.
      steps: {
        handle: (event) =>
          taskSteps.invoke(context("task-steps"), { taskId: event.taskId }, () => steps.handle(event)),
      },
      // The execution-status rule → bmc-result, as in AWS.
      onEnded: (ending) =>
        bmcResult.invoke(context("bmc-result"), { taskId: ending.taskId }, () =>
          receiver.receive({ kind: "execution-ending", ending }),
        ),
      waitOverrideMs: 1,
      // The library's check of the definition (a schema compile that blocks for seconds on a
      // loaded machine when the cache does not have it) is child-task-local-validation's.
      validate: false,
    });
    const service = createTaskService({
      images: everyImage,
      tasks,
      runs,
      locks,
      inventory: new MemoryInventoryStore(racks),
      secrets,
      commands: requestStore,
      firmware: { record: async () => {} },
      executor,
      clock: Date.now,
      newId: randomUUID,
      logger: front.logger,
    });
    const settled = async () => {
      await executor.idle();
      while (deliveries.size > 0) {
        const pending = [...deliveries];
        await Promise.all(pending);
        for (const d of pending) deliveries.delete(d);
      }
    };
    return { service, executor, tasks, sealed, hung, settled };
  }

  /** The dispatcher's submission of the run child of rack `n` (its run's credentials apply). */
  async function submitRunChild(
    service: ReturnType<typeof deployment>["service"],
    n: number,
  ): Promise<string> {
    const outcome = await service.submitter.submit(
      {
        idempotencyKey: `operation-run-target:target-${n}`,
        runId: RUN_ID,
        targetId: `target-${n}`,
        rackId: rack(n).id,
        rackExternalId: rack(n).externalId,
        componentsByType: [{ type: "COMPUTE", componentIds: components(n).map((c) => c.id) }],
        template: {
          targetVersion: "2.0.0",
          description: "run child",
          subTargets: [],
          overrideReadinessCheck: false,
          overrideVersionCheck: false,
        },
      },
      Date.now(),
    );
    if (outcome.kind !== "submitted") throw new Error(`rack ${n}: ${outcome.kind}: ${outcome.message}`);
    return outcome.taskId;
  }

  it("a plain task and a run child with credentials, and a cancelled one", async () => {
    const d = deployment();
    // One execution at a time: a Lambda container serves one invocation at a time, and the
    // invocation keys belong to the container's logger.
    const { taskIds } = await d.service.api.upgradeFirmware({
      targetSpec: { kind: "racks", racks: [{ ref: { by: "id", id: racks[0]!.id }, componentTypes: [] }] },
      targetVersion: "2.0.0",
      description: "observability",
      subTargets: [],
      overrideReadinessCheck: false,
      overrideVersionCheck: false,
      authentication: { kind: "shared", secret: CREDENTIAL_CANARY },
    });
    const plainTask = taskIds[0]!;
    await d.settled();
    const childTask = await submitRunChild(d.service, 2);
    await d.settled();
    const cancelledTask = await submitRunChild(d.service, 3);
    await d.hung;
    await d.service.api.cancelTask(cancelledTask);
    await d.settled();
    expect(
      d.tasks
        .all()
        .map((t) => [t.id, t.status, t.rackExternalId])
        .sort(),
    ).toEqual(
      [
        // The plain task's rack external id comes from the inventory, a run child's from its target.
        [plainTask, "COMPLETED", "EXT-1"],
        [childTask, "COMPLETED", "EXT-2"],
        [cancelledTask, "TERMINATED", "EXT-3"],
      ].sort(),
    );

    // Every line is JSON, with every field it was given (none dropped as a reserved key), and none
    // holds the credential or a sealed copy of it.
    const lines = output.lines();
    expect(lines.filter((l) => l.includes("reserved key"))).toEqual([]);
    expect(lines.length).toBeGreaterThan(0);
    expect(output.json()).toHaveLength(lines.length);
    // Two BMCs per task, each with its own sealed copy.
    expect(d.sealed).toHaveLength(6);
    for (const line of lines) {
      expect(line).not.toContain(CREDENTIAL_CANARY);
      for (const blob of d.sealed) expect(line).not.toContain(blob);
    }

    // Each event that matters, once per task, with the task's keys (and the run's for run children).
    const logs = logLines();
    const about = (message: string, taskId: string) =>
      logs.filter((l) => l.message === message && l.taskId === taskId);
    const keys = (taskId: string) => (taskId === plainTask ? { taskId } : { taskId, runId: RUN_ID });
    for (const taskId of [plainTask, childTask, cancelledTask]) {
      expect(about("task started", taskId)).toEqual([
        expect.objectContaining({ ...keys(taskId), service: "task-steps", level: "INFO" }),
      ]);
      expect(about("task preflight done", taskId)).toEqual([
        expect.objectContaining({ ...keys(taskId), toUpdate: 2, alreadyAtTarget: 0, targetVersion: "2.0.0" }),
      ]);
    }
    for (const taskId of [plainTask, childTask]) {
      expect(about("task finished", taskId)).toEqual([
        expect.objectContaining({
          ...keys(taskId),
          service: "task-steps",
          status: "COMPLETED",
          taskMessage: expect.stringMatching(/\S/),
        }),
      ]);
    }
    // The operator's cancel is the front's line; the stopped execution that follows adds none.
    expect(about("task cancelled", cancelledTask)).toEqual([
      expect.objectContaining({
        ...keys(cancelledTask),
        service: "grpc",
        status: "TERMINATED",
        taskMessage: "task cancelled",
        rackId: HUNG_RACK.id,
      }),
    ]);
    expect(about("task finished", cancelledTask)).toEqual([]);
    // The echoed commands were dropped by bmc-result, naming the rule broken and not the payload.
    expect(logs.filter((l) => l.message === "bmc report dropped: undecodable")).toHaveLength(6);

    // Lines written inside a task-steps invocation carry its Lambda context and its task.
    const inStep = logs.filter((l) => l.service === "task-steps");
    expect(inStep.length).toBeGreaterThan(0);
    for (const l of inStep) {
      expect(l).toMatchObject({ function_name: "Flow-test-task-steps", taskId: expect.any(String) });
      expect(l.function_request_id).toMatch(/^req-\d+$/);
    }
  });
});

describe("foldRepeats: a repeated warning, one line per streak", () => {
  it("logs a streak's first line, then one line counting the repeats when it clears", () => {
    const lines: string[] = [];
    let now = 1_000;
    const fold = foldRepeats(
      (l) => lines.push(l),
      () => now,
    );
    fold.cleared();
    fold.occurred("poll failed: ECONNREFUSED");
    now += 500;
    fold.occurred("poll failed: ECONNREFUSED");
    fold.occurred("poll failed: ECONNREFUSED");
    expect(lines).toEqual(["poll failed: ECONNREFUSED"]);
    now += 250;
    fold.cleared();
    fold.cleared();
    // A new streak starts over; a streak of two says "1 more time"; a streak of one adds nothing.
    fold.occurred("poll failed: timeout");
    fold.occurred("poll failed: timeout");
    fold.cleared();
    fold.occurred("poll failed: once");
    fold.cleared();
    expect(lines).toEqual([
      "poll failed: ECONNREFUSED",
      "poll failed: ECONNREFUSED: repeated 2 more times over 750 ms",
      "poll failed: timeout",
      "poll failed: timeout: repeated 1 more time over 0 ms",
      "poll failed: once",
    ]);
  });
});
