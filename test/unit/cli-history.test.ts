/**
 * flowctl's view of the run history (cli/history.ts): the timeline of `run history`, the event
 * lines under `run watch`'s bars, who did it, and the OS user flowctl declares (cli/client.ts).
 */
import { describe, expect, it } from "vitest";
import { actorHeaderValue } from "../../cli/client.js";
import { actorText, eventLine, historyTable, kindName } from "../../cli/history.js";
import { buildModel, RECENT_EVENTS, renderFrame } from "../../cli/watch-view.js";
import * as pb from "../../src/gen/flow/v1/flow.js";

const RUN_ID = "9a6f1a9e-0000-4000-8000-000000000001";
const K = pb.OperationRunEventKind;
const A = pb.OperationRunActorSource;

const event = (over: Partial<pb.OperationRunEvent>): pb.OperationRunEvent =>
  pb.OperationRunEvent.fromPartial({
    id: `${RUN_ID}/001795168800000.00`,
    operationRunId: { id: RUN_ID },
    time: new Date("2026-11-20T10:00:00Z"),
    phaseIndex: 0,
    totalPhases: 3,
    ...over,
  });

const CERT = { name: "ops", source: A.OPERATION_RUN_ACTOR_SOURCE_CLIENT_CERTIFICATE, authenticated: true };

describe("flowctl history: who did it", () => {
  it.each<[string, Partial<pb.OperationRunActor> | undefined, string]>([
    ["the service's own change", undefined, ""],
    ["a client certificate", CERT, "ops (certificate)"],
    [
      "a client certificate with a declared name",
      { ...CERT, declaredName: "alice" },
      "ops (certificate, as alice)",
    ],
    [
      "the load balancer's certificate",
      {
        name: "deployer",
        source: A.OPERATION_RUN_ACTOR_SOURCE_LOAD_BALANCER_CERTIFICATE,
        authenticated: true,
      },
      "deployer (load balancer certificate)",
    ],
    [
      "a declared name",
      { name: "alice", source: A.OPERATION_RUN_ACTOR_SOURCE_DECLARED },
      "alice (unauthenticated)",
    ],
    ["nobody", { source: A.OPERATION_RUN_ACTOR_SOURCE_ANONYMOUS }, "anonymous (unauthenticated)"],
  ])("%s → %j", (_name, actor, text) => {
    expect(actorText(actor === undefined ? undefined : pb.OperationRunActor.fromPartial(actor))).toBe(text);
  });

  it("every kind has a name; a newer service's unknown kind says its number", () => {
    for (const kind of Object.values(K).filter(
      (v): v is pb.OperationRunEventKind => typeof v === "number" && v > 0,
    )) {
      expect(kindName(kind)).not.toMatch(/^kind /);
    }
    expect(kindName(42 as pb.OperationRunEventKind)).toBe("kind 42");
  });
});

describe("flowctl history: the timeline", () => {
  it("oldest first, phases counted from 1, the caller where there is one, the service's message", () => {
    expect(
      historyTable([
        event({
          kind: K.OPERATION_RUN_EVENT_KIND_CREATED,
          message: "operation run created: 15 targets in 3 phases",
          actor: pb.OperationRunActor.fromPartial({
            name: "alice",
            source: A.OPERATION_RUN_ACTOR_SOURCE_DECLARED,
          }),
        }),
        event({
          kind: K.OPERATION_RUN_EVENT_KIND_STARTED,
          time: new Date("2026-11-20T10:00:01Z"),
          message: "operation run started",
        }),
        event({
          kind: K.OPERATION_RUN_EVENT_KIND_GATE_TRIPPED,
          time: new Date("2026-11-20T10:04:12Z"),
          phaseIndex: 1,
          message: "failure_count safety gate tripped for current_phase: 3/5 targets failed (threshold 3)",
        }),
        event({
          kind: K.OPERATION_RUN_EVENT_KIND_RESUMED,
          time: new Date("2026-11-20T10:09:40Z"),
          phaseIndex: 1,
          message: "operation run resumed",
          actor: pb.OperationRunActor.fromPartial(CERT),
        }),
      ]).split("\n"),
    ).toEqual([
      "TIME                  EVENT         PHASE  BY                       MESSAGE",
      "2026-11-20 10:00:00Z  created       1/3    alice (unauthenticated)  operation run created: 15 targets in 3 phases",
      "2026-11-20 10:00:01Z  started       1/3                             operation run started",
      "2026-11-20 10:04:12Z  gate tripped  2/3                             failure_count safety gate tripped for current_phase: 3/5 targets failed (threshold 3)",
      "2026-11-20 10:09:40Z  resumed       2/3    ops (certificate)        operation run resumed",
    ]);
  });

  it("an event line: time, kind, phase, who, message", () => {
    expect(
      eventLine(
        event({
          kind: K.OPERATION_RUN_EVENT_KIND_CANCELLED,
          time: new Date("2026-11-20T10:12:00.500Z"),
          phaseIndex: 1,
          message: "operation run cancelled: wrong image",
          actor: pb.OperationRunActor.fromPartial(CERT),
        }),
      ),
    ).toBe("10:12:00 cancelled (phase 2) by ops (certificate): operation run cancelled: wrong image");
    expect(eventLine(event({ kind: K.OPERATION_RUN_EVENT_KIND_STARTED, time: undefined, message: "" }))).toBe(
      "--:--:-- started (phase 1)",
    );
  });
});

describe("flowctl watch: the last events under the bars", () => {
  const run = pb.OperationRun.fromPartial({
    summary: {
      id: { id: RUN_ID },
      name: "canary",
      state: { status: pb.OperationRunStatus.OPERATION_RUN_STATUS_RUNNING },
      totalPhases: 1,
      startedAt: new Date("2026-11-20T10:00:00Z"),
    },
  });
  const events = Array.from({ length: 7 }, (_, i) =>
    event({
      kind: K.OPERATION_RUN_EVENT_KIND_PAUSED,
      time: new Date(Date.parse("2026-11-20T10:00:00Z") + i * 1000),
      message: `event ${i}`,
    }),
  );

  it(`only the last ${RECENT_EVENTS}, oldest first, between the gates and the legend`, () => {
    const model = buildModel({
      run,
      targets: [],
      plannedSizes: [0],
      now: new Date("2026-11-20T10:01:00Z"),
      events,
    });
    expect(model.recentEvents).toEqual(events.slice(2).map(eventLine));
    const lines = renderFrame(model, { color: false, columns: 200, barWidth: 10 });
    expect(lines.slice(-6)).toEqual([
      "events   10:00:02 paused (phase 1): event 2",
      "         10:00:03 paused (phase 1): event 3",
      "         10:00:04 paused (phase 1): event 4",
      "         10:00:05 paused (phase 1): event 5",
      "         10:00:06 paused (phase 1): event 6",
      "legend   █ completed  x failed  / terminated  ▒ in flight  ░ pending",
    ]);
  });

  it("no history (none yet, or a service without it): no events lines", () => {
    const model = buildModel({ run, targets: [], plannedSizes: [0], now: new Date("2026-11-20T10:01:00Z") });
    expect(model.recentEvents).toEqual([]);
    expect(renderFrame(model, { color: false, columns: 200 }).some((l) => l.startsWith("events"))).toBe(
      false,
    );
  });
});

describe("flowctl: the OS user it declares", () => {
  it.each<[string | undefined, string | undefined]>([
    ["alice", "alice"],
    [" alice ", "alice"],
    ["DOMAIN\\alice", "DOMAIN\\alice"],
    ["zoë", "zo%C3%AB"],
    ["", undefined],
    [undefined, undefined],
    ["a".repeat(129), undefined],
  ])("%j → %j", (user, sent) => {
    expect(actorHeaderValue(user)).toBe(sent);
  });
});
