/**
 * The rollout benchmark's printout (bench/rollout.ts): one path's figures per step, per rack, per
 * kind of step and against the aims; the per-rack aims with the paths side by side; the median
 * rack's timeline.
 */
import type { OperationRule } from "../../src/domain/model.js";
import {
  AIMS,
  BEFORE_ACTIVATION,
  type Figures,
  HALVED_AIMS,
  type PartFigures,
  TODAY,
  usd,
} from "./rollout-figures.js";
import { PART } from "./rollout-parts.js";
import { heartbeats, type RolloutPath } from "./rollout-paths.js";
import { formatTable } from "./table.js";

/** How the benchmark was run: what the printout states beside the figures. */
export interface Sitting {
  concurrency: number;
  updateMs: number;
  waitMs: number;
  tickMs: number;
  paths: readonly RolloutPath[];
  /** The rule the run pinned; undefined: the built-in default. */
  rule: OperationRule | undefined;
  repeat: number;
}

export function report(f: Figures, runs: number, sitting: Sitting): string {
  const { concurrency: CONCURRENCY, updateMs: UPDATE_MS, waitMs: WAIT_MS, tickMs: TICK_MS } = sitting;
  const nf = (x: number, d = 1) => x.toFixed(d);
  const ops = (byOp: Record<string, number>) =>
    Object.entries(byOp)
      .filter(([, v]) => v > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${nf(v)}`)
      .join(", ");
  const rows = Object.entries(f.parts).map(([part, v]) => [
    part,
    nf(v.requests),
    nf(v.rcu),
    nf(v.wcu),
    nf(v.lambda),
    nf(v.transitions),
    ops(v.byOperation),
  ]);
  const sum = (k: keyof PartFigures) => Object.values(f.parts).reduce((a, v) => a + (v[k] as number), 0);
  rows.push([
    "total",
    nf(sum("requests")),
    nf(sum("rcu")),
    nf(sum("wcu")),
    nf(sum("lambda")),
    nf(sum("transitions")),
    "",
  ]);
  const pr = f.perRack;
  const med = runs > 1 ? ` (medians of ${runs} runs)` : "";
  const aim = (
    label: string,
    aimText: string,
    today: string,
    value: number,
    text: string,
    ok: (v: number) => boolean,
  ) => [label, aimText, today, text, ok(value) ? "met" : "NOT met"];
  const aims = [
    aim(
      "DynamoDB requests per rack",
      `≤ ${AIMS.requests}`,
      `~${TODAY.requests}`,
      pr.requests,
      `${nf(pr.requests)} (10-min flashes: ${nf(f.cost.model.requests, 0)})`,
      (v) => v <= AIMS.requests,
    ),
    aim(
      "capacity units per rack (estimated)",
      `≤ ${AIMS.capacityUnits}`,
      `${TODAY.capacityUnits} (moto's figures)`,
      pr.capacityUnits,
      `${nf(pr.capacityUnits)} (moto's figures: ${nf(pr.capacityUnitsAsMotoReports)})`,
      (v) => v <= AIMS.capacityUnits,
    ),
    aim(
      "Lambda invocations per rack",
      `≤ ${AIMS.lambda}`,
      `${TODAY.lambda}`,
      pr.lambda,
      nf(pr.lambda),
      (v) => v <= AIMS.lambda,
    ),
    aim(
      "rollout wall time / ideal",
      `≤ ${AIMS.rolloutVsIdeal}×`,
      `${TODAY.rolloutVsIdeal}×`,
      f.wallMs / f.rolloutIdealMs,
      `${nf(f.wallMs / f.rolloutIdealMs, 2)}×`,
      (v) => v <= AIMS.rolloutVsIdeal,
    ),
    aim(
      "one rack p50 / ideal",
      `≤ ${AIMS.rackVsIdeal}×`,
      `${TODAY.rackVsIdeal}×`,
      f.rack.p50 / f.rackIdealMs,
      `${nf(f.rack.p50 / f.rackIdealMs, 2)}×`,
      (v) => v <= AIMS.rackVsIdeal,
    ),
    aim(
      "cost per rack, 10-minute flashes",
      `< $${AIMS.cost10min}`,
      `$${TODAY.cost10min}`,
      f.cost.model.total,
      usd(f.cost.model.total),
      (v) => v < AIMS.cost10min,
    ),
    // The aims set 2026-12-04, against 2026-12-03's figures (before activation joined the default rule).
    aim(
      "DynamoDB requests per rack (aim of 2026-12-04)",
      `≤ ${HALVED_AIMS.requests}`,
      `${BEFORE_ACTIVATION.requests} (2026-12-03)`,
      pr.requests,
      nf(pr.requests),
      (v) => v <= HALVED_AIMS.requests,
    ),
    aim(
      "Lambda invocations per rack (aim of 2026-12-04)",
      `≤ ${HALVED_AIMS.lambda}`,
      `${BEFORE_ACTIVATION.lambda} (2026-12-03)`,
      pr.lambda,
      nf(pr.lambda),
      (v) => v <= HALVED_AIMS.lambda,
    ),
    aim(
      "cost per rack, 10-minute flashes (aim of 2026-12-04)",
      `≤ ${usd(HALVED_AIMS.cost10min)}`,
      `${usd(BEFORE_ACTIVATION.cost10min)} (2026-12-03)`,
      f.cost.model.total,
      usd(f.cost.model.total),
      (v) => v <= HALVED_AIMS.cost10min,
    ),
  ];
  return [
    `Rollout benchmark: ${f.racks} racks × ${f.components} BMCs, ${CONCURRENCY} at a time, one phase; every flash ${UPDATE_MS} ms; Wait states ${WAIT_MS} ms (local override)${med}`,
    `Run ${f.status} in ${(f.wallMs / 1000).toFixed(1)} s; ${f.upgraded}/${f.racks} racks upgraded; ${f.flashes} flashes; driven through the dispatcher (src/app/dispatcher.ts): stream and direct wake-ups, a tick every ${TICK_MS / 1000} s`,
    "",
    "Per rack upgraded, by step: DynamoDB requests, read and write capacity units (estimated), Lambda invocations, state transitions",
    formatTable(
      ["step", "requests", "RCU", "WCU", "Lambda", "transitions", "DynamoDB requests by operation"],
      rows,
    ),
    "",
    "Per rack upgraded (measured on the local stack)",
    `  state transitions        ${nf(pr.transitions)}`,
    `  Lambda invocations       ${nf(pr.lambda)}  (task-steps ${nf(pr.taskSteps)}: ${Object.entries(
      f.taskStepsByStep,
    )
      .map(([k, v]) => `${k} ${nf(v)}`)
      .join(", ")}; bmc-result ${nf(pr.bmcResult)} for ${nf(pr.reportsReceived)} reports)`,
    `  IoT messages             ${nf(pr.commands + pr.reports)}  (commands ${nf(pr.commands)}, BMC reports ${nf(pr.reports)}, ${nf(pr.reportsIngested)} of them through Basic Ingest)`,
    `  DynamoDB requests        ${nf(pr.requests)}`,
    `  the definition's model   ${f.rackModel.local.steps} wave steps: ${f.rackModel.local.transitions} state transitions, ${f.rackModel.local.taskSteps} task-steps invocations, ${f.rackModel.local.iotMessages} IoT messages at one check a step (bench/lib/rack-model.ts; measured above: ${nf(pr.transitions)}, ${nf(pr.taskSteps)}, ${nf(pr.commands + pr.reports)}, more where a wait timed out)`,
    `  DynamoDB capacity units  ${nf(pr.capacityUnits)}  (${nf(pr.wcu)} WRU, ${nf(pr.rcu)} RRU; estimated by DynamoDB's sizing rules; moto's own figures where it gives any: ${nf(pr.capacityUnitsAsMotoReports)})`,
    `  cost at list prices      ${usd(f.cost.measured)}  = ${Object.entries(f.cost.breakdown)
      .map(([k, v]) => `${k} ${usd(v)}`)
      .join(" + ")}`,
    "",
    `Per rack, modelled for production timing (10-min flashes, each wait woken by the wave's last result or timed out into a check on the default poll schedule, timed by the reported progress, ${heartbeats(f.path) ? "the wait kept by AwaitWave's heartbeat while the flash reports (25/50/75 %)" : "the wait timed out after awaitSeconds whatever the flash reports (no heartbeat)"}: ${nf(f.cost.model.checksPerWave)} checks per flash step instead of ${nf(f.cost.model.flashChecksPerStep)}, ${f.cost.model.flashSteps} flash steps of ${pr.waves} wave steps per rack, the activations and bring-ups assumed woken within their first wait as here; ${nf(f.cost.model.reportWritesPerFlash, 0)} report writes more per flash step, its progress reports written as they are 150 s apart (here they fall in the flash's first second and are not); the same polls without the wake-up: ${nf(f.cost.model.pollChecksPerWave)} checks per wave; the backoff alone: ${nf(f.cost.model.backoffChecksPerWave)}, ${nf(f.cost.model.backoffTransitions, 0)} state transitions)`,
    `  the definition's model at this timing (bench/lib/rack-model.ts, what bench:fleet spreads over each rack): ${f.rackModel.production.transitions} state transitions, ${f.rackModel.production.taskSteps} task-steps invocations, ${f.rackModel.production.iotMessages} IoT messages, at most ${f.rackModel.production.bmcResultUnshared} bmc-result invocations (no batch shared)`,
    `  state transitions ${nf(f.cost.model.transitions, 0)} (measured here: ${nf(pr.transitions, 0)}), task-steps invocations ${nf(f.cost.model.taskSteps, 0)}, DynamoDB requests ${nf(f.cost.model.requests, 0)} (measured here: ${nf(pr.requests, 0)}), WRU ${nf(f.cost.model.wru, 0)}, RRU ${nf(f.cost.model.rru, 0)} → ${usd(f.cost.model.total)} per rack, ${usd(f.cost.model.total * 1000)} per 1,000 racks`,
    `  the BMC reports both ways: ${usd(f.cost.model.throughBroker)} per rack through the message broker (plain evt topics, $1/M messaging each), ${usd(f.cost.model.throughBasicIngest)} through Basic Ingest ($aws/rules/<rule>/…, an agent's reportsRule: no messaging charge); this run's BMCs sent ${nf(pr.reportsIngested)} of ${nf(pr.reports)} that way`,
    "",
    "Prices: us-east-1 list prices (checked 2026-11): Step Functions Standard $0.025/1k transitions; Lambda $0.20/1M requests + $0.0000166667/GB-s (256 MB × 60 ms assumed);",
    "        IoT Core $1.00/1M messages + rules $0.15/1M triggered + $0.15/1M actions; SQS $0.40/1M requests; DynamoDB on-demand $0.625/1M WRU, $0.125/1M RRU.",
    "        Not included: IoT connectivity ($0.08 per million connection-minutes, a fleet cost, not per upgrade), CloudWatch logs/metrics, the ticker and dispatcher Lambdas.",
    "",
    "Wall time",
    `  rollout   ${(f.wallMs / 1000).toFixed(1)} s   ideal ${(f.rolloutIdealMs / 1000).toFixed(1)} s  (${Math.ceil(f.racks / CONCURRENCY)} rounds of ${CONCURRENCY} racks × ${f.rackIdealMs / UPDATE_MS} groups × ${UPDATE_MS} ms)  → ${nf(f.wallMs / f.rolloutIdealMs, 2)}× ideal`,
    `  one rack  p50 ${(f.rack.p50 / 1000).toFixed(2)} s, p90 ${(f.rack.p90 / 1000).toFixed(2)} s, max ${(f.rack.max / 1000).toFixed(2)} s   ideal ${(f.rackIdealMs / 1000).toFixed(2)} s  → p50 ${nf(f.rack.p50 / f.rackIdealMs, 2)}× ideal`,
    `  DynamoDB calls ${nf(f.callsPerSecond, 0)}/s on serialized moto`,
    "",
    "Aims (set 2026-12-01, and 2026-12-04 where the row says), against the figures measured then",
    formatTable(["figure", "aim", "then", "now", ""], aims),
    "",
    "Per rack, by the kind of step (the rule's steps of every wave): what the flash, the activation, the bring-up and any health check cost",
    formatTable(
      ["kind", "steps", "requests", "transitions", "Lambda", "checks", "wall s (sum)", "wall s per step"],
      Object.entries(f.byKind).map(([kind, k]) => [
        kind,
        nf(k.steps, 0),
        nf(k.requests),
        nf(k.transitions),
        nf(k.lambda),
        nf(k.checks),
        nf(k.wallMs / 1000, 2),
        nf(k.wallMs / 1000 / Math.max(1, k.steps), 2),
      ]),
    ),
  ].join("\n");
}

/**
 * The per-rack aims against the figures measured before activation, with the old path's and the
 * new path's figures of this sitting side by side (bench/lib/rollout-paths.ts).
 */
export function halvedAims(byPath: Partial<Record<RolloutPath, Figures>>, sitting: Sitting): string {
  const { paths: PATHS, rule: RULE, repeat: REPEAT } = sitting;
  const nf = (x: number, d = 1) => x.toFixed(d);
  const columns = PATHS.map((p) =>
    p === "before"
      ? "SendWave per step"
      : p === "timeout"
        ? "AwaitWave times out"
        : p === "twowrites"
          ? "old path (heartbeat, two writes a step)"
          : p === "choice"
            ? "judged, through WaveDone?"
            : "new path (one write a step)",
  );
  const row = (
    label: string,
    aim: number | undefined,
    then: string,
    value: (f: Figures) => number,
    text: (x: number) => string,
  ) => {
    const values = PATHS.map((p) => byPath[p]).map((f) => (f === undefined ? undefined : value(f)));
    const last = values[values.length - 1];
    const verdict = aim === undefined || last === undefined ? "" : last <= aim ? "met" : "NOT met";
    return [
      label,
      aim === undefined ? "-" : `≤ ${text(aim)}`,
      then,
      ...values.map((v) => (v === undefined ? "-" : text(v))),
      verdict,
    ];
  };
  const rows = [
    row(
      "DynamoDB requests per rack",
      HALVED_AIMS.requests,
      `${BEFORE_ACTIVATION.requests}`,
      (f) => f.perRack.requests,
      (x) => nf(x),
    ),
    row(
      "… of them storing BMC acks and progress alone",
      undefined,
      "-",
      (f) => f.parts[PART.news]?.requests ?? 0,
      (x) => nf(x),
    ),
    row(
      "Lambda invocations per rack",
      HALVED_AIMS.lambda,
      `${BEFORE_ACTIVATION.lambda}`,
      (f) => f.perRack.lambda,
      (x) => nf(x),
    ),
    row(
      "… of them task-steps",
      undefined,
      "-",
      (f) => f.perRack.taskSteps,
      (x) => nf(x),
    ),
    row(
      "DynamoDB requests per rack, 10-minute flashes (modelled)",
      HALVED_AIMS.requests,
      "-",
      (f) => f.cost.model.requests,
      (x) => nf(x),
    ),
    row(
      "… of them storing BMC acks and progress alone (modelled)",
      undefined,
      "-",
      (f) => f.cost.model.newsRequests,
      (x) => nf(x),
    ),
    row(
      "Lambda invocations per rack, 10-minute flashes (modelled; bmc-result batched as here)",
      HALVED_AIMS.lambda,
      "-",
      (f) => f.cost.model.taskSteps + f.perRack.bmcResult,
      (x) => nf(x),
    ),
    row(
      "state transitions per rack, 10-minute flashes (modelled)",
      undefined,
      "-",
      (f) => f.cost.model.transitions,
      (x) => nf(x, 0),
    ),
    row(
      "state transitions per rack",
      undefined,
      `${BEFORE_ACTIVATION.transitions}`,
      (f) => f.perRack.transitions,
      (x) => nf(x),
    ),
    row(
      "IoT messages per rack",
      undefined,
      `${BEFORE_ACTIVATION.iot}`,
      (f) => f.perRack.commands + f.perRack.reports,
      (x) => nf(x, 0),
    ),
    row(
      "modelled cost per rack, 10-minute flashes",
      HALVED_AIMS.cost10min,
      usd(BEFORE_ACTIVATION.cost10min),
      (f) => f.cost.model.total,
      usd,
    ),
    row(
      "… its reports through the broker",
      HALVED_AIMS.cost10min,
      "-",
      (f) => f.cost.model.throughBroker,
      usd,
    ),
    row(
      "… its reports through Basic Ingest",
      HALVED_AIMS.cost10min,
      "-",
      (f) => f.cost.model.throughBasicIngest,
      usd,
    ),
    row(
      "rollout wall time / ideal",
      undefined,
      "-",
      (f) => f.wallMs / f.rolloutIdealMs,
      (x) => `${nf(x, 2)}×`,
    ),
  ];
  return [
    `Per-rack aims (set 2026-12-04, against 2026-12-03's figures measured before activation joined the default rule), ${PATHS.length > 1 ? `${PATHS.join(", ")} paths in this sitting` : `the ${PATHS[0]} path`}${RULE === undefined ? "" : `, the rule "${RULE.name}"`}${REPEAT > 1 ? ` (medians of ${REPEAT} runs each)` : ""}`,
    formatTable(["figure", "aim", "2026-12-03", ...columns, ""], rows),
  ].join("\n");
}

/** The median rack's states from its submission: when each was entered, and how long until the next. */
export function printTimeline(
  tasks: readonly { id: string; createdAt: number; finishedAt?: number }[],
  timelines: Map<string, [number, string][]>,
): void {
  const byDuration = [...tasks].sort(
    (a, b) => (a.finishedAt ?? 0) - a.createdAt - ((b.finishedAt ?? 0) - b.createdAt),
  );
  const task = byDuration[Math.floor(byDuration.length / 2)];
  const states = task === undefined ? undefined : timelines.get(task.id);
  if (task === undefined || states === undefined) return;
  const lines = [`Timeline of the median rack (task ${task.id}), ms from its submission:`];
  const ends = [...states.slice(1).map(([t]) => t), task.finishedAt ?? Date.now()];
  states.forEach(([t, name], i) => {
    lines.push(
      `  ${String(t - task.createdAt).padStart(6)}  ${name.padEnd(28)} ${String((ends[i] ?? t) - t).padStart(5)} ms`,
    );
  });
  lines.push(`  ${String((task.finishedAt ?? Date.now()) - task.createdAt).padStart(6)}  (task finished)`);
  console.log(`${lines.join("\n")}\n`);
}
