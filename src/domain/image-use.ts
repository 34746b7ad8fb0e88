/**
 * What still needs a firmware image, so that deleting it is refused while anything does
 * (the admin service's DeleteFirmwareImage, src/app/firmware-images.ts):
 *
 *   - a firmware baseline of its type and version (a run or task planned from the baselines would
 *     flash that version, with this image or, for one part, this part's image);
 *   - a run that has not ended, through its targets that have not ended: the version each
 *     component is flashed to (the run's target_version, else the one frozen on its target) with
 *     the run's sub-targets, served by this image (firmware-images.ts `imageFor`);
 *   - a task that has not ended, through its components not yet done (pending or updating), as
 *     its report says: by every image that could serve them, not only the one that would now
 *     (a one-part need: its part's image and the whole one). A task's preflight freezes the
 *     images it will flash (src/app/child-task/images.ts), and a part image registered after it
 *     must not make the whole image it froze deletable before the task ends.
 *
 *   uses of COMPUTE 1.3.0 → ["baseline COMPUTE 1.3.0 (model *, vendor *)",
 *                            "run 7a5c… (RUNNING)", "task 9e1f… (RUNNING)"]
 */
import type { FirmwareBaseline } from "./firmware-baselines.js";
import {
  candidateKeys,
  type FirmwareImage,
  type ImageKey,
  type ImageNeed,
  imageFor,
  imageKeyId,
  sameImageKey,
} from "./firmware-images.js";
import type { ComponentsForType, VersionGroup } from "./model.js";
import { SUB_TARGETS, subTargetsOf } from "./sub-targets.js";
import type { ComponentReport } from "./task-report.js";

/** A run that has not ended, with its targets that have not ended. */
export interface ActiveRun {
  id: string;
  status: string;
  targetVersion?: string;
  subTargets: readonly string[];
  targets: readonly { componentsByType: readonly ComponentsForType[]; versions?: readonly VersionGroup[] }[];
}

/** A task that has not ended, with its report's components. */
export interface ActiveTask {
  id: string;
  status: string;
  targetVersion?: string;
  components: readonly Pick<ComponentReport, "type" | "status" | "targetVersion" | "subTargets">[];
}

export interface ImageUsers {
  baselines: readonly FirmwareBaseline[];
  runs: readonly ActiveRun[];
  tasks: readonly ActiveTask[];
}

/**
 * The other keys whose registration decides whether a need is served by `image`: for a
 * whole-component image, its type's part images of the same version (a one-part need takes its
 * part's image first); a part's image is always the first choice for its part.
 */
export function neighbourKeys(image: ImageKey): ImageKey[] {
  if (image.subTarget !== undefined) return [];
  return SUB_TARGETS[image.componentType].map((subTarget) => ({
    componentType: image.componentType,
    version: image.version,
    subTarget,
  }));
}

/**
 * What uses `image`, as people read it, in the order baselines, runs, tasks. `catalog` holds the
 * registered images that could serve the same needs (by imageKeyId), `image` among them: a
 * one-part need is served by its part's image when there is one, else by the whole one (a run's
 * need; a task's uses every image that could serve it, whatever the catalog holds besides).
 */
export function usesOfImage(
  image: FirmwareImage,
  users: ImageUsers,
  catalog: ReadonlyMap<string, FirmwareImage>,
): string[] {
  const serves = (need: ImageNeed): boolean => {
    if (need.componentType !== image.componentType || need.version !== image.version) return false;
    const served = imageFor(need, catalog);
    return served !== undefined && sameImageKey(served, image);
  };
  const couldServe = (need: ImageNeed): boolean =>
    candidateKeys(need).some((key) => sameImageKey(key, image));
  const uses: string[] = [];
  for (const b of users.baselines) {
    if (b.componentType === image.componentType && b.version === image.version) {
      uses.push(
        `baseline ${b.componentType} ${b.version} (model ${b.model ?? "*"}, vendor ${b.vendor ?? "*"})`,
      );
    }
  }
  for (const run of users.runs) {
    if (runNeeds(run).some(serves)) uses.push(`run ${run.id} (${run.status})`);
  }
  for (const task of users.tasks) {
    const needs = task.components
      .filter((c) => c.status === "PENDING" || c.status === "UPDATING")
      .map((c) => ({
        componentType: c.type,
        version: c.targetVersion ?? task.targetVersion ?? "",
        subTargets: c.subTargets ?? [],
      }));
    if (needs.some(couldServe)) uses.push(`task ${task.id} (${task.status})`);
  }
  return uses;
}

function runNeeds(run: ActiveRun): ImageNeed[] {
  const needs: ImageNeed[] = [];
  for (const target of run.targets) {
    const frozen = new Map(
      (target.versions ?? []).flatMap((g) => g.componentIds.map((id) => [id, g.version] as const)),
    );
    for (const group of target.componentsByType) {
      const parts = subTargetsOf(group.type, run.subTargets);
      if (run.subTargets.length > 0 && parts.length === 0) continue;
      for (const id of group.componentIds) {
        const version = run.targetVersion ?? frozen.get(id);
        if (version !== undefined) needs.push({ componentType: group.type, version, subTargets: parts });
      }
    }
  }
  return needs;
}

/** `images` by imageKeyId, for usesOfImage's catalog. */
export const catalogOf = (images: readonly FirmwareImage[]): Map<string, FirmwareImage> =>
  new Map(images.map((i) => [imageKeyId(i), i] as const));
