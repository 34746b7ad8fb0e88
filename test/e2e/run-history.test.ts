/**
 * The run history end to end, on the local stack: real gRPC over sockets,
 * the dispatcher, stream wake-ups, child tasks on the simulated fleet, DynamoDB on moto, and the
 * run events out through moto's EventBridge into SQS.
 *
 *   run A, by a client with a client certificate over mutual TLS: phase 0 completes and waits at
 *     its gate; advanced; a rack of phase 1 fails and trips the failure_count gate (1/2); resumed,
 *     the dispatcher trips it again at once (its counts have not changed, as the reference does);
 *     cancelled. The history lists exactly that, in order, with the certificate's subject (CN and
 *     SANs) on every operator action and the gate's counts on both trips.
 *   run B, the same flow through flowctl (no certificate): the OS user, marked
 *     unauthenticated, on every operator action.
 *   run D, three auto-advancing phases while a second stream consumer re-delivers every Runs and
 *     Targets batch twice, from the start of the streams, to a second dispatcher (another Lambda,
 *     in effect): each phase opens once, and the replays leave A's and B's histories unchanged.
 *   EventBridge: every history event of the three runs arrives exactly once on a rule → SQS, with
 *     the documented detail; the documented gate-trip rule gets the gate trips only.
 */

import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import {
  CreateEventBusCommand,
  DeleteEventBusCommand,
  DeleteRuleCommand,
  EventBridgeClient,
  PutRuleCommand,
  PutTargetsCommand,
  RemoveTargetsCommand,
} from "@aws-sdk/client-eventbridge";
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type StreamPoller, startStreamPoller } from "../../local/stream-poller.js";
import { awsClientConfig, createDynamoDbClient } from "../../src/adapters/aws-config.js";
import { streamBatchHandler } from "../../src/adapters/dynamodb/stream-records.js";
import {
  DETAIL_TYPE_GATE_TRIPPED,
  RUN_EVENT_SOURCE,
  runEventDetail,
} from "../../src/adapters/eventbridge/run-event-bus.js";
import { createFlowClient, type FlowClient } from "../../src/adapters/grpc/client.js";
import { type RunningGrpcServer, startGrpcServer } from "../../src/adapters/grpc/server.js";
import { clientCredentials } from "../../src/adapters/grpc/tls.js";
import { systemClock } from "../../src/adapters/system-clock.js";
import { createDispatcher } from "../../src/app/dispatcher.js";
import { lineLogger } from "../../src/app/observability.js";
import { createStreamEvaluator } from "../../src/app/stream-evaluator.js";
import type { RunHistoryEvent } from "../../src/domain/history-event.js";
import { runEventId } from "../../src/domain/history-event.js";
import {
  OperationRunActorSource,
  OperationRunEventKind,
  OperationRunSafetyGateScope,
  OperationRunStatus,
  OperationRunStatusReason,
} from "../../src/gen/flow/v1/flow.js";
import { type Certificates, makeCertificates } from "../support/certificates.js";
import { FAST_FAILURE, FAST_SUCCESS, fleetOf, HANG, rackGroup } from "../support/fixtures-inventory.js";
import { type FlowctlResult, flowctlInProcess } from "../support/flowctl.js";
import {
  countGate,
  createRun,
  equalPhases,
  eventually,
  getRun,
  type RunSpec,
  runRequest,
  startTestStack,
  stateOf,
  type TestStack,
  waitForStatus,
} from "../support/stack.js";
import { testEndpoint } from "../support/test-endpoint.js";

const RACKS = rackGroup(151, { name: "hist", count: 18, types: ["COMPUTE"] });
const CURRENT = OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE;
const St = OperationRunStatus;
const Re = OperationRunStatusReason;
const K = OperationRunEventKind;
const ALL = { offset: 0, limit: 1000 };
const OS_USER = userInfo().username;

/** Six racks in three phases of two, no auto advance, a failure_count gate of 1 on the phase. */
const gated = (ids: string[], seed: string): RunSpec => ({
  rackIds: ids,
  seed: `${seed}-selection`,
  orderingSeed: `${seed}-order`,
  maxConcurrent: 2,
  gates: [countGate(1, CURRENT)],
  phasePolicy: equalPhases(3, false),
});
const SPEC_A = gated(RACKS.ids.slice(0, 6), "history-a");
const SPEC_B = gated(RACKS.ids.slice(6, 12), "history-b");
const SPEC_D: RunSpec = {
  rackIds: RACKS.ids.slice(12, 18),
  seed: "history-d-selection",
  orderingSeed: "history-d-order",
  maxConcurrent: 2,
  gates: [countGate(5, CURRENT)],
  phasePolicy: equalPhases(3, true),
};

let s: TestStack;
let certs: Certificates;
let mtls: RunningGrpcServer;
let ops: FlowClient;
let events: EventBridgeClient;
let sqs: SQSClient;
let dir: string;
const bus = `e2e-history-${randomUUID().slice(0, 8)}`;
const queues: { all: string; gates: string } = { all: "", gates: "" };
const runs = { a: "", b: "", d: "" };
/** What the replaying consumer did: batches delivered (each twice) and whether it saw D finish. */
const replay = { batches: 0, sawDFinished: false, poller: undefined as StreamPoller | undefined };
/** The histories of A and B as they were before run D and the replays. */
const before: { a: RunHistoryEvent[]; b: RunHistoryEvent[] } = { a: [], b: [] };

const history = async (runId: string) => (await s.local.stores.runs.listRunEvents(runId, ALL))?.events ?? [];
const kindsOf = (list: RunHistoryEvent[]) => list.map((e) => [e.kind, e.phaseIndex]);

/** flowctl in this process (its command line, output and exit code: test/support/flowctl.ts). */
function flowctl(args: string[]): Promise<FlowctlResult> {
  return flowctlInProcess(args, { FLOW_ENDPOINT: s.address });
}

async function ok(args: string[]): Promise<string> {
  const result = await flowctl(args);
  expect(result, `flowctl ${args.join(" ")}`).toMatchObject({ code: 0 });
  return result.stdout;
}

/** Rack ids per phase, in sequence order, as PlanOperationRun shows the run's plan. */
async function plannedPhases(spec: RunSpec): Promise<string[][]> {
  const plan = await s.flow.planOperationRun(runRequest(spec));
  return [0, 1, 2].map((phase) =>
    plan.targets
      .filter((t) => t.phaseIndex === phase)
      .sort((x, y) => x.sequenceIndex - y.sequenceIndex)
      .map((t) => t.rackId?.id ?? ""),
  );
}

/** Waits for PAUSED with `reason`, written after `after` (a re-trip is a new write). */
function pausedWith(flow: FlowClient, id: string, reason: OperationRunStatusReason, after = 0) {
  return eventually(
    () => getRun(flow, id),
    (run) =>
      stateOf(run).status === St.OPERATION_RUN_STATUS_PAUSED &&
      stateOf(run).reason === reason &&
      (run.summary?.updatedAt?.getTime() ?? 0) > after,
    `run ${id} paused with reason ${Re[reason]}`,
    60_000,
  );
}

/** Every message of `queue` until `done(received)`; each is deleted once read. */
async function drain(
  queue: string,
  done: (bodies: Record<string, unknown>[]) => boolean,
  what: string,
): Promise<Record<string, unknown>[]> {
  const bodies: Record<string, unknown>[] = [];
  return eventually(
    async () => {
      // No long polling: the serialized moto would hold every other request for its wait.
      const out = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queue, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
      );
      const messages = out.Messages ?? [];
      for (const m of messages) bodies.push(JSON.parse(m.Body ?? "{}"));
      if (messages.length > 0) {
        await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queue,
            Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? "" })),
          }),
        );
      }
      return bodies;
    },
    done,
    what,
    60_000,
  );
}

beforeAll(async () => {
  const endpoint = testEndpoint();
  const aws = awsClientConfig({ endpoint, credentials: { accessKeyId: "test", secretAccessKey: "test" } });
  events = new EventBridgeClient(aws);
  sqs = new SQSClient(aws);
  // The documented rules, on a bus of this suite's own: every run event, and the gate trips alone.
  await events.send(new CreateEventBusCommand({ Name: bus }));
  for (const [key, pattern] of [
    ["all", { source: [RUN_EVENT_SOURCE] }],
    ["gates", { source: [RUN_EVENT_SOURCE], "detail-type": [DETAIL_TYPE_GATE_TRIPPED] }],
  ] as const) {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: `${bus}-${key}` }));
    queues[key] = QueueUrl ?? "";
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["QueueArn"] }),
    );
    await events.send(
      new PutRuleCommand({ Name: `${bus}-${key}`, EventBusName: bus, EventPattern: JSON.stringify(pattern) }),
    );
    await events.send(
      new PutTargetsCommand({
        Rule: `${bus}-${key}`,
        EventBusName: bus,
        Targets: [{ Id: "queue", Arn: Attributes?.QueueArn ?? "" }],
      }),
    );
  }

  s = await startTestStack({
    label: "history",
    groups: [RACKS],
    defaults: HANG,
    tickMs: 150,
    eventBusName: bus,
  });
  certs = makeCertificates({
    clients: {
      ops: { subject: "/O=Flow/CN=ops-bastion", san: "DNS:bastion.example.com,URI:spiffe://flow/ops" },
    },
  });
  // The same API over mutual TLS: the front as configured with FLOW_TLS_CLIENT_CA.
  mtls = await startGrpcServer({
    api: s.local.api,
    host: "127.0.0.1",
    port: 0,
    logger: lineLogger((line) => void s.logs.push(line)),
    protoDir: false,
    tls: {
      certFile: certs.file("server.crt"),
      keyFile: certs.file("server.key"),
      clientCaFile: certs.file("ca.crt"),
    },
  });
  ops = createFlowClient(
    `127.0.0.1:${mtls.port}`,
    clientCredentials({
      caFile: certs.file("ca.crt"),
      certFile: certs.file("ops.crt"),
      keyFile: certs.file("ops.key"),
    }),
  );
  dir = mkdtempSync(join(tmpdir(), "history-e2e-"));

  // The fleet learns who fails only once the plans are known: in phase 1, the first rack fails
  // and the second hangs, so the gate trips on 1/2 with a flash still in flight; phase 0 succeeds.
  const [a, b, d] = await Promise.all([plannedPhases(SPEC_A), plannedPhases(SPEC_B), plannedPhases(SPEC_D)]);
  const of = (ids: string[], behaviour: typeof FAST_SUCCESS) => ({ ...RACKS, ids, behaviour });
  s.local.fleet!.setConfig(
    fleetOf(
      [of([...a[0]!, ...b[0]!, ...d.flat()], FAST_SUCCESS), of([a[1]![0]!, b[1]![0]!], FAST_FAILURE)],
      HANG,
    ),
  );
}, 120_000);

afterAll(async () => {
  await replay.poller?.stop();
  ops?.close();
  await mtls?.shutdown(1000);
  await s?.stop();
  certs?.remove();
  if (dir) rmSync(dir, { recursive: true, force: true });
  for (const key of ["all", "gates"] as const) {
    await events
      ?.send(new RemoveTargetsCommand({ Rule: `${bus}-${key}`, EventBusName: bus, Ids: ["queue"] }))
      .catch(() => undefined);
    await events
      ?.send(new DeleteRuleCommand({ Name: `${bus}-${key}`, EventBusName: bus }))
      .catch(() => undefined);
    if (queues[key])
      await sqs?.send(new DeleteQueueCommand({ QueueUrl: queues[key] })).catch(() => undefined);
  }
  await events?.send(new DeleteEventBusCommand({ Name: bus })).catch(() => undefined);
  events?.destroy();
  sqs?.destroy();
});

const CERTIFICATE_ACTOR = {
  name: "ops-bastion",
  source: "CLIENT_CERTIFICATE",
  authenticated: true,
  subjectAltNames: ["DNS:bastion.example.com", "URI:spiffe://flow/ops"],
  issuer: "CN=flow-test-ca",
};
const GATE_VERDICT = {
  type: "gate",
  gateIndex: 0,
  gate: { kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 },
  failed: 1,
  selected: 2,
};

describe("run A: gate, advance, resume, cancel by a client with a certificate", () => {
  it("lists exactly those events in order, the certificate's subject as actor, the gate's counts", async () => {
    runs.a = await createRun(ops, runRequest(SPEC_A));
    await pausedWith(ops, runs.a, Re.OPERATION_RUN_STATUS_REASON_PHASE_GATE);
    await ops.advanceOperationRunPhase({ id: { id: runs.a }, expectedPhaseIndex: 1 });
    const tripped = await pausedWith(ops, runs.a, Re.OPERATION_RUN_STATUS_REASON_SAFETY_GATE);
    const resumed = await ops.resumeOperationRun({ id: { id: runs.a } });
    await pausedWith(
      ops,
      runs.a,
      Re.OPERATION_RUN_STATUS_REASON_SAFETY_GATE,
      resumed.summary?.updatedAt?.getTime() ?? tripped.summary?.updatedAt?.getTime(),
    );
    await ops.cancelOperationRun({ id: { id: runs.a }, reason: "  rollback to 1.0.0  " });

    const listed = await ops.listOperationRunEvents({
      operationRunId: { id: runs.a },
      pagination: undefined,
    });
    expect(listed.events.map((e) => [K[e.kind], e.phaseIndex])).toEqual([
      ["OPERATION_RUN_EVENT_KIND_CREATED", 0],
      ["OPERATION_RUN_EVENT_KIND_STARTED", 0],
      ["OPERATION_RUN_EVENT_KIND_PHASE_OPENED", 0],
      ["OPERATION_RUN_EVENT_KIND_PHASE_GATE_REACHED", 0],
      ["OPERATION_RUN_EVENT_KIND_ADVANCED", 1],
      ["OPERATION_RUN_EVENT_KIND_PHASE_OPENED", 1],
      ["OPERATION_RUN_EVENT_KIND_GATE_TRIPPED", 1],
      ["OPERATION_RUN_EVENT_KIND_RESUMED", 1],
      ["OPERATION_RUN_EVENT_KIND_GATE_TRIPPED", 1],
      ["OPERATION_RUN_EVENT_KIND_CANCELLED", 1],
    ]);
    expect(listed.total).toBe(10);
    const times = listed.events.map((e) => e.time?.getTime() ?? 0);
    expect([...times].sort((x, y) => x - y)).toEqual(times);
    expect(new Set(listed.events.map((e) => e.id)).size).toBe(10);

    const stored = await history(runs.a);
    expect(stored.map((e) => [e.kind, e.actor])).toEqual([
      ["CREATED", CERTIFICATE_ACTOR],
      ["STARTED", undefined],
      ["PHASE_OPENED", undefined],
      ["PHASE_GATE_REACHED", undefined],
      ["ADVANCED", CERTIFICATE_ACTOR],
      ["PHASE_OPENED", undefined],
      ["GATE_TRIPPED", undefined],
      ["RESUMED", CERTIFICATE_ACTOR],
      ["GATE_TRIPPED", undefined],
      ["CANCELLED", CERTIFICATE_ACTOR],
    ]);
    const gates = stored.filter((e) => e.kind === "GATE_TRIPPED");
    for (const gate of gates) {
      expect(gate).toMatchObject({
        status: "PAUSED",
        reason: "SAFETY_GATE",
        message: "failure_count safety gate tripped for current_phase: 1/2 targets failed (threshold 1)",
        detail: GATE_VERDICT,
        stats: { current: { phaseIndex: 1, selectedTargets: 2, outcomes: { failed: 1 } } },
      });
    }
    expect(stored[4]?.detail).toEqual({
      type: "advance",
      fromPhaseIndex: 0,
      toPhaseIndex: 1,
      expectedPhaseIndex: 1,
    });
    expect(stored[9]).toMatchObject({
      status: "CANCELLED",
      message: "operation run cancelled: rollback to 1.0.0",
      detail: { type: "cancel", reason: "rollback to 1.0.0" },
    });
    // The wire agrees with the store: the actor's CN, SANs and source.
    expect(listed.events[0]?.actor).toEqual({
      name: "ops-bastion",
      source: OperationRunActorSource.OPERATION_RUN_ACTOR_SOURCE_CLIENT_CERTIFICATE,
      authenticated: true,
      subjectAltNames: ["DNS:bastion.example.com", "URI:spiffe://flow/ops"],
      declaredName: "",
      issuer: "CN=flow-test-ca",
    });
    expect(listed.events[6]?.detail).toMatchObject({ $case: "gate", value: { failed: 1, selected: 2 } });
  });
});

describe("run B: the same flow through flowctl, without a certificate", () => {
  it("records the OS user, marked unauthenticated, on every operator action", async () => {
    const file = join(dir, "b.yaml");
    writeFileSync(
      file,
      [
        "name: history-b",
        "selector: { percentage: 100, seed: history-b-selection }",
        "options:",
        "  maxConcurrentTargets: 2",
        "  gates: [{ failureCount: 1, scope: currentPhase }]",
        "  phases: { equal: 3 }",
        "  autoAdvance: false",
        "  ordering: { random: { seed: history-b-order } }",
        "operation:",
        "  upgradeFirmware:",
        "    targetVersion: 2.0.0",
        `    targets: { racks: [${SPEC_B.rackIds!.map((id) => `{ id: ${id} }`).join(", ")}] }`,
        "",
      ].join("\n"),
    );
    runs.b = /created run ([0-9a-f-]{36})/.exec(await ok(["run", "create", "-f", file]))?.[1] ?? "";
    expect(runs.b).not.toBe("");
    await pausedWith(s.flow, runs.b, Re.OPERATION_RUN_STATUS_REASON_PHASE_GATE);
    await ok(["run", "advance", runs.b, "--expect", "2"]);
    const tripped = await pausedWith(s.flow, runs.b, Re.OPERATION_RUN_STATUS_REASON_SAFETY_GATE);
    await ok(["run", "resume", runs.b]);
    await pausedWith(
      s.flow,
      runs.b,
      Re.OPERATION_RUN_STATUS_REASON_SAFETY_GATE,
      tripped.summary?.updatedAt?.getTime(),
    );
    await ok(["run", "cancel", runs.b, "--reason", "via flowctl"]);

    const json = JSON.parse(await ok(["run", "history", runs.b, "-o", "json"])) as {
      events: { kind: string; actor?: Record<string, unknown> }[];
      total: number;
    };
    // proto3 JSON leaves out default values: authenticated false, no SANs, no declared name.
    const declared = { name: OS_USER, source: "OPERATION_RUN_ACTOR_SOURCE_DECLARED" };
    expect(json.events.map((e) => [e.kind.replace("OPERATION_RUN_EVENT_KIND_", ""), e.actor])).toEqual([
      ["CREATED", declared],
      ["STARTED", undefined],
      ["PHASE_OPENED", undefined],
      ["PHASE_GATE_REACHED", undefined],
      ["ADVANCED", declared],
      ["PHASE_OPENED", undefined],
      ["GATE_TRIPPED", undefined],
      ["RESUMED", declared],
      ["GATE_TRIPPED", undefined],
      ["CANCELLED", declared],
    ]);
    expect(json.total).toBe(10);

    const timeline = (await ok(["run", "history", runs.b])).split("\n");
    expect(timeline[0]).toMatch(/^TIME\s+EVENT\s+PHASE\s+BY\s+MESSAGE$/);
    const row = (event: string) => timeline.filter((l) => new RegExp(`Z\\s+${event}\\s`).test(l));
    expect(row("created")).toHaveLength(1);
    expect(row("created")[0]).toContain(
      `${OS_USER} (unauthenticated)  operation run created: 6 targets in 3 phases`,
    );
    expect(row("gate tripped")).toHaveLength(2);
    for (const line of row("gate tripped")) {
      expect(line).toMatch(
        /gate tripped\s+2\/3\s+failure_count safety gate tripped for current_phase: 1\/2 targets failed \(threshold 1\)$/,
      );
    }
    expect(row("cancelled")[0]).toContain(
      `${OS_USER} (unauthenticated)  operation run cancelled: via flowctl`,
    );
    expect(timeline.filter((l) => l !== "").at(-1)).toBe("1-10 of 10 events");
  });
});

describe("run D: three auto-advancing phases while every stream batch is delivered again, twice", () => {
  it("each phase opens once; the replays leave A's and B's histories unchanged", async () => {
    before.a = await history(runs.a);
    before.b = await history(runs.b);
    // A second consumer of the Runs and Targets streams, from their start, with its own
    // dispatcher (another process, as a second Lambda would be): every batch twice in a row, and
    // each record twice within the batch.
    const second = createDispatcher({
      runs: s.local.stores.runs,
      submitter: s.local.childTasks.submitter,
      clock: systemClock,
    });
    const deliver = streamBatchHandler(createStreamEvaluator({ dispatcher: second }));
    replay.poller = await startStreamPoller({
      client: createDynamoDbClient({ endpoint: s.local.awsEndpoint }),
      tableNames: [s.local.tables.runs, s.local.tables.targets],
      startingPosition: "TRIM_HORIZON",
      handler: async (event) => {
        const doubled = { Records: event.Records.flatMap((r) => [r, r]) };
        await deliver(doubled);
        await deliver(doubled);
        replay.batches += 1;
        if (
          event.Records.some(
            (r) =>
              r.dynamodb?.Keys?.runId?.S === runs.d &&
              r.dynamodb?.Keys?.targetId === undefined &&
              r.dynamodb?.NewImage?.status?.S === "COMPLETED",
          )
        ) {
          replay.sawDFinished = true;
        }
        return { batchItemFailures: [] };
      },
    });

    runs.d = await createRun(s.flow, runRequest(SPEC_D));
    const done = await waitForStatus(s.flow, runs.d, [St.OPERATION_RUN_STATUS_COMPLETED], 90_000);
    expect(stateOf(done).status).toBe(St.OPERATION_RUN_STATUS_COMPLETED);
    // The replaying consumer has delivered everything up to D's end (its batches come in order).
    await eventually(
      async () => replay.sawDFinished,
      (seen) => seen,
      "the replay to reach D's completion",
    );
    await replay.poller.stop();
    replay.poller = undefined;

    expect(replay.batches).toBeGreaterThan(1);
    expect(kindsOf(await history(runs.d))).toEqual([
      ["CREATED", 0],
      ["STARTED", 0],
      ["PHASE_OPENED", 0],
      ["PHASE_OPENED", 1],
      ["PHASE_OPENED", 2],
      ["FINISHED", 2],
    ]);
    expect(await history(runs.a)).toEqual(before.a);
    expect(await history(runs.b)).toEqual(before.b);
  });
});

describe("EventBridge: the run events on moto, through rules into SQS", () => {
  it("every history event of A, B and D arrives once, with the documented detail; the gate rule gets the gate trips only", async () => {
    const expected = [...(await history(runs.a)), ...(await history(runs.b)), ...(await history(runs.d))];
    expect(expected).toHaveLength(26);
    const ids = new Set(expected.map(runEventId));
    const idOf = (b: Record<string, unknown>) => (b.detail as { eventId: string }).eventId;
    const received = await drain(
      queues.all,
      (bodies) => [...ids].every((id) => bodies.some((b) => idOf(b) === id)),
      "every run event on the queue",
    );
    const ours = received.filter((b) => ids.has(idOf(b)));
    expect(ours).toHaveLength(expected.length);
    for (const event of expected) {
      const body = ours.find((b) => idOf(b) === runEventId(event));
      expect(body, event.kind).toMatchObject({
        source: "flow.operation-runs",
        "detail-type":
          event.kind === "GATE_TRIPPED" ? "Operation Run Gate Tripped" : "Operation Run State Change",
        detail: runEventDetail(event),
      });
    }
    const aCreated = ours.find((b) => idOf(b) === runEventId(expected[0]!));
    expect((aCreated?.detail as Record<string, unknown> | undefined)?.actor).toEqual(CERTIFICATE_ACTOR);
    const aGate = ours.find((b) => (b.detail as { kind: string }).kind === "GATE_TRIPPED");
    expect((aGate?.detail as Record<string, unknown> | undefined)?.gate).toEqual({
      index: 0,
      kind: "FAILURE_COUNT",
      scope: "CURRENT_PHASE",
      threshold: 1,
      failed: 1,
      selected: 2,
    });

    const gateIds = expected.filter((e) => e.kind === "GATE_TRIPPED").map(runEventId);
    expect(gateIds).toHaveLength(4);
    const gateMessages = await drain(
      queues.gates,
      (bodies) => gateIds.every((id) => bodies.some((b) => idOf(b) === id)),
      "the gate trips on the gate queue",
    );
    expect(gateMessages.map(idOf).sort()).toEqual([...gateIds].sort());
  });
});
