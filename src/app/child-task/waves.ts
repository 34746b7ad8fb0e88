/**
 * The upgrade loop: for each group (preflight's order), for each wave of ≤ maxParallel of its
 * components, SendWave ─► Wait ◄─► CheckWave ─► FinishWave. Wave w of group g is
 * `groups[g].componentIds.slice(w·maxParallel, (w+1)·maxParallel)`; the cursor FinishWave returns
 * names the next one. A failed component stops the task after its wave (ComponentsFailed), so no
 * later group runs against a predecessor at the wrong level.
 */
import { type UpdateCommand, updateRequestId } from "../../domain/bmc-protocol.js";
import { type ComponentResult, nextWaitSeconds, secretFor, verdict } from "../../domain/component-verdict.js";
import type { FirmwareAuthentication } from "../../domain/model.js";
import { causeText, StepError } from "../../domain/step-errors.js";
import { parseReport, serializeReport, targetOf } from "../../domain/task-report.js";
import { requestKey } from "../ports.js";
import type { StepDeps } from "./deps.js";
import { reassertLock } from "./lock.js";
import { isTerminalTask, updateTask } from "./outcome.js";
import type { ChildTaskSettings, StepEventOf, UpgradeGroup, WaveCursor, WaveState } from "./settings.js";

function waveOf(groups: UpgradeGroup[], cursor: WaveCursor, settings: ChildTaskSettings): UpgradeGroup {
  const group = groups[cursor.group];
  const size = Math.max(1, Math.floor(settings.maxParallel));
  const componentIds = group?.componentIds.slice(cursor.wave * size, (cursor.wave + 1) * size) ?? [];
  if (group === undefined || componentIds.length === 0) {
    throw new Error(`no wave ${cursor.wave} in group ${cursor.group} of ${groups.length}`);
  }
  return { type: group.type, componentIds };
}

async function credentialsFor(
  deps: StepDeps,
  taskId: string,
  runId: string | undefined,
): Promise<FirmwareAuthentication | undefined> {
  return runId ? deps.runs.getRunSecrets(runId) : deps.secrets.get(taskId);
}

/**
 * Starts one wave: re-asserts (extends) the rack lock, marks the components UPDATING, and for
 * each one writes its request record and publishes its update command, at most once: a retried
 * step finds the record published and sends nothing.
 */
export async function sendWave(deps: StepDeps, e: StepEventOf<"sendWave">): Promise<WaveState> {
  const { requests, clock } = deps;
  const wave = waveOf(e.groups, e.cursor, e.settings);
  const now = clock();
  const { task } = await updateTask(deps, e.taskId, (t, at) => {
    const r = parseReport(t.report);
    for (const c of r.components) {
      if (wave.componentIds.includes(c.id) && c.status === "PENDING") {
        c.status = "UPDATING";
        c.startedAt = at;
        c.requestId = updateRequestId(t.id, c.id);
      }
    }
    t.report = serializeReport(r);
    return t;
  });
  if (isTerminalTask(task))
    throw new StepError("TaskEnded", `task ${task.id} already ended (${task.status})`);
  await reassertLock(deps, task, e.settings, wave.componentIds.length, now);
  const report = parseReport(task.report);
  const versions: Record<string, string> = {};
  const subTargets: Record<string, string[]> = {};
  for (const c of report.components) {
    if (!wave.componentIds.includes(c.id)) continue;
    versions[c.id] = targetOf(report, c);
    if (c.subTargets !== undefined) subTargets[c.id] = c.subTargets;
  }
  const records = await Promise.all(
    wave.componentIds.map((componentId) =>
      requests.open({
        componentId,
        requestId: updateRequestId(task.id, componentId),
        taskId: task.id,
        kind: "update",
        sentAt: now,
        deadline: now + e.settings.updateTimeoutSeconds * 1000,
      }),
    ),
  );
  const unpublished = records.filter((r) => r.publishedAt === undefined);
  if (unpublished.length > 0) {
    const auth = await credentialsFor(deps, task.id, task.runId);
    await Promise.all(
      unpublished.map(async (record) => {
        const targetVersion = versions[record.componentId] ?? "";
        const command: UpdateCommand = {
          v: 1,
          type: "update",
          requestId: record.requestId,
          taskId: task.id,
          targetVersion,
          image: deps.imageFor(wave.type, targetVersion),
          issuedAt: now,
        };
        const parts = subTargets[record.componentId];
        if (parts !== undefined) command.subTargets = parts;
        const secret = secretFor(auth, wave.type);
        if (secret !== undefined)
          command.auth = await deps.sealer.seal(secret, record.componentId, record.requestId);
        await deps.publisher.publish(record.componentId, command);
        await requests.markPublished(record.componentId, record.requestId, clock());
      }),
    );
  }
  // A retried step keeps the first deadlines: the records carry them.
  const deadline = Math.max(...records.map((r) => r.deadline));
  return {
    ...wave,
    versions,
    ...(Object.keys(subTargets).length > 0 ? { subTargets } : {}),
    done: false,
    deadline,
    polls: 0,
    waitSeconds: nextWaitSeconds(e.settings, 0, deadline, clock()),
  };
}

/** Reads the wave's records: done once every component has a verdict (result or timeout). */
export async function checkWave(deps: StepDeps, e: StepEventOf<"checkWave">): Promise<WaveState> {
  const { wave } = e;
  const records = await deps.requests.get(
    wave.componentIds.map((componentId) => ({
      componentId,
      requestId: updateRequestId(e.taskId, componentId),
    })),
  );
  const now = deps.clock();
  const verdicts = wave.componentIds.map((componentId) =>
    verdict(
      componentId,
      wave.type,
      records.get(requestKey(componentId, updateRequestId(e.taskId, componentId))),
      wave.versions[componentId] ?? "",
      e.settings,
      wave.deadline,
      now,
      wave.subTargets?.[componentId],
    ),
  );
  if (verdicts.some((v) => v === "pending")) {
    const polls = wave.polls + 1;
    return {
      ...wave,
      done: false,
      polls,
      waitSeconds: nextWaitSeconds(e.settings, polls, wave.deadline, now),
    };
  }
  return { ...wave, done: true, results: verdicts as ComponentResult[] };
}

/**
 * Records the wave: verified versions on inventory, every component's outcome in the report.
 * Any failed component → ComponentsFailed (so nothing after it runs); else the next cursor.
 */
export async function finishWave(deps: StepDeps, e: StepEventOf<"finishWave">): Promise<WaveCursor> {
  const results = e.wave.results ?? [];
  const byId = new Map(results.map((r) => [r.componentId, r]));
  const verified = results.filter((r) => r.ok && r.version !== undefined);
  // Inventory first: a verified version is a fact about the hardware whatever happens to the task.
  if (verified.length > 0) {
    await deps.firmware.record(
      e.rackId,
      verified.map((r) => ({ componentId: r.componentId, version: r.version as string })),
    );
  }
  await updateTask(deps, e.taskId, (t, now) => {
    const r = parseReport(t.report);
    for (const c of r.components) {
      const result = byId.get(c.id);
      if (result === undefined) continue;
      c.finishedAt = now;
      if (result.ok) {
        c.status = "COMPLETED";
        if (result.version !== undefined) c.versionAfter = result.version;
        delete c.error;
      } else {
        c.status = "FAILED";
        c.error = { name: result.error?.Error ?? "Error", message: causeText(result.error) };
      }
    }
    t.report = serializeReport(r);
    return t;
  });
  const failures = results.filter((r) => !r.ok).map((r) => causeText(r.error));
  if (failures.length > 0) {
    const more =
      failures.length > 1 ? `; ${failures.length - 1} more ${e.wave.type} component(s) failed` : "";
    throw new StepError("ComponentsFailed", `${failures[0]}${more}`);
  }
  const size = Math.max(1, Math.floor(e.settings.maxParallel));
  const groupSize = e.groups[e.cursor.group]?.componentIds.length ?? 0;
  const next =
    (e.cursor.wave + 1) * size < groupSize
      ? { group: e.cursor.group, wave: e.cursor.wave + 1 }
      : { group: e.cursor.group + 1, wave: 0 };
  return { ...next, more: next.group < e.groups.length };
}
