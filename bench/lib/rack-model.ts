/**
 * A rack's child-task traffic modelled for production timing, from the shape of the child-task
 * definition (state-machines/child-task.asl.json) and the product's own wait schedule
 * (production-model.ts), for a rule and a rack: the state transitions, the task-steps invocations,
 * the IoT messages and the bmc-result invocations a rack of that shape costs when every wait is
 * woken by its last result, the flashes take FLASH_SECONDS and so time out into extra checks.
 *
 * bench:rollout prints it beside what it measured (so the model cannot drift from the product
 * unnoticed), and bench:fleet spreads it over each simulated child task (so the fleet's rates
 * follow the definition, not a figure copied by hand).
 *
 * The paths (rollout-paths.ts): "after", the definition as it is (the preflight makes the first
 * step, AwaitWave sends it; each wait woken with a step's answers goes on to its twin, which
 * judges it and sends the next: one state a step, one invocation), "choice" the definition before
 * the twins (a woken wave passes WaveDone?: two states a step), "twowrites" the definition before
 * AwaitWave judged and sent (CheckWave judged each step and the checks sent the next: AwaitWave,
 * CheckWave and WaveDone? a step, a write more),
 * "timeout" the same too (it differs in how many checks a flash step takes: `checksPerFlashStep`),
 * and "before", a SendWave and a MoreWaves? per step as well.
 */
import { isRackCycle } from "../../src/app/child-task/rack-cycle.js";
import { HEARTBEAT_INTERVAL_MS } from "../../src/domain/command-sets.js";
import type { InventoryComponent } from "../../src/domain/inventory.js";
import type { ComponentType, OperationRule, RuleAction } from "../../src/domain/model.js";
import { FLASH_SECONDS, PROGRESS_PERCENTS } from "./production-model.js";
import type { RolloutPath } from "./rollout-paths.js";

/** The rollout benchmark's child-task settings: one wave per group of a GB200 rack (at most 18 trays). */
export const ROLLOUT_MAX_PARALLEL = 18;

/**
 * The definition's shape on each path: the states and Lambda invocations of a task, and of a step.
 *
 * A task: every task passes AcquireLock, LockAcquired?, AwaitPreflight, CheckPreflight,
 * PreflightDone? and AlreadyFinished (the last step's judge records the outcome), invoking
 * acquireLock, awaitQueries and checkQueries; as it is ("after"), the first step's AwaitWave too,
 * which sends it (the steps' own are their judges'); with WaveDone? between the waits ("choice"),
 * that first wait's WaveDone? as well.
 *
 * A step, as it is: the wait (AwaitWave or AwaitNextWave) that judges it and sends the next, one
 * invocation (awaitWave); with WaveDone? between the waits: + WaveDone?; before AwaitWave judged:
 * AwaitWave, CheckWave, WaveDone? (awaitWave, checkWave); before the checks made the next step:
 * + MoreWaves?, SendWave. A sleep, a retry and an external check take CheckWave's path still
 * (more states than these: none in the rules modelled here).
 */
const SHAPE: Record<
  RolloutPath,
  { taskStates: number; taskInvocations: number; stepStates: number; stepInvocations: number }
> = {
  after: { taskStates: 7, taskInvocations: 4, stepStates: 1, stepInvocations: 1 },
  choice: { taskStates: 8, taskInvocations: 4, stepStates: 2, stepInvocations: 1 },
  twowrites: { taskStates: 6, taskInvocations: 3, stepStates: 3, stepInvocations: 2 },
  timeout: { taskStates: 6, taskInvocations: 3, stepStates: 3, stepInvocations: 2 },
  before: { taskStates: 6, taskInvocations: 3, stepStates: 5, stepInvocations: 3 },
};
/**
 * A check more (a wait timed out): CheckWave, WaveDone? and the AwaitWave that waits again
 * (before AwaitWave judged: AwaitWave, CheckWave, WaveDone?), two of them invocations.
 */
const CHECK_STATES = 3;
const CHECK_INVOCATIONS = 2;

/**
 * What a BMC sends back per command, as the simulated fleet reports (local/bmc-fleet.ts): an
 * update's acknowledgement, its progress and its result; a reset's acknowledgement and the status
 * it answers once back; a query's status. Each is a moment of its own at production timing
 * (minutes apart), so a batch of the reports queue of its own at worst.
 */
function reportsPerCommand(action: RuleAction): number {
  switch (action) {
    case "UPDATE_FIRMWARE":
      return 2 + PROGRESS_PERCENTS.length;
    case "RESET_BMC":
    case "POWER_CYCLE_HOST":
    case "AC_CYCLE":
      return 2;
    case "SLEEP":
      return 0;
    default:
      return 1;
  }
}

export interface RackModel {
  /** Wave steps a rack runs (every stage's waves, each through the stage's steps). */
  steps: number;
  flashSteps: number;
  transitions: number;
  taskSteps: number;
  /** Commands out and reports back, the preflight's queries included. */
  iotMessages: number;
  commands: number;
  reports: number;
  /**
   * bmc-result invocations with no batch shared: one per report moment of each step (and the
   * preflight's answers). Racks in flight together share batches, so a fleet pays fewer.
   */
  bmcResultUnshared: number;
}

/**
 * The model of one rack of `components` under `rule` (the rule's stages in order, each over the
 * components of its types, in waves of the stage's maxParallel or `maxParallel`), with
 * `checksPerFlashStep` checks per flash step (production-model.ts: 1 for a 10-minute flash that reports every 150 s, its wait kept by heartbeats; 2 without them) and
 * one for every other step (a reset or a query answered within its first wait).
 */
export function modelRack(
  rule: Pick<OperationRule, "stages">,
  components: readonly Pick<InventoryComponent, "type">[],
  options: { maxParallel: number; checksPerFlashStep: number; path: RolloutPath },
): RackModel {
  const count = (types: readonly ComponentType[]) =>
    components.filter((c) => types.length === 0 || types.includes(c.type)).length;
  let steps = 0;
  let flashSteps = 0;
  let commands = components.length;
  let reports = components.length;
  let moments = 1;
  for (const stage of rule.stages) {
    const n = count(stage.componentTypes);
    if (n === 0) continue;
    const size = stage.maxParallel > 0 ? stage.maxParallel : options.maxParallel;
    const waves = Math.ceil(n / Math.max(1, size));
    for (const step of stage.steps) {
      steps += waves;
      if (step.action === "UPDATE_FIRMWARE") flashSteps += waves;
      if (step.action === "SLEEP") continue;
      // A whole-rack AC cycle is one reset a wave, to the rack's power shelf (rack-cycle.ts).
      const sent = isRackCycle(step) ? waves : n;
      commands += sent;
      reports += sent * reportsPerCommand(step.action);
      moments += waves * reportsPerCommand(step.action);
    }
  }
  const extraChecks = Math.max(0, options.checksPerFlashStep - 1) * flashSteps;
  const shape = SHAPE[options.path];
  return {
    steps,
    flashSteps,
    transitions: shape.taskStates + steps * shape.stepStates + extraChecks * CHECK_STATES,
    taskSteps: shape.taskInvocations + steps * shape.stepInvocations + extraChecks * CHECK_INVOCATIONS,
    iotMessages: commands + reports,
    commands,
    reports,
    bmcResultUnshared: moments,
  };
}

/**
 * Progress reports per 10-minute flash behind the Redfish agent (docs/agent.md, "Progress, paced"):
 * a task monitor rising 1 % a read, the first rise sent at once and then at most one a
 * `progressIntervalMs`, so one an interval over the flash (10 at the default 60 s, 5 at 120 s), and
 * every rise (99) with the interval 0.
 */
export function agentProgressPerFlash(progressIntervalMs: number, flashSeconds = FLASH_SECONDS): number {
  const rises = 99;
  if (progressIntervalMs <= 0) return rises;
  return Math.min(rises, Math.floor((flashSeconds * 1000) / progressIntervalMs));
}

/**
 * The rack of `modelRack` behind the Redfish agent: each flash sends `progressPerFlash` progress
 * reports (agentProgressPerFlash) instead of the simulated BMCs' three; every other report, every
 * state and invocation is the same (a flash that reports more often is still checked once:
 * `checksPerFlashStep` as given). More progress is more reports and IoT messages, and more report
 * moments (a batch of bmc-result's of its own at worst).
 */
export function modelAgentRack(
  rule: Pick<OperationRule, "stages">,
  components: readonly Pick<InventoryComponent, "type">[],
  options: { maxParallel: number; checksPerFlashStep: number; path: RolloutPath; progressPerFlash: number },
): RackModel {
  const simulated = modelRack(rule, components, options);
  const more = options.progressPerFlash - PROGRESS_PERCENTS.length;
  let flashed = 0;
  let flashWaves = 0;
  for (const { step, waveSizes } of waveSteps(rule, components, options.maxParallel)) {
    if (step.action !== "UPDATE_FIRMWARE") continue;
    flashed += waveSizes.reduce((a, b) => a + b, 0);
    flashWaves += waveSizes.length;
  }
  return {
    ...simulated,
    iotMessages: simulated.iotMessages + more * flashed,
    reports: simulated.reports + more * flashed,
    bmcResultUnshared: simulated.bmcResultUnshared + more * flashWaves,
  };
}

/**
 * The agent's rack when it sends one message per rack per moment (docs/agent.md, `reportFlushMs`):
 * a moment's reports, every BMC of the wave's at about the same second, travel as ONE message of
 * the rack's, so the rack's report messages are its moments (`bmcResultUnshared`), each one IoT
 * message, one rule action and one SQS message, and each moment reaches the receiver in one batch
 * (its `moments` are of one message each: the fleet's pollers cannot split it). `reports` counts
 * the messages; the reports they carry are the unbatched rack's.
 */
export function oneMessageAMoment<R extends RackModel & RackCallbacks>(rack: R): R & { carried: number } {
  return {
    ...rack,
    carried: rack.reports,
    reports: rack.bmcResultUnshared,
    iotMessages: rack.commands + rack.bmcResultUnshared,
    moments: rack.moments.map((m) => ({ ...m, reports: 1 })),
  };
}

/**
 * One kind of report of one wave (every BMC of the wave sends it at about the same moment, minutes
 * from the next at production timing): `reports` of them, `count` such moments a rack, `terminal`
 * when they are the answers that complete the wait (a result, a status) rather than news of a
 * command still running (an acknowledgement, a progress).
 */
export interface ReportMoment {
  reports: number;
  count: number;
  terminal: boolean;
  /**
   * The SendTaskHeartbeat these `count` moments send at most (`heartbeatDue`: one a wait a
   * heartbeat interval, from its record's first write of reports in it, the wait's own start heard
   * first in its interval): a moment that does not complete its wait one, but no more than the
   * intervals its wave spans (a 10-minute flash: 11 of a minute), and none for the
   * acknowledgements, which come in the wait's first interval; a terminal one one, sent only when
   * its reports land in more than one batch (the first does not complete the wait:
   * bench/lib/fleet-rates.ts), none for a query's answer (at once, in the wait's first interval);
   * none where the wait has no heartbeat (the preflight's, AwaitPreflight). A wave's moments are taken a minute apart at
   * least (the simulated BMCs' 150 s, the agent's 60 s), so each starts an interval of its own.
   */
  heartbeats: number;
}

/**
 * Heartbeat intervals a flash wave spans, its wait's own first: its reports send at most one
 * fewer heartbeats (`heartbeatDue`).
 */
export const FLASH_HEARTBEAT_INTERVALS = Math.floor((FLASH_SECONDS * 1000) / HEARTBEAT_INTERVAL_MS) + 1;

/**
 * What a rack's waits cost Step Functions' callback API (state-machines/README.md, AwaitWave): a
 * task token per wait with commands (the preflight's and each wave step's but a sleep's), ended by
 * one SendTaskSuccess (the receiver's wake-up, or the step's own when every answer was in first);
 * and a SendTaskHeartbeat for a write of reports that stores something of a waiting wave and does
 * not complete it, the first such write in its heartbeat interval (`heartbeatDue`,
 * src/domain/command-sets.ts: at most one a wait a minute; the preflight's wait has none).
 * Before, one went out for every such batch (at most one per set per batch, the preflight's too):
 * how many batches a moment's reports fall into is the fleet's batching (bench/lib/fleet-rates.ts),
 * and fleet-rates counts both. With one batch a moment, a rack's heartbeats are its moments
 * that are not terminal, either way.
 */
export interface RackCallbacks {
  waits: number;
  moments: ReportMoment[];
  /** SendTaskHeartbeat a rack when every moment reaches the receiver in a batch of its own. */
  heartbeatsOneBatchAMoment: number;
}

export function rackCallbacks(
  rule: Pick<OperationRule, "stages">,
  components: readonly Pick<InventoryComponent, "type">[],
  options: { maxParallel: number; progressPerFlash?: number },
): RackCallbacks {
  // The preflight: a query to every BMC, its status the answer that ends the wait.
  const moments: ReportMoment[] = [{ reports: components.length, count: 1, terminal: true, heartbeats: 0 }];
  let waits = 1;
  for (const { step, waveSizes } of waveSteps(rule, components, options.maxParallel)) {
    if (step.action === "SLEEP") continue;
    const kinds =
      step.action === "UPDATE_FIRMWARE" && options.progressPerFlash !== undefined
        ? 2 + options.progressPerFlash
        : reportsPerCommand(step.action);
    for (const size of waveSizes) {
      waits += 1;
      // A whole-rack AC cycle is one reset a wave, to the rack's power shelf (rack-cycle.ts).
      const reports = isRackCycle(step) ? 1 : size;
      // The wait's start is heard first in its interval (`heartbeatDue`): what comes at once after
      // the send (the acknowledgements; a query's answer, its only report) sends no heartbeat.
      moments.push({ reports, count: 1, terminal: true, heartbeats: kinds === 1 ? 0 : 1 });
      const intervals = step.action === "UPDATE_FIRMWARE" ? FLASH_HEARTBEAT_INTERVALS : kinds - 1;
      if (kinds > 1)
        moments.push({
          reports,
          count: kinds - 1,
          terminal: false,
          heartbeats: Math.min(kinds - 1, intervals) - 1,
        });
    }
  }
  return {
    waits,
    moments,
    heartbeatsOneBatchAMoment: moments.filter((m) => !m.terminal).reduce((sum, m) => sum + m.heartbeats, 0),
  };
}

/** Each step of each stage with the sizes of its waves (the stage's maxParallel, else `maxParallel`). */
function* waveSteps(
  rule: Pick<OperationRule, "stages">,
  components: readonly Pick<InventoryComponent, "type">[],
  maxParallel: number,
): Generator<{ step: OperationRule["stages"][number]["steps"][number]; waveSizes: number[] }> {
  for (const stage of rule.stages) {
    const types = stage.componentTypes;
    const n = components.filter((c) => types.length === 0 || types.includes(c.type)).length;
    if (n === 0) continue;
    const size = Math.max(1, stage.maxParallel > 0 ? stage.maxParallel : maxParallel);
    const waveSizes = Array.from({ length: Math.ceil(n / size) }, (_, i) => Math.min(size, n - i * size));
    for (const step of stage.steps) yield { step, waveSizes };
  }
}
