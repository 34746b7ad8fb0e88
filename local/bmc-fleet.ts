/**
 * The simulated BMC fleet: one simulated BMC per inventory component, speaking the BMC protocol
 * (src/domain/bmc-protocol.ts, the same codec as the production path) over the local MQTT
 * broker. Behaviour per component comes from the fleet file (local/fleet-file.ts).
 *
 * One connection for the whole fleet. Thousands of components as thousands of MQTT connections
 * would cost a socket, a keepalive timer and a broker session each, for nothing a child task can
 * observe: the fleet holds ONE MQTT 3.1.1 connection subscribed to `flow/rack/+/bmc/+/cmd` (the
 * rack-scoped topics of protocol v4, src/domain/bmc-topics.ts) and dispatches each command to the
 * addressed component's state, if it is in that rack. What appears on its
 * `flow/rack/{rackId}/bmc/{id}/evt` is the same
 * as with one connection per BMC. The one difference: a `disconnect` BMC cannot drop a connection
 * of its own, so it falls silent instead (no more progress, no result, no answers to later
 * commands) — which is all a child task can see of a dropped BMC anyway.
 *
 * What one simulated BMC does with an `update` (requestId R, target version T):
 *   already handled R, finished   → re-sends its stored result (no second flash)
 *   already handled R, running    → re-sends `ack`
 *   busy with another request     → `result` ok:false, error BUSY (R is not remembered: a later
 *                                   retry of R is a new attempt)
 *   otherwise                     → `ack`, then per outcome:
 *     succeed        progress 25/50/75 over updateMs, then result ok:true version T
 *     fail           progress …, then result ok:false, version unchanged, error FLASH_FAILED
 *     wrong-version  progress …, then result ok:true with a version other than T: its previous
 *                    version, or `T-mismatch` when that equals T
 *     hang           nothing more, ever; stays busy (queries are still answered)
 *     disconnect     progress up to half-way, then silence: every later command is ignored until
 *                    `revive(id)`
 * An update with `subTargets` (protocol v2) flashes only those parts: its result lists them (v2),
 * and the stats count them (`flashesBySubTarget`); one without flashes the whole component
 * (`wholeFlashes`). A result is sent in the version of its command, so v1 commands get v1 answers.
 * An update whose command lacks `image.sha256` or `image.size` is refused before its ack
 * (`result` ok:false, IMAGE_INVALID, not remembered, like BUSY); with `downloadImages` the fleet
 * also fetches each image once (per sha256) and fails updates whose bytes do not match
 * (IMAGE_DIGEST_MISMATCH, IMAGE_SIZE_MISMATCH, IMAGE_UNAVAILABLE) after their ack, before any
 * progress (local/fleet-images.ts).
 * Activation (the fleet file's `activation`): a BMC whose firmware needs a reset stages a
 * successful flash: its result (v3) reports the old version running and the new one pending, and
 * `onFirmwareChanged` waits for the activation. A `reset` (v3; kind bmc, host or ac) is acked,
 * takes `resetMs`, activates a pending version if its kind suffices (an AC cycle resets
 * everything, a BMC reset only the BMC, a host power cycle only the host), and is answered with
 * `status` (the version running, and any still pending); a repeated reset request id is answered
 * from memory, not reset again (local/bmc-fleet-resets.ts). Queries that arrive during a reset are
 * answered once the BMC is back, as a broker's persistent session delivers them to a rebooted BMC.
 * One BMC's state and what it says of itself: local/sim-bmc.ts.
 * A `query` is answered with `status` carrying the current version (silence when disconnected);
 * a `not-ready` BMC adds `ready: false` and NOT_READY_REASON, and otherwise flashes like `succeed`.
 * Commands for ids not in the inventory are ignored, as a non-existent IoT thing would.
 *
 * On every update that changes the version the fleet awaits `onFirmwareChanged(id, version)`
 * BEFORE publishing the result, so by the time a child task sees the result the local inventory
 * already says so.
 */
import { connectAsync, type MqttClient } from "mqtt";
import {
  type BmcEvent,
  encodeBmcMessage,
  type ResultEvent,
  type UpdateCommand,
} from "../src/domain/bmc-protocol.js";
import { decodeBmcCommand } from "../src/domain/bmc-protocol-decode.js";
import {
  BMC_CMD_TOPIC_FILTER,
  basicIngestEvtTopic,
  bmcEvtTopic,
  parseBmcTopic,
} from "../src/domain/bmc-topics.js";
import type { InventoryRack } from "../src/domain/inventory.js";
import { neededReset, resetHandler } from "./bmc-fleet-resets.js";
import { bump, emptyStats, type FleetStats } from "./bmc-fleet-stats.js";
import { type BmcBehaviour, behaviourFor, defaultFleetConfig, type FleetConfig } from "./fleet-file.js";
import { imageChecker, missingImageFields } from "./fleet-images.js";
import { NOT_READY_REASON, type SimBmc, statusOf } from "./sim-bmc.js";

export { NOT_READY_REASON, UNHEALTHY_REASON } from "./sim-bmc.js";

export interface BmcFleetOptions {
  /** `mqtt://127.0.0.1:<port>` of the local broker. */
  brokerUrl: string;
  racks: readonly InventoryRack[];
  /** Absent: every BMC succeeds after 500 ms. */
  config?: FleetConfig;
  /** Awaited before the result is published; a throw is logged and the result still goes out. */
  onFirmwareChanged?: (componentId: string, version: string) => void | Promise<void>;
  /** Progress events, as percentages of updateMs. Default [25, 50, 75]. */
  progressPercents?: readonly number[];
  /** Version a BMC reports when the inventory gives none. Default "0.0.0". */
  unknownVersion?: string;
  clientId?: string;
  /**
   * The rack reports' rule to send every report to through AWS IoT Basic Ingest
   * (`$aws/rules/<reportsRule>/flow/rack/...`, as an agent with `reportsRule` does); absent: the
   * plain evt topics. The local IoT rule stand-in takes both (local/child-tasks.ts).
   */
  reportsRule?: string;
  /** Fetch each update's image (once per sha256) and check its size and digest. Default false. */
  downloadImages?: boolean;
  log?: (line: string) => void;
}

export interface BmcFleet {
  stats(): FleetStats;
  resetStats(): void;
  /** The version the simulated BMC runs now, or undefined for an unknown id. */
  versionOf(componentId: string): string | undefined;
  /** Adds the racks' components (after an inventory import); known components keep their state. */
  addRacks(racks: readonly InventoryRack[]): void;
  setConfig(config: FleetConfig): void;
  /**
   * Brings a `disconnect`ed BMC back, idle: it answers again, and its interrupted update is
   * forgotten (a retry with the same requestId starts a new flash).
   */
  revive(componentId: string): void;
  /** The rack a simulated BMC belongs to (its topics are under it), or undefined. */
  rackOf(componentId: string): string | undefined;
  /** Updates still running (hung ones included). */
  inFlight(): number;
  stop(): Promise<void>;
}

const DEFAULT_PROGRESS = [25, 50, 75] as const;

export async function startBmcFleet(options: BmcFleetOptions): Promise<BmcFleet> {
  const log = options.log ?? (() => {});
  const unknownVersion = options.unknownVersion ?? "0.0.0";
  const progressPercents = [...(options.progressPercents ?? DEFAULT_PROGRESS)].sort((a, b) => a - b);
  let config = options.config ?? defaultFleetConfig();
  const bmcs = new Map<string, SimBmc>();
  const running = new Set<Promise<void>>();
  const abort = new AbortController();
  // Pending waits, so stop() can end them: one AbortSignal listener per wait would trip Node's
  // listener-leak warning at a few thousand concurrent updates.
  const waits = new Map<NodeJS.Timeout, (err: Error) => void>();
  const sleep = (ms: number): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (abort.signal.aborted) return reject(new Error("fleet stopped"));
      const timer = setTimeout(() => {
        waits.delete(timer);
        resolve();
      }, ms);
      waits.set(timer, reject);
    });
  let stats = emptyStats(0);
  const images = {
    checker: imageChecker({ download: options.downloadImages === true }),
    missing: missingImageFields,
  };

  function addRacks(racks: readonly InventoryRack[]): void {
    for (const rack of racks) {
      for (const component of rack.components) {
        const id = component.id.toLowerCase();
        const known = bmcs.get(id);
        if (known) {
          known.rackId = rack.id.toLowerCase();
          continue;
        }
        bmcs.set(id, {
          id,
          rackId: rack.id.toLowerCase(),
          type: component.type,
          version: component.firmwareVersion ?? unknownVersion,
          offline: false,
          handled: new Map(),
        });
      }
    }
    stats.components = bmcs.size;
  }
  addRacks(options.racks);

  const client: MqttClient = await connectAsync(options.brokerUrl, {
    protocolVersion: 4, // aedes 1.2.0 refuses MQTT 5
    clientId: options.clientId ?? `flow-bmc-fleet-${process.pid}-${Date.now().toString(36)}`,
    clean: true,
    reconnectPeriod: 1000,
  });
  client.on("error", (err) => log(`bmc-fleet: mqtt error: ${err.message}`));

  const send = async (componentId: string, event: BmcEvent): Promise<void> => {
    if (abort.signal.aborted) return;
    try {
      const rackId = bmcs.get(componentId)?.rackId ?? "";
      const to = { rackId, componentId };
      const topic =
        options.reportsRule === undefined ? bmcEvtTopic(to) : basicIngestEvtTopic(options.reportsRule, to);
      await client.publishAsync(topic, encodeBmcMessage(event), { qos: 1 });
    } catch (err) {
      log(`bmc-fleet: publishing ${event.type} for ${componentId} failed: ${(err as Error).message}`);
    }
  };

  const track = (requestId: string, work: Promise<void>): void => {
    const p = work
      .catch((err: unknown) => {
        if (!abort.signal.aborted) log(`bmc-fleet: ${(err as Error).message}`);
      })
      .finally(() => bump(stats.doneByRequest, requestId));
    running.add(p);
    void p.finally(() => running.delete(p));
  };

  const handleReset = resetHandler({
    behaviour: (bmc) => behaviourFor(config, bmc.rackId, bmc.id),
    sleep,
    send,
    rackOf: (bmc) => [...bmcs.values()].filter((other) => other.rackId === bmc.rackId),
    counted: {
      reset: (kind) => bump(stats.resetsByKind, kind),
      activation: () => {
        stats.activations += 1;
      },
    },
    ...(options.onFirmwareChanged === undefined ? {} : { onFirmwareChanged: options.onFirmwareChanged }),
    log,
  });

  function onMessage(topic: string, payload: Buffer): void {
    stats.commands += 1;
    const where = parseBmcTopic(topic);
    const decoded = decodeBmcCommand(payload);
    if (where?.channel !== "cmd" || !decoded.ok) {
      stats.ignored.malformed += 1;
      // The decode message names fields and rules only, never values such as auth.ciphertext.
      log(`bmc-fleet: ignoring message on ${topic}: ${decoded.ok ? "not a command topic" : decoded.message}`);
      return;
    }
    const command = decoded.value;
    if (command.type === "update") {
      stats.updateCommands += 1;
      bump(stats.updatesByComponent, where.componentId);
      stats.firstUpdateAtByComponent[where.componentId] ??= Date.now();
      bump(stats.updatesByRequest, command.requestId);
    } else if (command.type === "reset") {
      stats.resetCommands += 1;
    } else {
      stats.queryCommands += 1;
    }
    const bmc = bmcs.get(where.componentId.toLowerCase());
    // A BMC hears its own rack's topics only (protocol v4: the rack is in the topic).
    if (!bmc || where.rackId?.toLowerCase() !== bmc.rackId) {
      stats.ignored.unknownComponent += 1;
      bump(stats.doneByRequest, command.requestId);
      return;
    }
    if (bmc.offline) {
      stats.ignored.offline += 1;
      bump(stats.doneByRequest, command.requestId);
      return;
    }
    if (command.type === "query") {
      track(command.requestId, answerQuery(bmc, command.requestId));
      return;
    }
    if (command.type === "reset") {
      track(command.requestId, handleReset(bmc, command));
      return;
    }
    track(command.requestId, handleUpdate(bmc, command));
  }

  async function answerQuery(bmc: SimBmc, requestId: string): Promise<void> {
    // A BMC in the middle of a reset answers once it is back.
    while (bmc.resetting !== undefined) await bmc.resetting;
    const status = statusOf(bmc, requestId);
    if (behaviourFor(config, bmc.rackId, bmc.id).outcome === "not-ready") {
      status.ready = false;
      status.reason = NOT_READY_REASON;
    }
    await send(bmc.id, status);
  }

  async function handleUpdate(bmc: SimBmc, command: UpdateCommand): Promise<void> {
    const { requestId } = command;
    const seen = bmc.handled.get(requestId);
    if (seen !== undefined) {
      stats.duplicateUpdates += 1;
      await send(bmc.id, seen === "running" ? { v: 1, type: "ack", requestId } : seen);
      return;
    }
    if (bmc.busyWith !== undefined) {
      stats.busyRejections += 1;
      await send(bmc.id, {
        v: 1,
        type: "result",
        requestId,
        ok: false,
        version: bmc.version,
        error: { code: "BUSY", message: `update ${bmc.busyWith} is in progress` },
      });
      return;
    }
    const missing = images.missing(command.image);
    if (missing !== undefined) {
      stats.imageRejections += 1;
      await send(bmc.id, {
        v: 1,
        type: "result",
        requestId,
        ok: false,
        version: bmc.version,
        error: missing,
      });
      return;
    }
    const behaviour: BmcBehaviour = behaviourFor(config, bmc.rackId, bmc.id);
    bmc.busyWith = requestId;
    bmc.handled.set(requestId, "running");
    stats.flashes += 1;
    bump(stats.flashesByComponent, bmc.id);
    bump(stats.flashesByTask, command.taskId);
    if (command.subTargets === undefined) stats.wholeFlashes += 1;
    for (const part of command.subTargets ?? []) bump(stats.flashesBySubTarget, part);
    // The flash's clock starts at the ack: each report goes out when its share of updateMs from
    // then is due, without waiting for the broker to acknowledge the one before (QoS 1: on one
    // connection they still arrive in order), so a flash takes updateMs however slow the broker.
    // Until 2026-12-02 each report waited for its PUBACK: a flash took updateMs plus four round
    // trips through a busy broker (the quick start's 500 ms flashes 514 ms median, 533 ms p90).
    const ackedAt = performance.now();
    const at = (percent: number) => sleep(ackedAt + (percent * behaviour.updateMs) / 100 - performance.now());
    void send(bmc.id, { v: 1, type: "ack", requestId });
    const bad = await images.checker.check(command.image);
    if (bad !== undefined) {
      stats.imageRejections += 1;
      const failed: ResultEvent = {
        v: 1,
        type: "result",
        requestId,
        ok: false,
        version: bmc.version,
        error: bad,
      };
      if (command.subTargets !== undefined) failed.subTargets = [...command.subTargets];
      bmc.handled.set(requestId, failed);
      bmc.busyWith = undefined;
      await send(bmc.id, failed);
      return;
    }

    if (behaviour.outcome === "hang") {
      stats.outcomes.hung += 1;
      return;
    }
    // A dropped BMC gets half-way through its progress reports before it falls silent.
    const stopAt = behaviour.outcome === "disconnect" ? 50 : 100;
    for (const percent of progressPercents) {
      if (percent >= stopAt) break;
      await at(percent);
      void send(bmc.id, { v: 1, type: "progress", requestId, percent });
    }
    await at(stopAt);

    if (behaviour.outcome === "disconnect") {
      bmc.offline = true;
      stats.outcomes.disconnected += 1;
      return;
    }
    const previous = bmc.version;
    let result: ResultEvent;
    if (behaviour.outcome === "fail") {
      stats.outcomes.failed += 1;
      result = {
        v: 1,
        type: "result",
        requestId,
        ok: false,
        version: previous,
        error: {
          code: "FLASH_FAILED",
          message: `flashing ${command.targetVersion} failed; still on ${previous}`,
        },
      };
    } else {
      const wrong = behaviour.outcome === "wrong-version";
      if (wrong) stats.outcomes.wrongVersion += 1;
      else stats.outcomes.succeeded += 1;
      const target = command.targetVersion;
      const version = !wrong ? target : previous !== target ? previous : `${target}-mismatch`;
      result = { v: 1, type: "result", requestId, ok: true, version };
      if (behaviour.unhealthyAfterFlash === true) bmc.unhealthy = true;
      if (!wrong && version !== previous && neededReset(bmc.type, behaviour.activation) !== undefined) {
        // Staged: the old version runs until the reset its firmware needs (v3).
        bmc.pending = target;
        result.version = previous;
        result.pendingVersion = target;
      }
    }
    // What was flashed: exactly the parts asked for (encoded as v2, like the command).
    if (command.subTargets !== undefined) result.subTargets = [...command.subTargets];
    if (result.version !== previous) {
      bmc.version = result.version;
      try {
        await options.onFirmwareChanged?.(bmc.id, result.version);
      } catch (err) {
        log(`bmc-fleet: onFirmwareChanged(${bmc.id}) failed: ${(err as Error).message}`);
      }
    }
    bmc.handled.set(requestId, result);
    bmc.busyWith = undefined;
    await send(bmc.id, result);
  }

  client.on("message", onMessage);
  await client.subscribeAsync(BMC_CMD_TOPIC_FILTER, { qos: 1 });

  let stopping: Promise<void> | undefined;
  return {
    stats: () => structuredClone({ ...stats, imageDownloads: images.checker.downloads() }),
    resetStats: () => {
      stats = emptyStats(bmcs.size);
    },
    versionOf: (componentId) => bmcs.get(componentId.toLowerCase())?.version,
    rackOf: (componentId) => bmcs.get(componentId.toLowerCase())?.rackId,
    addRacks,
    setConfig: (next) => {
      config = next;
    },
    revive: (componentId) => {
      const bmc = bmcs.get(componentId.toLowerCase());
      if (!bmc) return;
      bmc.offline = false;
      // The interrupted flash never finished: forget it, so a retry of its requestId flashes anew.
      if (bmc.busyWith !== undefined) bmc.handled.delete(bmc.busyWith);
      bmc.busyWith = undefined;
    },
    inFlight: () => {
      let n = 0;
      for (const bmc of bmcs.values()) if (bmc.busyWith !== undefined) n += 1;
      return n;
    },
    stop() {
      stopping ??= (async () => {
        abort.abort();
        for (const [timer, reject] of waits) {
          clearTimeout(timer);
          reject(new Error("fleet stopped"));
        }
        waits.clear();
        client.off("message", onMessage);
        await Promise.allSettled([...running]);
        await client.endAsync(true);
      })();
      return stopping;
    },
  };
}
