/**
 * What CheckPreflight reads (preflight.ts `checkQueries`): its task, the BMCs' answers, the rack
 * and the images of its updates, in one request where AcquireLock carried the image keys in the
 * preflight's state (`carriedImageKeys`, `PreflightState.imageKeys`); else the task and its sets,
 * and the rack and the images after them (images.ts `readRackAndImages`).
 */
import type { CommandFamily, CommandSet } from "../../domain/command-sets.js";
import type { InventoryComponent } from "../../domain/inventory.js";
import { StepError } from "../../domain/step-errors.js";
import type { Task } from "../../domain/task.js";
import { parseReport, type TaskReport } from "../../domain/task-report.js";
import type { StepDeps } from "./deps.js";
import { type ImagesRead, imageKeysOf, toFlash } from "./images.js";
import { loadTaskWith } from "./task-item.js";

/**
 * At most this many image keys ride in the preflight's state: with the task, its `q` and `u`
 * records and the rack's item, one BatchGetItem's 100 keys. A task with more (components each at a
 * version of its own, with parts) carries none: its check makes the two reads.
 */
export const MAX_CARRIED_IMAGE_KEYS = 96;

/**
 * The keys of every image the preflight's check may need (`PreflightState.imageKeys`), from the
 * task AcquireLock has read: each candidate key of every component still PENDING at its target,
 * whatever the BMCs will answer (the check flashes those of them not at their target: a subset,
 * so a key more is only an item not found). Undefined for a report it cannot read (the check
 * fails such a task, as it did) or past MAX_CARRIED_IMAGE_KEYS.
 *
 *   POWERSHELF p1, COMPUTE c1 and c2 (by its bios part), all PENDING at 2.0.0 (the report's order)
 *   → ["POWERSHELF#2.0.0#", "COMPUTE#2.0.0#", "COMPUTE#2.0.0#bios"]
 */
export function carriedImageKeys(task: Task): string[] | undefined {
  let report: TaskReport;
  try {
    report = parseReport(task.report);
  } catch {
    return undefined;
  }
  const pending = report.components.filter((c) => c.status === "PENDING").map((c) => toFlash(report, c));
  const keys = [...imageKeysOf(pending).keys()];
  return keys.length <= MAX_CARRIED_IMAGE_KEYS ? keys : undefined;
}

/** What CheckPreflight reads before it decides: its task and sets; with them the rack, if read. */
export interface PreflightRead {
  task: Task;
  sets: Partial<Record<CommandFamily, CommandSet>>;
  /** The rack's components and the images read (the keys carried), where read in the same request. */
  rack?: { rack: InventoryComponent[]; read: ImagesRead };
}

/**
 * CheckPreflight's first read: the task, its answers (`q`) and its update set's first record
 * (`u`), in one request (task-item.ts `loadTaskWith`); and, where the state carries the image keys
 * (AcquireLock's `imageKeys`) and the event the rack (`rackId`) and the catalog can read the
 * tasks' table too (`getImagesWithRackAndTask`), the rack's components and those images in that
 * same request, so a done check reads nothing more (readRackAndImages was a second request). A
 * rack that is not the task's (an input that names another) is not used: the check reads the
 * task's, as without. A missing task is TaskNotFound either way.
 */
export async function readPreflight(
  deps: StepDeps,
  taskId: string,
  rackId: string | undefined,
  imageKeys: readonly string[] | undefined,
): Promise<PreflightRead> {
  const all = deps.images.getImagesWithRackAndTask;
  if (all === undefined || rackId === undefined || imageKeys === undefined)
    return loadTaskWith(deps, taskId, ["q", "u"]);
  const read = await all.call(deps.images, imageKeys, rackId, { taskId, families: ["q", "u"] });
  if (read.task === undefined) throw new StepError("TaskNotFound", `task ${taskId} not found`);
  const rack = { rack: read.components, read: { keys: new Set(imageKeys), images: read.images } };
  return { task: read.task, sets: read.sets, ...(read.task.rackId === rackId ? { rack } : {}) };
}
