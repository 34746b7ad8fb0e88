/**
 * What a rack upgraded costs at list prices (rollout-figures.ts PRICE): as measured on the local
 * stack, and modelled for production timing, where every flash takes 10 minutes and the product's
 * own schedule (production-model.ts) decides how many checks it takes: each check more costs what
 * a check costs here (its state transitions, its task-steps invocation and read, and the
 * AwaitWave before it: an invocation and its write of the set, measured as a wave's average write),
 * and each flash step's reports write its set as often as a 10-minute flash's do (its progress
 * reports, each past the receiver's progress interval, written; here, in a flash of `flashMs`,
 * they fall in the first second after the acknowledgement and are not): the writes more at that
 * timing, each at the size of a report write measured here.
 * Reports sent through AWS IoT Basic Ingest (`$aws/rules/<rule>/...`) skip the message broker and
 * its messaging charge; the rule, its action and the SQS request remain. The model's total prices
 * the reports as this run's BMCs sent them, and both ways besides (all through the broker, all
 * through Basic Ingest), from the same counts.
 */

import { type ProductionWave, reportWritesOfFlash } from "./production-model.js";
import { type Figures, type KindFigures, LAMBDA_PRICE, type PartFigures, PRICE } from "./rollout-figures.js";
import { PART, type StepKind } from "./rollout-parts.js";

export function costOf(input: {
  perRack: Figures["perRack"];
  parts: Record<string, PartFigures>;
  byKind: Partial<Record<StepKind, KindFigures>>;
  /** CheckWave invocations per rack, and AwaitWave ones. */
  checks: number;
  awaits: number;
  prod: ProductionWave;
  /** This run's flash, ms (the simulated BMCs' updateMs). */
  flashMs: number;
}): Figures["cost"] {
  const { perRack, parts, byKind, checks, awaits, prod, flashMs } = input;
  // bmc-result: one IoT rule action per report; one SQS request per report when the rule sends
  // them to a queue (the receiver then takes them in batches), else one Lambda invocation each.
  const queued = perRack.bmcResult < perRack.reportsReceived;
  const iotCostWith = (brokered: number) =>
    (perRack.commands + brokered) * PRICE.iotMessage +
    perRack.reports * (PRICE.iotRule + PRICE.iotAction + (queued ? PRICE.sqsRequest : 0));
  const iotCost = iotCostWith(perRack.reports - perRack.reportsIngested);
  const breakdown = {
    "Step Functions": perRack.transitions * PRICE.transition,
    Lambda: perRack.lambda * LAMBDA_PRICE,
    [queued ? "IoT + SQS" : "IoT"]: iotCost,
    DynamoDB: perRack.wcu * PRICE.wru + perRack.rcu * PRICE.rru,
  };
  const measured = Object.values(breakdown).reduce((a, b) => a + b, 0);

  // Production timing: every wave a 10-minute flash; the product's own schedule decides how many
  // checks that takes (bench/lib/production-model.ts). Each extra check costs what a check costs
  // here: its state transitions, its task-steps invocation and read, and the AwaitWave before it
  // (an invocation and its write of the set, measured as a wave's average write).
  const wavePart = (p: string) => p.startsWith("wave ");
  const checkRcu =
    checks > 0
      ? Object.entries(parts)
          .filter(([p]) => wavePart(p))
          .reduce((sum, [, v]) => sum + v.rcu, 0) / checks
      : 0;
  // Each check is one read (the wave's results, with the task at the last step).
  const checkReads =
    checks > 0
      ? Object.entries(parts)
          .filter(([p]) => wavePart(p))
          .reduce((sum, [, v]) => sum + (v.byOperation.GetItem ?? 0) + (v.byOperation.BatchGetItem ?? 0), 0) /
        checks
      : 0;
  const awaitsPerCheck = checks > 0 ? awaits / checks : 0;
  const waveWrites = Object.entries(parts)
    .filter(([p]) => wavePart(p))
    .reduce((sum, [, v]) => ({ wcu: sum.wcu + v.wcu, n: sum.n + (v.byOperation.UpdateItem ?? 0) }), {
      wcu: 0,
      n: 0,
    });
  const awaitWru = waveWrites.n > 0 ? waveWrites.wcu / waveWrites.n : 0;
  // Only the flashes take 10 minutes: an activation or a bring-up (a BMC or host back within a
  // few minutes) is assumed woken within its first wait, as here, so only flash steps change their
  // checks. Each check more is a timed-out AwaitWave (its write) and a check that reads the wave's
  // set; fewer (a flash step checked here more often than the production schedule checks it: a
  // loaded machine's 300-ms flash outlasting the local net) take as much away, so the model
  // follows the schedule, not this machine's load.
  const flash = byKind.flash ?? { steps: perRack.waves, checks };
  const flashChecksPerStep = flash.steps > 0 ? flash.checks / flash.steps : 0;
  const extraChecks = (prod.checksPerWave - flashChecksPerStep) * flash.steps;
  const backoffExtraChecks = (prod.backoffChecksPerWave - flashChecksPerStep) * flash.steps;
  // The report writes a 10-minute flash step makes beyond those of this run's flash (its progress).
  const reportWritesPerFlash = Math.max(0, prod.reportWritesPerFlash - reportWritesOfFlash(flashMs));
  const extraReportWrites = reportWritesPerFlash * flash.steps;
  // Each at the size of a write of acknowledgements and progress alone here (else any report write's).
  const news = parts[PART.news];
  const sized = news !== undefined && news.requests > 0 ? news : parts[PART.reports];
  const reportWcu = sized !== undefined && sized.requests > 0 ? sized.wcu / sized.requests : 1;
  const model = {
    checksPerWave: prod.checksPerWave,
    transitions: perRack.transitions + extraChecks * prod.transitionsPerCheck,
    backoffChecksPerWave: prod.backoffChecksPerWave,
    backoffTransitions: perRack.transitions + backoffExtraChecks * prod.transitionsPerCheck,
    pollChecksPerWave: prod.pollChecksPerWave,
    taskSteps: perRack.taskSteps + extraChecks * (1 + awaitsPerCheck),
    rru: Math.max(0, perRack.rcu + extraChecks * Math.max(1, checkRcu)),
    wru: perRack.wcu + extraChecks * awaitsPerCheck * awaitWru + extraReportWrites * reportWcu,
    requests: perRack.requests + extraChecks * (Math.max(1, checkReads) + awaitsPerCheck) + extraReportWrites,
    newsRequests: (news?.requests ?? 0) + extraReportWrites,
    reportWritesPerFlash,
    flashSteps: flash.steps,
    flashChecksPerStep,
    total: 0,
  };
  const rest =
    model.transitions * PRICE.transition +
    (model.taskSteps + perRack.bmcResult) * LAMBDA_PRICE +
    model.wru * PRICE.wru +
    model.rru * PRICE.rru;
  model.total = rest + iotCost;
  const reportsWays = {
    throughBroker: rest + iotCostWith(perRack.reports),
    throughBasicIngest: rest + iotCostWith(0),
  };

  return { measured, breakdown, model: { ...model, ...reportsWays } };
}
