/**
 * The run history, out: the RunEvents stream record → the event (src/adapters/dynamodb/
 * run-event-records.ts), the relay's at-least-once bookkeeping (src/app/run-event-relay.ts), and
 * the EventBridge entries with their versioned detail (src/adapters/eventbridge/run-event-bus.ts).
 * The same path end to end, on moto's EventBridge and SQS, is in test/e2e/run-history.test.ts.
 */
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { marshall } from "@aws-sdk/util-dynamodb";
import type { AttributeValue } from "aws-lambda";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { runEventToItem } from "../../src/adapters/dynamodb/items.js";
import {
  decodeRunEventRecord,
  runEventsBatchHandler,
} from "../../src/adapters/dynamodb/run-event-records.js";
import {
  EventBridgeRunEventBus,
  runEventDetail,
  runEventEntry,
} from "../../src/adapters/eventbridge/run-event-bus.js";
import type { RunEventBus } from "../../src/app/ports.js";
import { createRunEventRelay } from "../../src/app/run-event-relay.js";
import type { RunHistoryEvent } from "../../src/domain/history-event.js";

const RUN = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
const AT = Date.parse("2026-11-20T10:00:03.120Z");
const counts = { completed: 9, failed: 3, terminated: 0, skipped: 0 };

const GATE: RunHistoryEvent = {
  runId: RUN,
  at: AT,
  seq: 0,
  kind: "GATE_TRIPPED",
  runName: "canary",
  status: "PAUSED",
  reason: "SAFETY_GATE",
  message: "failure_count safety gate tripped for current_phase: 3/33 targets failed (threshold 3)",
  phaseIndex: 1,
  totalPhases: 3,
  stats: {
    current: { phaseIndex: 1, selectedTargets: 33, outcomes: counts },
    cumulative: { phaseIndex: 1, selectedTargets: 67, outcomes: { ...counts, completed: 41, failed: 5 } },
  },
  detail: {
    type: "gate",
    gateIndex: 0,
    gate: { kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 3 },
    failed: 3,
    selected: 33,
  },
};

const event = (over: Partial<RunHistoryEvent>): RunHistoryEvent => ({
  ...GATE,
  kind: "PAUSED",
  reason: "OPERATOR_PAUSED",
  message: "operation run paused by operator",
  detail: undefined,
  ...over,
});

describe("run events out: the EventBridge detail, version 1", () => {
  it("a gate trip: the documented document, field for field", () => {
    expect(runEventDetail(GATE)).toEqual({
      version: "1",
      eventId: `${RUN}/001795168803120.00`,
      kind: "GATE_TRIPPED",
      time: "2026-11-20T10:00:03.120Z",
      runId: RUN,
      runName: "canary",
      status: "PAUSED",
      reason: "SAFETY_GATE",
      message: "failure_count safety gate tripped for current_phase: 3/33 targets failed (threshold 3)",
      phaseIndex: 1,
      totalPhases: 3,
      counts: {
        currentPhase: { phaseIndex: 1, selected: 33, completed: 9, failed: 3, terminated: 0, skipped: 0 },
        cumulative: { phaseIndex: 1, selected: 67, completed: 41, failed: 5, terminated: 0, skipped: 0 },
      },
      actor: null,
      gate: {
        index: 0,
        kind: "FAILURE_COUNT",
        scope: "CURRENT_PHASE",
        threshold: 3,
        failed: 3,
        selected: 33,
      },
    });
  });

  it.each<[string, Partial<RunHistoryEvent>, Record<string, unknown>]>([
    [
      "a certificate actor, with a declared name",
      {
        actor: {
          name: "ops",
          source: "CLIENT_CERTIFICATE",
          authenticated: true,
          subjectAltNames: ["DNS:ops.example.com"],
          declaredName: "alice",
        },
      },
      {
        actor: {
          name: "ops",
          source: "CLIENT_CERTIFICATE",
          authenticated: true,
          subjectAltNames: ["DNS:ops.example.com"],
          declaredName: "alice",
        },
      },
    ],
    [
      "a declared actor (no declaredName key)",
      { actor: { name: "alice", source: "DECLARED", authenticated: false, subjectAltNames: [] } },
      { actor: { name: "alice", source: "DECLARED", authenticated: false, subjectAltNames: [] } },
    ],
    [
      "the plan of CREATED",
      {
        kind: "CREATED",
        detail: { type: "plan", targets: 10, phaseSizes: [5, 5], selectionSeed: "s", orderingSeed: "o" },
      },
      { plan: { targets: 10, phaseSizes: [5, 5], selectionSeed: "s", orderingSeed: "o" } },
    ],
    [
      "a rate gate's threshold is its percentage",
      {
        kind: "GATE_TRIPPED",
        detail: {
          type: "gate",
          gateIndex: 1,
          gate: { kind: "failureRate", scope: "CUMULATIVE_RUN", thresholdPercent: 20 },
          failed: 2,
          selected: 10,
        },
      },
      {
        gate: {
          index: 1,
          kind: "FAILURE_RATE",
          scope: "CUMULATIVE_RUN",
          threshold: 20,
          failed: 2,
          selected: 10,
        },
      },
    ],
    [
      "an observed-rate gate's threshold is its percentage, with its finished count and min_finished",
      {
        kind: "GATE_TRIPPED",
        detail: {
          type: "gate",
          gateIndex: 0,
          gate: { kind: "observedFailureRate", scope: "CURRENT_PHASE", thresholdPercent: 50, minFinished: 5 },
          failed: 5,
          selected: 100,
          finished: 5,
        },
      },
      {
        gate: {
          index: 0,
          kind: "OBSERVED_FAILURE_RATE",
          scope: "CURRENT_PHASE",
          threshold: 50,
          failed: 5,
          selected: 100,
          finished: 5,
          minFinished: 5,
        },
      },
    ],
    [
      "an advance with and without an expected phase",
      { kind: "ADVANCED", detail: { type: "advance", fromPhaseIndex: 0, toPhaseIndex: 1 } },
      { advance: { fromPhaseIndex: 0, toPhaseIndex: 1, expectedPhaseIndex: null } },
    ],
    [
      "a cancel's reason",
      { kind: "CANCELLED", detail: { type: "cancel", reason: "wrong image" } },
      { cancel: { reason: "wrong image" } },
    ],
    [
      "a conflict timeout",
      { kind: "CONFLICT_TIMEOUT", detail: { type: "conflict", targetId: "t-1", blockedForMs: 3_600_000 } },
      { conflict: { targetId: "t-1", blockedForMs: 3_600_000 } },
    ],
    [
      "a window's instants, null where not known",
      { kind: "WINDOW_CLOSED", detail: { type: "window", opensAt: AT } },
      { window: { closesAt: null, opensAt: "2026-11-20T10:00:03.120Z", closedAt: null } },
    ],
    [
      "an approval: who approved (the actor), the rule, the racks and who created the run",
      {
        kind: "APPROVED",
        actor: { name: "bob", source: "CLIENT_CERTIFICATE", authenticated: true, subjectAltNames: [] },
        detail: {
          type: "approval",
          minRacks: 20,
          racks: 25,
          requestedBy: {
            name: "alice",
            source: "CLIENT_CERTIFICATE",
            authenticated: true,
            subjectAltNames: ["URI:spiffe://x/alice"],
          },
        },
      },
      {
        kind: "APPROVED",
        actor: { name: "bob", source: "CLIENT_CERTIFICATE", authenticated: true, subjectAltNames: [] },
        approval: {
          minRacks: 20,
          racks: 25,
          requestedBy: {
            name: "alice",
            source: "CLIENT_CERTIFICATE",
            authenticated: true,
            subjectAltNames: ["URI:spiffe://x/alice"],
          },
        },
      },
    ],
    [
      "a refused call on the run",
      {
        kind: "ACCESS_DENIED",
        detail: { type: "denial", rpc: "CancelOperationRun", code: "PERMISSION_DENIED", reason: "no" },
      },
      {
        kind: "ACCESS_DENIED",
        denial: { rpc: "CancelOperationRun", code: "PERMISSION_DENIED", reason: "no" },
      },
    ],
  ])("%s", (_name, over, expected) => {
    expect(runEventDetail(event(over))).toMatchObject(expected);
  });

  it("the entry: source, the detail-type by kind, the time of the change, the bus", () => {
    expect(runEventEntry(GATE, "flow-rollouts")).toEqual({
      EventBusName: "flow-rollouts",
      Source: "flow.operation-runs",
      DetailType: "Operation Run Gate Tripped",
      Time: new Date(AT),
      Detail: JSON.stringify(runEventDetail(GATE)),
    });
    for (const kind of ["CREATED", "PAUSED", "PHASE_OPENED", "FINISHED", "WINDOW_PAUSED"] as const) {
      expect(runEventEntry(event({ kind }), "default").DetailType, kind).toBe("Operation Run State Change");
    }
  });
});

describe("run events out: the EventBridge bus", () => {
  const client = mockClient(EventBridgeClient);
  afterAll(() => client.restore());
  beforeEach(() => client.reset());

  it("23 events → PutEvents of 10, 10, 3; refused entries come back as indexes into the whole list", async () => {
    client.on(PutEventsCommand).callsFake((input: { Entries: unknown[] }) => {
      const call = client.commandCalls(PutEventsCommand).length;
      return {
        FailedEntryCount: call === 2 ? 1 : 0,
        Entries: input.Entries.map((_, i) =>
          call === 2 && i === 4
            ? { ErrorCode: "ThrottlingException", ErrorMessage: "slow down" }
            : { EventId: `e${i}` },
        ),
      };
    });
    const bus = new EventBridgeRunEventBus(new EventBridgeClient({ region: "us-east-1" }), "default");
    const events = Array.from({ length: 23 }, (_, seq) => event({ seq }));
    expect(await bus.publish(events)).toEqual({ rejected: [14] });
    expect(client.commandCalls(PutEventsCommand).map((c) => c.args[0].input.Entries?.length)).toEqual([
      10, 10, 3,
    ]);
  });

  it("a bus that cannot be reached throws (the relay redelivers the batch)", async () => {
    client.on(PutEventsCommand).rejects(new Error("connect ECONNREFUSED"));
    const bus = new EventBridgeRunEventBus(new EventBridgeClient({ region: "us-east-1" }), "default");
    await expect(bus.publish([GATE])).rejects.toThrow("connect ECONNREFUSED");
  });
});

describe("run events out: the relay (at least once)", () => {
  const records = [10, 11, 12].map((n, seq) => ({ event: event({ seq }), sequenceNumber: String(n) }));

  it("every event to the bus in stream order; only the refused ones' records are redelivered", async () => {
    const published: RunHistoryEvent[][] = [];
    const bus: RunEventBus = {
      publish: async (events) => {
        published.push([...events]);
        return { rejected: [1] };
      },
    };
    const lines: string[] = [];
    const relay = createRunEventRelay({ bus, log: (l) => void lines.push(l) });
    expect(await relay.handle(records)).toEqual({ failedSequenceNumbers: ["11"] });
    expect(published).toEqual([records.map((r) => r.event)]);
    expect(lines).toEqual([
      `warn the event bus refused a run event; it is published again runId=${RUN} eventKind=PAUSED`,
    ]);
  });

  it("the bus unreachable: the whole batch is redelivered; an empty batch asks nothing", async () => {
    let calls = 0;
    const bus: RunEventBus = {
      publish: async () => {
        calls++;
        throw new Error("timeout");
      },
    };
    const relay = createRunEventRelay({ bus });
    expect(await relay.handle(records)).toEqual({ failedSequenceNumbers: ["10", "11", "12"] });
    expect(await relay.handle([])).toEqual({ failedSequenceNumbers: [] });
    expect(calls).toBe(1);
  });
});

describe("run events out: the RunEvents stream records", () => {
  const insert = (e: RunHistoryEvent, sequenceNumber?: string) => ({
    eventName: "INSERT" as const,
    dynamodb: {
      NewImage: marshall(runEventToItem(e), { removeUndefinedValues: true }) as Record<
        string,
        AttributeValue
      >,
      ...(sequenceNumber === undefined ? {} : { SequenceNumber: sequenceNumber }),
    },
  });

  it("an INSERT's new image is the event as written, nested values and all", () => {
    const withActor: RunHistoryEvent = {
      ...GATE,
      actor: {
        name: "ops",
        source: "CLIENT_CERTIFICATE",
        authenticated: true,
        subjectAltNames: ["DNS:ops.example.com"],
      },
    };
    expect(decodeRunEventRecord(insert(withActor, "42"))).toEqual({ event: withActor, sequenceNumber: "42" });
    expect(decodeRunEventRecord(insert(GATE))).toEqual({ event: GATE });
  });

  it("anything but an INSERT with an image publishes nothing; the handler reports refused records", async () => {
    const modify = { ...insert(GATE, "1"), eventName: "MODIFY" as const };
    expect(decodeRunEventRecord(modify)).toBeUndefined();
    expect(decodeRunEventRecord({ eventName: "REMOVE", dynamodb: { SequenceNumber: "2" } })).toBeUndefined();
    expect(decodeRunEventRecord({ eventName: "INSERT", dynamodb: {} })).toBeUndefined();

    const seen: RunHistoryEvent[] = [];
    const handler = runEventsBatchHandler(
      createRunEventRelay({
        bus: {
          publish: async (events) => {
            seen.push(...events);
            return { rejected: [0] };
          },
        },
      }),
    );
    expect(await handler({ Records: [modify, insert(GATE, "5")] })).toEqual({
      batchItemFailures: [{ itemIdentifier: "5" }],
    });
    expect(seen).toEqual([GATE]);
  });
});
