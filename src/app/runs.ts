/**
 * Create and read use cases for operation runs: validate and plan (run-planning.ts), freeze the
 * run and its targets atomically (with the run's CREATED history event), and answer queries with
 * the spec's ordering, scoping and status codes, the run's history included. Manual controls live
 * in controls.ts (they meet the dispatcher); this file never changes a run after it is created.
 *
 * Create, step by step:
 *   1. a client request id, if sent, is looked up first: known → the first run's id (same request)
 *      or InvalidArgument (another request), before anything is validated or planned;
 *   2. too little of the deadline left to commit (commit-reserve.ts) → UNAVAILABLE, not started;
 *   3. validate, read the racks, plan;
 *   4. the caller gone (deadline passed, call cancelled) → nothing is written;
 *   5. freeze: the store asks once more right before its commit (gone → DEADLINE_EXCEEDED, too late
 *      → UNAVAILABLE, nothing committed either way), and commits the request id with the run;
 *      losing the id to a concurrent create of the same request answers that run's id.
 * Under the two-person rule (options.approval) a plan over at least `minRacks` distinct racks is
 * frozen PAUSED / AWAITING_APPROVAL, with APPROVAL_REQUESTED after its CREATED event: the
 * dispatcher never claims a paused run, so nothing of it starts before ApproveOperationRun.
 */

import { timingSafeEqual } from "node:crypto";
import { awaitingApprovalMessage, needsApproval } from "../domain/approval.js";
import {
  CLIENT_REQUEST_TTL_MS,
  checkClientRequestId,
  clientRequestReused,
  credentialsMacMessage,
  requestFingerprint,
} from "../domain/client-request.js";
import type { CreateRunInput } from "../domain/create-run-input.js";
import {
  DeadlineExceededError,
  FailedPreconditionError,
  FlowError,
  NotFoundError,
  ValidationError,
} from "../domain/errors.js";
import { followUpWrite } from "../domain/follow-up-runs.js";
import type { RunHistoryEvent } from "../domain/history-event.js";
import type { ListRunsQuery, ListTargetsQuery, Page } from "../domain/list-queries.js";
import { matchesName, matchesStates, phaseRange, runOperationKind } from "../domain/list-queries.js";
import { nextOpenings, scheduleOf } from "../domain/maintenance-window.js";
import type { Run, RunConfig, Target } from "../domain/model.js";
import { createdEvents } from "../domain/run-history.js";
import type { RunStats } from "../domain/stats.js";
import { computeStats } from "../domain/stats.js";
import { rackPlace } from "./access.js";
import type { CreateRunOptions, TargetView } from "./api.js";
import { type CommitReserve, createCommitReserve } from "./commit-reserve.js";
import type { ClientRequestRecord, RequestMac, RunListEntry } from "./ports.js";
import { createRunPlanning, type RunPlanningDeps } from "./run-planning.js";

export interface RunsDeps extends RunPlanningDeps {
  /** How much of its deadline a create needs left to commit (default: one that learns, per service). */
  commitReserve?: CommitReserve;
  /**
   * The keyed digest a retry's credentials are compared by (client-request.ts). Absent: a request
   * with both a client_request_id and credentials is refused (FAILED_PRECONDITION).
   */
  requestMac?: RequestMac;
}

/** The reference's text for an unknown run on detail and lifecycle calls (NotFound). */
export const runNotFound = (id: string): NotFoundError => new NotFoundError(`operation run not found: ${id}`);

/** How many upcoming window openings PlanOperationRun shows. */
const NEXT_OPENINGS = 5;

export function createRunService(deps: RunsDeps) {
  const { runs, inventory, clock, newId } = deps;
  const reserve = deps.commitReserve ?? createCommitReserve();
  const { validateAndPlan } = createRunPlanning(deps);

  /** The request's id checked, and what it is remembered for; undefined when the request sent none. */
  async function rememberedRequest(input: CreateRunInput, clientRequestId: string | undefined) {
    if (clientRequestId === undefined) return undefined;
    const violation = checkClientRequestId(clientRequestId);
    if (violation !== undefined) throw new ValidationError([violation]);
    const fingerprint = requestFingerprint(input);
    const credentialsMac = await macOfCredentials(input, clientRequestId, fingerprint);
    const record = await runs.getClientRequest(clientRequestId, clock.now());
    return {
      id: clientRequestId,
      fingerprint,
      record,
      ...(credentialsMac === undefined ? {} : { credentialsMac }),
    };
  }

  /** The keyed digest of the request's credentials (base64); undefined for a request without. */
  async function macOfCredentials(
    input: CreateRunInput,
    id: string,
    fingerprint: string,
  ): Promise<string | undefined> {
    const credentials = input.configuration?.operation?.upgradeFirmware?.authentication;
    if (credentials === undefined) return undefined;
    if (deps.requestMac === undefined) throw noRequestMac();
    const mac = await deps.requestMac.mac(credentialsMacMessage(id, fingerprint, credentials));
    return Buffer.from(mac).toString("base64");
  }

  /**
   * The first run's id for a retry of the same request; InvalidArgument for another request.
   * Credentials are compared by their keyed digest: nothing of the first run is decrypted.
   */
  function sameRequestRun(
    request: { fingerprint: string; credentialsMac?: string },
    record: ClientRequestRecord,
  ): string {
    const same =
      record.fingerprint === request.fingerprint && sameMac(record.credentialsMac, request.credentialsMac);
    if (!same) throw new ValidationError([clientRequestReused]);
    return record.runId;
  }

  async function requireRun(id: string): Promise<Run> {
    const run = await runs.getRun(id);
    if (!run) throw runNotFound(id);
    return run;
  }

  return {
    async createRun(input: CreateRunInput, options: CreateRunOptions = {}): Promise<{ id: string }> {
      const request = await rememberedRequest(input, options.clientRequestId);
      if (request?.record !== undefined) {
        return { id: sameRequestRun(request, request.record) };
      }
      const gone = options.abandoned ?? (() => false);
      const late = () => (options.deadline ?? Number.POSITIVE_INFINITY) - clock.now() < reserve.reserveMs();
      if (late()) throw tooLate(reserve.reserveMs(), false);
      const validated = await validateAndPlan(input);
      const { name, description, config, plan, racks, versions, rule } = validated;
      const follow = "follow" in validated ? validated.follow : undefined;
      const planned = [...new Set(plan.targets.map((t) => t.rackId))];
      if (options.permitRacks !== undefined) {
        options.permitRacks((await inventory.getRacksByIds(planned)).map(rackPlace));
      }
      const held = needsApproval(options.approval, planned.length) ? options.approval : undefined;
      if (gone()) throw abandoned();
      const externalIds = new Map(racks.map((r) => [r.id, r.externalId]));
      const now = clock.now();
      const run: Run = {
        id: newId(),
        name,
        description,
        config,
        ...(held === undefined
          ? { status: "PENDING", reason: "NONE", statusMessage: "" }
          : {
              status: "PAUSED",
              reason: "AWAITING_APPROVAL",
              statusMessage: awaitingApprovalMessage(planned.length, held),
            }),
        phaseSizes: plan.phaseSizes,
        currentPhaseIndex: 0,
        counters: plan.phaseSizes.map(() => ({ completed: 0, failed: 0, terminated: 0, skipped: 0 })),
        inFlight: 0,
        ...(rule ? { rule } : {}),
        ...(follow ? { origin: follow.origin } : {}),
        createdAt: now,
        updatedAt: now,
      };
      const targets: Target[] = plan.targets.map((t) => ({
        id: newId(),
        runId: run.id,
        rackId: t.rackId,
        sequenceIndex: t.sequenceIndex,
        phaseIndex: t.phaseIndex,
        status: "PENDING",
        message: "",
        componentsByType: t.componentsByType,
        ...(externalIds.get(t.rackId) ? { rackExternalId: externalIds.get(t.rackId) } : {}),
        ...(t.failureDomain === undefined ? {} : { failureDomain: t.failureDomain }),
        ...(versions ? { versions: versions.get(t.rackId) ?? [] } : {}),
        ...(follow?.skipped?.get(t.rackId)?.length
          ? { skippedComponents: follow.skipped.get(t.rackId) }
          : {}),
        createdAt: now,
        updatedAt: now,
        conflictAttempts: 0,
      }));
      const freezing = clock.now();
      // A retry or rollback run is recorded on the run it follows in the same commit; that run
      // changing in between (another follow-up of it) is read again, up to a few times.
      let source = follow?.source;
      for (let attempt = 0; ; attempt++) {
        const origin =
          source === undefined
            ? undefined
            : {
                ...followUpWrite(
                  source,
                  { kind: run.origin?.kind ?? "retry", runId: run.id },
                  targets.length,
                  clock.now(),
                  options.actor,
                ),
                expectedUpdatedAt: source.updatedAt,
              };
        const created = await runs.createRun(run, targets, {
          events: createdEvents(
            run,
            options.actor,
            held === undefined ? undefined : { minRacks: held.minRacks, racks: planned.length },
          ),
          mayCommit: () => !gone() && !late(),
          ...(origin === undefined ? {} : { origin }),
          ...(request === undefined
            ? {}
            : {
                clientRequest: {
                  id: request.id,
                  fingerprint: request.fingerprint,
                  expiresAt: now + CLIENT_REQUEST_TTL_MS,
                  ...(request.credentialsMac === undefined ? {} : { credentialsMac: request.credentialsMac }),
                },
              }),
        });
        switch (created.outcome) {
          case "created":
            reserve.observe(clock.now() - freezing);
            return { id: run.id };
          case "abandoned":
            throw gone() ? abandoned() : tooLate(reserve.reserveMs(), true);
          case "request-id-taken": {
            // A create with the same id committed while this one planned: the retry's answer.
            const record = request && (await runs.getClientRequest(request.id, clock.now()));
            if (request === undefined || record === undefined) throw requestIdRace();
            return { id: sameRequestRun(request, record) };
          }
          case "origin-changed":
            source = follow === undefined ? undefined : await runs.getRun(follow.source.id);
            if (source === undefined || attempt >= ORIGIN_ATTEMPTS - 1) throw originRace();
            continue;
        }
      }
    },

    async planRun(input: CreateRunInput, options: Pick<CreateRunOptions, "clientRequestId"> = {}) {
      // A dry run answers what the create would about its id: a reused one is refused here too.
      const request = await rememberedRequest(input, options.clientRequestId);
      if (request?.record !== undefined) sameRequestRun(request, request.record);
      const made = await validateAndPlan(input);
      const { config, plan, racks, versions } = made;
      const skipped = "follow" in made ? made.follow.skipped : undefined;
      const planned = new Set(plan.targets.map((t) => t.rackId));
      const rackExternalIds = new Map<string, string>();
      for (const rack of racks) {
        if (planned.has(rack.id)) rackExternalIds.set(rack.id, rack.externalId ?? "");
      }
      // The effective configuration is what a create would store; credentials never leave.
      const { authentication: _secret, ...firmware } = config.operation.firmware;
      const nextWindowOpenings = nextOpenings(scheduleOf(config), clock.now(), NEXT_OPENINGS);
      return {
        config: { ...config, operation: { ...config.operation, firmware } },
        plan,
        rackExternalIds,
        nextWindowOpenings,
        ...(versions ? { versions } : {}),
        ...(skipped ? { skipped } : {}),
      };
    },

    async getRun(id: string, includeStats: boolean): Promise<{ run: Run; stats?: RunStats }> {
      const run = await requireRun(id);
      return includeStats ? { run, stats: computeStats(run) } : { run };
    },

    async listRuns(query: ListRunsQuery): Promise<{ runs: Run[]; total: number }> {
      return runs.listRuns((entry) => matchesEntry(entry, query), query.page);
    },

    async listTargets(query: ListTargetsQuery): Promise<{ targets: TargetView[]; total: number }> {
      const run = await requireRun(query.runId);
      const range = phaseRange(query.phaseScope, run.currentPhaseIndex);
      if (range === "empty") return { targets: [], total: 0 };
      const page = await runs.listTargets(run.id, {
        phaseFrom: range.from,
        phaseTo: range.to,
        ...(query.status ? { status: query.status } : {}),
        page: query.page,
        knownCommitted: true,
        phaseSizes: run.phaseSizes,
      });
      if (!page) throw runNotFound(run.id);
      // Frozen at create; inventory is asked only about racks that had no external id then.
      const missing = [...new Set(page.targets.filter((t) => !t.rackExternalId).map((t) => t.rackId))];
      const racks = new Map(
        missing.length === 0 ? [] : (await inventory.getRacksByIds(missing)).map((r) => [r.id, r]),
      );
      const targets = page.targets.map((t) => {
        const externalId = t.rackExternalId ?? racks.get(t.rackId)?.externalId;
        // The reference requires every returned rack to have an external ID.
        if (!externalId) throw new FailedPreconditionError(`rack "${t.rackId}" has no external ID`);
        return { ...t, rackExternalId: externalId };
      });
      return { targets, total: page.total };
    },

    async listRunEvents(query: {
      runId: string;
      page: Page;
    }): Promise<{ events: RunHistoryEvent[]; total: number }> {
      const run = await requireRun(query.runId);
      const page = await runs.listRunEvents(run.id, query.page, { knownCommitted: true });
      if (!page) throw runNotFound(run.id);
      return page;
    },

    requireRun,
  };
}

export type RunService = ReturnType<typeof createRunService>;

const abandoned = () =>
  new DeadlineExceededError("the call's deadline passed before the run was committed; nothing was created");

/** Retryable, and answered while the client still listens: better than a commit past the deadline. */
const tooLate = (reserveMs: number, planned: boolean) =>
  new FlowError(
    "UNAVAILABLE",
    `too little of the call's deadline is left to ${planned ? "commit" : "create"} the run (creates need ${Math.ceil(reserveMs)} ms now); nothing was created, retry`,
  );

/** Commits tried when the followed run keeps changing under a retry or rollback create. */
const ORIGIN_ATTEMPTS = 3;

const originRace = () =>
  new FlowError(
    "UNAVAILABLE",
    "the run to follow kept changing while this run was created; nothing was created, retry",
  );

/** The id's record expired between the commit that lost to it and the read: retrying is safe. */
const requestIdRace = () =>
  new FlowError("UNAVAILABLE", "client_request_id changed hands while the run was created; retry the call");

/** A request with credentials and a client_request_id, on a deployment with no request MAC key. */
const noRequestMac = () =>
  new FailedPreconditionError(
    "client_request_id with firmware credentials needs the deployment's request digest key, and none is configured; send the request without client_request_id",
  );

/** Both absent, or the same digest (compared in constant time). */
function sameMac(stored: string | undefined, sent: string | undefined): boolean {
  if (stored === undefined || sent === undefined) return stored === sent;
  const a = Buffer.from(stored, "base64");
  const b = Buffer.from(sent, "base64");
  return a.length === b.length && timingSafeEqual(a, b);
}

/** ListOperationRuns' filters, applied to the narrow list-index entry (no configuration needed). */
function matchesEntry(entry: RunListEntry, query: ListRunsQuery): boolean {
  if (query.name && !matchesName(entry.name, query.name)) return false;
  if (!matchesStates(entry, query.states)) return false;
  if (query.kinds.length === 0) return true;
  const kind = runOperationKind({ operation: { kind: entry.operationKind } } as RunConfig);
  return query.kinds.some((k) => k.type === kind.type && (k.code === undefined || k.code === kind.code));
}
