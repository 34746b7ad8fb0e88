/**
 * `flowctl run history <id>` and the events under `run watch`'s bars: a run's history
 * (ListOperationRunEvents) as a timeline people read, pure (the watch and the command share it).
 *
 *   TIME                  EVENT         PHASE  BY                        MESSAGE
 *   2026-11-20 10:00:00Z  created       1/3    alice (unauthenticated)   operation run created: 15 targets in 3 phases
 *   2026-11-20 10:00:01Z  started       1/3
 *   2026-11-20 10:04:12Z  gate tripped  2/3                              failure_count safety gate tripped for …
 *   2026-11-20 10:09:40Z  resumed       2/3    ops (certificate)         operation run resumed
 *
 * Phases are counted from 1, as everywhere in flowctl and in the messages the service writes.
 */
import * as pb from "../src/gen/flow/v1/flow.js";
import type { Connection } from "./client.js";
import { table, time } from "./output.js";

const K = pb.OperationRunEventKind;

/** What each kind is called in a timeline. */
const KIND_NAMES: Record<number, string> = {
  [K.OPERATION_RUN_EVENT_KIND_CREATED]: "created",
  [K.OPERATION_RUN_EVENT_KIND_STARTED]: "started",
  [K.OPERATION_RUN_EVENT_KIND_PHASE_OPENED]: "phase opened",
  [K.OPERATION_RUN_EVENT_KIND_PHASE_GATE_REACHED]: "phase gate",
  [K.OPERATION_RUN_EVENT_KIND_GATE_TRIPPED]: "gate tripped",
  [K.OPERATION_RUN_EVENT_KIND_PAUSED]: "paused",
  [K.OPERATION_RUN_EVENT_KIND_RESUMED]: "resumed",
  [K.OPERATION_RUN_EVENT_KIND_ADVANCED]: "advanced",
  [K.OPERATION_RUN_EVENT_KIND_CANCELLED]: "cancelled",
  [K.OPERATION_RUN_EVENT_KIND_CONFLICT_TIMEOUT]: "conflict timeout",
  [K.OPERATION_RUN_EVENT_KIND_WINDOW_OPENED]: "window opened",
  [K.OPERATION_RUN_EVENT_KIND_WINDOW_CLOSED]: "window closed",
  [K.OPERATION_RUN_EVENT_KIND_WINDOW_PAUSED]: "window paused",
  [K.OPERATION_RUN_EVENT_KIND_FINISHED]: "finished",
  [K.OPERATION_RUN_EVENT_KIND_RETRIED]: "retried",
  [K.OPERATION_RUN_EVENT_KIND_ROLLED_BACK]: "rolled back",
  [K.OPERATION_RUN_EVENT_KIND_SOAK_STARTED]: "soak started",
  [K.OPERATION_RUN_EVENT_KIND_TARGET_FAILURE_REPORTED]: "late failure",
  [K.OPERATION_RUN_EVENT_KIND_APPROVAL_REQUESTED]: "approval requested",
  [K.OPERATION_RUN_EVENT_KIND_APPROVED]: "approved",
  [K.OPERATION_RUN_EVENT_KIND_ACCESS_DENIED]: "access denied",
  [K.OPERATION_RUN_EVENT_KIND_EXTERNAL_CHECK_INCONCLUSIVE]: "check inconclusive",
};

export function kindName(kind: pb.OperationRunEventKind): string {
  return KIND_NAMES[kind] ?? `kind ${kind}`;
}

const S = pb.OperationRunActorSource;

/**
 * "ops (certificate)", "deployer (load balancer certificate, as alice)", "alice (unauthenticated)",
 * "anonymous (unauthenticated)"; "" for the service's own changes.
 */
export function actorText(actor: pb.OperationRunActor | undefined): string {
  if (actor === undefined) return "";
  switch (actor.source) {
    case S.OPERATION_RUN_ACTOR_SOURCE_CLIENT_CERTIFICATE:
    case S.OPERATION_RUN_ACTOR_SOURCE_LOAD_BALANCER_CERTIFICATE: {
      const how =
        actor.source === S.OPERATION_RUN_ACTOR_SOURCE_CLIENT_CERTIFICATE
          ? "certificate"
          : "load balancer certificate";
      return `${actor.name} (${how}${actor.declaredName === "" ? "" : `, as ${actor.declaredName}`})`;
    }
    case S.OPERATION_RUN_ACTOR_SOURCE_DECLARED:
      return `${actor.name} (unauthenticated)`;
    default:
      return "anonymous (unauthenticated)";
  }
}

/** The timeline table of `events` (oldest first, as the service lists them). */
export function historyTable(events: readonly pb.OperationRunEvent[]): string {
  return table(
    ["TIME", "EVENT", "PHASE", "BY", "MESSAGE"],
    events.map((e) => [
      time(e.time),
      kindName(e.kind),
      `${e.phaseIndex + 1}/${e.totalPhases}`,
      actorText(e.actor),
      e.message,
    ]),
  );
}

/** One line per event for the watch: "10:04:12 gate tripped (phase 2): failure_count …". */
export function eventLine(e: pb.OperationRunEvent): string {
  const at = e.time === undefined ? "--:--:--" : e.time.toISOString().slice(11, 19);
  const by = actorText(e.actor);
  const message = e.message === "" ? "" : `: ${e.message}`;
  return `${at} ${kindName(e.kind)} (phase ${e.phaseIndex + 1})${by === "" ? "" : ` by ${by}`}${message}`;
}

/** Pages of at most this many events: the service's own maximum. */
const PAGE = 1000;

/**
 * The run's events from `offset` on, every page: the watch asks for the ones after those it has,
 * the history command for all of them.
 */
export async function listEventsFrom(
  conn: Connection,
  runId: string,
  offset: number,
): Promise<{ events: pb.OperationRunEvent[]; total: number }> {
  const events: pb.OperationRunEvent[] = [];
  for (;;) {
    const page = await conn.flow.listOperationRunEvents({
      operationRunId: { id: runId },
      pagination: { offset: offset + events.length, limit: PAGE },
    });
    events.push(...page.events);
    if (page.events.length === 0 || offset + events.length >= page.total) {
      return { events, total: page.total };
    }
  }
}
