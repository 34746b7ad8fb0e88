/**
 * ListOperationRuns, ListOperationRunTargets, ListOperationRunEvents, ListTasks and ListRacks
 * requests → validated queries.
 */

import type { ListRunsQuery, ListTargetsQuery, ListTasksQuery, Page } from "../../../domain/list-queries.js";
import {
  type ListRunsQueryInput,
  type ListTargetsQueryInput,
  type PageInput,
  validateListRunsQuery,
  validateListTargetsQuery,
  validateListTasksQuery,
  validatePage,
} from "../../../domain/list-queries.js";
import type * as pb from "../../../gen/flow/v1/flow.js";
import type * as admin from "../../../gen/flowadmin/v1/admin.js";
import {
  operationTypeFromProto,
  phaseScopeFromProto,
  runReasonFromProto,
  runStatusFromProto,
  targetStatusFromProto,
} from "./enums.js";
import { LIMITS } from "./limits.js";
import { runIdFromProto } from "./run-request.js";
import { compact, decoding, validated } from "./violations.js";

/** Pagination is passed as sent (absent stays absent); the domain applies defaults and caps. */
function pageInput(p: pb.Pagination | undefined): PageInput | undefined {
  return p && { offset: p.offset, limit: p.limit };
}

export function listRunsQueryFromProto(req: pb.ListOperationRunsRequest): ListRunsQuery {
  const input = decoding((v): ListRunsQueryInput => {
    const filter = req.filter;
    const input: ListRunsQueryInput = { states: [], kinds: [], page: pageInput(req.pagination) };
    if (filter === undefined) return input;
    if (filter.name !== undefined) {
      v.maxEntries("filter.name.patterns", filter.name.patterns, LIMITS.patterns);
      filter.name.patterns.forEach((p, i) => {
        v.maxLength(`filter.name.patterns[${i}]`, p, LIMITS.label);
      });
      const { patterns, isWildcard, useOr } = filter.name;
      input.name = { patterns, isWildcard, useOr };
    }
    v.maxEntries("filter.states", filter.states, LIMITS.filterEntries);
    filter.states.forEach((s, i) => {
      const field = `filter.states[${i}]`;
      input.states.push(
        compact({
          status: s.status === undefined ? undefined : runStatusFromProto(s.status, `${field}.status`, v),
          reason: s.reason === undefined ? undefined : runReasonFromProto(s.reason, `${field}.reason`, v),
        }),
      );
    });
    v.maxEntries("filter.operation_kinds", filter.operationKinds, LIMITS.filterEntries);
    filter.operationKinds.forEach((k, i) => {
      const type = operationTypeFromProto(k.type, `filter.operation_kinds[${i}].type`, v);
      if (type !== undefined) input.kinds.push(compact({ type, code: k.code }));
    });
    return input;
  });
  return validated(validateListRunsQuery(input));
}

/** The run id is checked first, as the reference does: a bad id hides every other problem. */
export function listTargetsQueryFromProto(req: pb.ListOperationRunTargetsRequest): ListTargetsQuery {
  const runId = runIdFromProto(req.operationRunId);
  const input = decoding(
    (v): ListTargetsQueryInput =>
      compact({
        runId,
        status: targetStatusFromProto(req.status, "status", v) ?? "UNKNOWN",
        phaseScope: phaseScopeFromProto(req.phaseScope, "phase_scope", v) ?? "CURRENT_PHASE",
        page: pageInput(req.pagination),
      }),
  );
  return validated(validateListTargetsQuery(input));
}

/** ListOperationRunEvents: the run id first (as for targets), then the page with its defaults. */
export function listRunEventsQueryFromProto(req: pb.ListOperationRunEventsRequest): {
  runId: string;
  page: Page;
} {
  const runId = runIdFromProto(req.operationRunId);
  return { runId, page: validated(validatePage(pageInput(req.pagination))) };
}

export function listTasksQueryFromProto(req: pb.ListTasksRequest): ListTasksQuery {
  return validated(
    validateListTasksQuery(
      compact({
        rackId: req.rackId?.id,
        componentId: req.componentId?.id,
        activeOnly: req.activeOnly,
        withReport: req.withReport,
        page: pageInput(req.pagination),
      }),
    ),
  );
}

export function pageFromListRacks(req: admin.ListRacksRequest): Page {
  return validated(validatePage(pageInput(req.pagination)));
}
