/**
 * DeleteFirmwareImage: an image leaves the catalog only when nothing needs it any more
 * (src/domain/image-use.ts): no baseline of its type and version, no run or task that has not
 * ended and would flash it. Then its record goes (one conditional transaction), then its bytes:
 * every version of its object, unless another record has the same bytes (objects are
 * content-addressed, so two keys uploaded with one file share one object).
 *
 * The check and the delete are not one transaction: a run created between them that needs this
 * image is the window (its create checked the catalog a moment before); its update commands then
 * fail IMAGE_UNAVAILABLE rather than flash anything else.
 */

import type { Actor } from "../domain/actor.js";
import type { FieldViolation } from "../domain/errors.js";
import { FailedPreconditionError, NotFoundError, ValidationError } from "../domain/errors.js";
import {
  checkImageKey,
  describeImageKey,
  type FirmwareImage,
  type ImageKeyInput,
} from "../domain/firmware-images.js";
import {
  type ActiveRun,
  type ActiveTask,
  catalogOf,
  neighbourKeys,
  usesOfImage,
} from "../domain/image-use.js";
import { MAX_PAGE_LIMIT } from "../domain/list-queries.js";
import { isTerminalRun, isTerminalTarget } from "../domain/model.js";
import { parseReport } from "../domain/task-report.js";
import type {
  FirmwareImageStore,
  FirmwarePolicyStore,
  ImageObjectStore,
  RunStore,
  TaskStore,
} from "./ports.js";

/** Where what could use an image is read from. */
export interface ImageUsersSource {
  baselines: Pick<FirmwarePolicyStore, "listBaselines">;
  runs: Pick<RunStore, "listRuns" | "listTargets">;
  tasks: Pick<TaskStore, "listTasks">;
}

export interface ImageDeletionDeps {
  images: FirmwareImageStore;
  objects: Pick<ImageObjectStore, "deleteAllVersions">;
  users: ImageUsersSource;
  log?: (line: string) => void;
}

export async function deleteImage(
  deps: ImageDeletionDeps,
  input: ImageKeyInput,
  actor: Actor,
): Promise<{ image: FirmwareImage; objectVersionsDeleted: number }> {
  const violations: FieldViolation[] = [];
  const key = checkImageKey(input, violations);
  if (key === undefined) throw new ValidationError(violations);
  const [image, ...neighbours] = await deps.images.getImages([key, ...neighbourKeys(key)]);
  if (image === undefined || describeImageKey(image) !== describeImageKey(key)) {
    throw new NotFoundError(`no firmware image is registered for ${describeImageKey(key)}`);
  }
  const [baselines, runs, tasks] = await Promise.all([
    deps.users.baselines.listBaselines(),
    activeRuns(deps.users.runs),
    activeTasks(deps.users.tasks),
  ]);
  const uses = usesOfImage(image, { baselines, runs, tasks }, catalogOf([image, ...neighbours]));
  if (uses.length > 0) {
    throw new FailedPreconditionError(
      `firmware image ${describeImageKey(image)} is in use: ${uses.join(", ")}; change the baseline or let the runs and tasks end first`,
    );
  }
  const removed = await deps.images.deleteImage(key, image.sha256);
  if (removed === undefined) {
    throw new NotFoundError(`no firmware image is registered for ${describeImageKey(key)}`);
  }
  const sharing = (
    await deps.images.listImages({
      componentType: image.componentType,
      page: { offset: 0, limit: MAX_PAGE_LIMIT },
    })
  ).images.filter((other) => other.objectKey === image.objectKey);
  const objectVersionsDeleted =
    sharing.length > 0 ? 0 : await deps.objects.deleteAllVersions(image.objectKey);
  deps.log?.(
    `firmware: image ${describeImageKey(image)} (sha256 ${image.sha256}) deleted by ${actor.name || "anonymous"}; ${
      sharing.length > 0
        ? `its object ${image.objectKey} kept for ${sharing.map(describeImageKey).join(", ")}`
        : `${objectVersionsDeleted} object version(s) of ${image.objectKey} deleted`
    }`,
  );
  return { image: removed, objectVersionsDeleted };
}

async function activeRuns(runs: ImageUsersSource["runs"]): Promise<ActiveRun[]> {
  const out: ActiveRun[] = [];
  for (let offset = 0; ; offset += MAX_PAGE_LIMIT) {
    const page = await runs.listRuns((r) => !isTerminalRun(r.status), { offset, limit: MAX_PAGE_LIMIT });
    for (const run of page.runs) {
      const firmware = run.config.operation.firmware;
      const targets = [];
      for (let at = 0; ; at += MAX_PAGE_LIMIT) {
        const listed = await runs.listTargets(run.id, {
          phaseFrom: 0,
          phaseTo: run.phaseSizes.length - 1,
          page: { offset: at, limit: MAX_PAGE_LIMIT },
        });
        targets.push(...(listed?.targets ?? []).filter((t) => !isTerminalTarget(t.status)));
        if (listed === undefined || at + MAX_PAGE_LIMIT >= listed.total) break;
      }
      out.push({
        id: run.id,
        status: run.status,
        ...(firmware.targetVersion === undefined ? {} : { targetVersion: firmware.targetVersion }),
        subTargets: firmware.subTargets,
        targets,
      });
    }
    if (offset + MAX_PAGE_LIMIT >= page.total) return out;
  }
}

async function activeTasks(tasks: ImageUsersSource["tasks"]): Promise<ActiveTask[]> {
  const out: ActiveTask[] = [];
  for (let offset = 0; ; offset += MAX_PAGE_LIMIT) {
    const page = await tasks.listTasks({ activeOnly: true, page: { offset, limit: MAX_PAGE_LIMIT } });
    for (const task of page.tasks) {
      const report = parseReport(task.report);
      out.push({
        id: task.id,
        status: task.status,
        ...(report.targetVersion === undefined ? {} : { targetVersion: report.targetVersion }),
        components: report.components,
      });
    }
    if (offset + MAX_PAGE_LIMIT >= page.total) return out;
  }
}
