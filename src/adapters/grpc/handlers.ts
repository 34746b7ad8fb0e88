/**
 * What each RPC does: decode the request into domain terms (convert/), call the application
 * (FlowApi), encode the answer. No gRPC plumbing here; server.ts wraps every entry in the one unary
 * wrapper that owns deadlines, error mapping and the single callback.
 *
 * The handler maps are typed from the generated service definitions, so a new RPC in the .proto is a
 * compile error here until it is served.
 */

import type { FlowApi, ImagesApi, InventoryApi, PolicyApi } from "../../app/api.js";
import type { Binding } from "../../domain/access-policy.js";
import type { Actor } from "../../domain/actor.js";
import type { ApprovalRule } from "../../domain/approval.js";
import type { FlowService } from "../../gen/flow/v1/flow.js";
import type { FlowInventoryAdminService } from "../../gen/flowadmin/v1/admin.js";
import type { RackPermit } from "./authorize.js";
import { firmwareTemplateFromProto } from "./convert/firmware-request.js";
import {
  beginUploadFromProto,
  completeUploadFromProto,
  deleteImageFromProto,
  imageToProto,
  listImagesFromProto,
} from "./convert/images.js";
import {
  listRunEventsQueryFromProto,
  listRunsQueryFromProto,
  listTargetsQueryFromProto,
  listTasksQueryFromProto,
  pageFromListRacks,
} from "./convert/list-queries.js";
import {
  baselineKeyFromProto,
  baselinesFromProto,
  baselineToProto,
  setReadinessFromProto,
} from "./convert/policy.js";
import { createRuleFromProto, ruleIdFromProto, ruleToProto } from "./convert/rules.js";
import { actorToProto, runEventToProto } from "./convert/run-events.js";
import {
  cancelRequestFromProto,
  clientRequestIdFromProto,
  createRunInputFromProto,
  lateFailureRequestFromProto,
  runIdFromProto,
} from "./convert/run-request.js";
import {
  buildInfoToProto,
  planToProto,
  runSummaryToProto,
  runToProto,
  targetToProto,
} from "./convert/run-response.js";
import {
  inventoryComponentToProto,
  inventoryRacksFromProto,
  inventoryRackToProto,
  taskIdFromProto,
  taskIdsFromProto,
  taskToProto,
} from "./convert/tasks-inventory.js";

/** The shape of one generated method definition, from which request and response types are read. */
export interface MethodDefinition<Req, Res> {
  path: string;
  requestDeserialize(value: Buffer): Req;
  responseSerialize(value: Res): Buffer;
}

export type RequestOf<M> = M extends MethodDefinition<infer Req, unknown> ? Req : never;
export type ResponseOf<M> = M extends { responseSerialize(value: infer Res): Buffer } ? Res : never;

/** What a handler knows of its call besides the request. */
export interface CallContext {
  /** Epoch ms; Infinity when the client set none. */
  deadline: number;
  /** True once nobody waits for the answer: the deadline passed or the client cancelled. */
  abandoned(): boolean;
  /** The caller (caller-identity.ts), found only when asked, by the RPCs that record one (create, the controls, an image's upload). */
  actor(): Actor;
  /**
   * Under an access policy, for a create or a firmware task: the check of the racks it plans
   * (authorize.ts), which the use case makes before it writes anything.
   */
  permitRacks?: RackPermit;
  /** The access policy's two-person rule now; undefined without a policy or without the rule. */
  approvalRule(): ApprovalRule | undefined;
  /** What the access policy grants the caller (WhoAmI): `enforced` false when there is none. */
  grants(): { enforced: boolean; bindings: readonly Binding[] };
}

/** One async function per RPC of a generated service definition. */
export type Handlers<S> = {
  [K in keyof S]: (request: RequestOf<S[K]>, call: CallContext) => Promise<ResponseOf<S[K]>>;
};

export function flowHandlers(api: FlowApi): Handlers<FlowService> {
  return {
    createOperationRun: async (req, call) => {
      const { id } = await api.createRun(createRunInputFromProto(req), {
        ...clientRequestIdFromProto(req),
        abandoned: call.abandoned,
        ...(Number.isFinite(call.deadline) ? { deadline: call.deadline } : {}),
        actor: call.actor(),
        ...(call.permitRacks === undefined ? {} : { permitRacks: call.permitRacks }),
        ...optionalApproval(call.approvalRule()),
      });
      return { id: { id } };
    },
    planOperationRun: async (req) =>
      planToProto(await api.planRun(createRunInputFromProto(req), clientRequestIdFromProto(req))),
    getOperationRun: async (req) => {
      const id = runIdFromProto(req.id);
      const { run, stats } = await api.getRun(id, req.includeStats);
      // Stats are derived and only returned when asked for, whatever the application hands back.
      return { operationRun: runToProto(run, req.includeStats ? stats : undefined) };
    },
    listOperationRuns: async (req) => {
      const { runs, total } = await api.listRuns(listRunsQueryFromProto(req));
      return { operationRuns: runs.map(runSummaryToProto), total };
    },
    listOperationRunTargets: async (req) => {
      const { targets, total } = await api.listTargets(listTargetsQueryFromProto(req));
      return { targets: targets.map(targetToProto), total };
    },
    listOperationRunEvents: async (req) => {
      const { events, total } = await api.listRunEvents(listRunEventsQueryFromProto(req));
      return { events: events.map(runEventToProto), total };
    },
    pauseOperationRun: async (req, call) =>
      runToProto(await api.pauseRun(runIdFromProto(req.id), call.actor())),
    resumeOperationRun: async (req, call) =>
      runToProto(await api.resumeRun(runIdFromProto(req.id), call.actor())),
    advanceOperationRunPhase: async (req, call) =>
      runToProto(await api.advancePhase(runIdFromProto(req.id), req.expectedPhaseIndex, call.actor())),
    cancelOperationRun: async (req, call) => {
      const { id, reason } = cancelRequestFromProto(req);
      return runToProto(await api.cancelRun(id, reason, call.actor()));
    },
    upgradeFirmware: async (req, call) => {
      const { taskIds } = await api.upgradeFirmware(
        firmwareTemplateFromProto(req),
        call.permitRacks === undefined ? {} : { permitRacks: call.permitRacks },
      );
      return { taskIds: taskIds.map((id) => ({ id })) };
    },
    getTasksByIDs: async (req) => ({ tasks: (await api.getTasks(taskIdsFromProto(req))).map(taskToProto) }),
    listTasks: async (req) => {
      const query = listTasksQueryFromProto(req);
      const { tasks, total } = await api.listTasks(query);
      // Reports can be large; they travel only when asked for.
      const shown = query.withReport ? tasks : tasks.map((t) => ({ ...t, report: "" }));
      return { tasks: shown.map(taskToProto), total };
    },
    cancelTask: async (req) => ({ task: taskToProto(await api.cancelTask(taskIdFromProto(req.taskId))) }),
    version: async () => buildInfoToProto(api.version()),
    reportTargetFailure: async (req, call) =>
      runToProto(await api.reportTargetFailure(lateFailureRequestFromProto(req), call.actor())),
    approveOperationRun: async (req, call) =>
      runToProto(await api.approveRun(runIdFromProto(req.id), call.actor())),
    whoAmI: async (_req, call) => {
      const { enforced, bindings } = call.grants();
      return {
        actor: actorToProto(call.actor()),
        policyEnforced: enforced,
        grants: bindings.map((b) => ({
          roles: [...b.roles],
          permissions: [...b.permissions],
          datacenters: [...(b.scope?.datacenters ?? [])],
          rows: [...(b.scope?.rows ?? [])],
          nvlDomains: [...(b.scope?.nvlDomains ?? [])],
          rackNames: [...(b.scope?.racks ?? [])],
          issuers: [...(b.issuers ?? [])],
        })),
      };
    },
  };
}

function optionalApproval(rule: ApprovalRule | undefined): { approval?: ApprovalRule } {
  return rule === undefined ? {} : { approval: rule };
}

export function adminHandlers(
  api: InventoryApi & PolicyApi & ImagesApi,
): Handlers<FlowInventoryAdminService> {
  return {
    beginFirmwareImageUpload: async (req) => {
      const begun = await api.beginImageUpload(beginUploadFromProto(req));
      return {
        uploadId: begun.uploadId,
        uploadUrl: begun.url,
        expiresAt: new Date(begun.expiresAt),
        existing: begun.existing === undefined ? undefined : imageToProto(begun.existing),
      };
    },
    completeFirmwareImageUpload: async (req, call) => {
      const done = await api.completeImageUpload(completeUploadFromProto(req), call.actor());
      return { image: imageToProto(done.image), alreadyRegistered: done.alreadyRegistered };
    },
    listFirmwareImages: async (req) => {
      const { images, total } = await api.listImages(listImagesFromProto(req));
      return { images: images.map(imageToProto), total };
    },
    deleteFirmwareImage: async (req, call) => {
      const done = await api.deleteImage(deleteImageFromProto(req), call.actor());
      return { image: imageToProto(done.image), objectVersionsDeleted: done.objectVersionsDeleted };
    },
    importInventory: async (req, call) => {
      const written = await api.importInventory(
        inventoryRacksFromProto(req),
        baselinesFromProto(req.baselines, "baselines"),
        { allowComponentTypeChange: req.allowComponentTypeChange, actor: call.actor() },
      );
      return {
        racksWritten: written.racks,
        componentsWritten: written.components,
        baselinesWritten: written.baselines,
      };
    },
    setFirmwareBaselines: async (req) => ({
      baselines: (await api.setBaselines(baselinesFromProto(req.baselines, "baselines"))).map(
        baselineToProto,
      ),
    }),
    listFirmwareBaselines: async () => ({ baselines: (await api.listBaselines()).map(baselineToProto) }),
    deleteFirmwareBaseline: async (req) => ({
      baseline: baselineToProto(await api.deleteBaseline(baselineKeyFromProto(req))),
    }),
    createOperationRule: async (req) => {
      const { definition, id, expectedVersion } = createRuleFromProto(req);
      return ruleToProto(
        await api.createRule(definition, {
          ...(id === undefined ? {} : { id }),
          ...(expectedVersion === undefined ? {} : { expectedVersion }),
        }),
      );
    },
    getOperationRule: async (req) => {
      const { id, version } = ruleIdFromProto(req);
      return ruleToProto(await api.getRule(id, version));
    },
    listOperationRules: async (req) => {
      const { rules, total } = await api.listRules(pageFromListRacks(req));
      return { rules: rules.map(ruleToProto), total };
    },
    setComponentReadiness: async (req) => {
      const { componentId, readiness } = setReadinessFromProto(req);
      return inventoryComponentToProto(await api.setReadiness(componentId, readiness));
    },
    listRacks: async (req) => {
      const page = pageFromListRacks(req);
      const { racks, total } = await api.listRacks(page.offset, page.limit);
      return { racks: racks.map(inventoryRackToProto), total };
    },
  };
}
