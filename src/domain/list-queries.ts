/**
 * List queries: validation of the decoded requests (every violation at once, proto field paths,
 * the reference's exact texts where it has them), and the pure predicates that decide whether a
 * run matches a ListOperationRuns filter, so that every store filters the same way.
 */

import type { Scoped } from "./create-run-input.js";
import { type FieldViolation, InvalidArgumentError, type Validated } from "./errors.js";
import type {
  OperationType,
  PhaseScope,
  Run,
  RunConfig,
  RunReason,
  RunStatus,
  TargetStatus,
} from "./model.js";
import { isNilUuid, isUuid } from "./uuid.js";

// ---------------------------------------------------------------------------------------------
// The decoded queries

export interface Page {
  offset: number;
  limit: number;
}

export interface ListRunsQuery {
  name?: { patterns: string[]; isWildcard: boolean; useOr: boolean };
  /** Fields AND within an entry; entries OR. Each entry has a status or a reason. */
  states: { status?: RunStatus; reason?: RunReason }[];
  /** Entries OR; code, when given, is non-empty. */
  kinds: { type: OperationType; code?: string }[];
  page: Page;
}

export interface ListTargetsQuery {
  runId: string;
  /** Absent = no status filter (the wire's UNKNOWN). */
  status?: TargetStatus;
  phaseScope: PhaseScope;
  page: Page;
}

export interface ListTasksQuery {
  rackId?: string;
  componentId?: string;
  activeOnly: boolean;
  withReport: boolean;
  page: Page;
}

// ---------------------------------------------------------------------------------------------
// Pagination

/** The reference's default page size (`dbquery.DefaultPaginationLimit`). */
export const DEFAULT_PAGE_LIMIT = 100;

/**
 * Larger limits are capped to this, silently. The reference applies no maximum (and sends limit 0
 * to SQL as "no limit"); here a page is assembled from DynamoDB reads, so an unbounded page is an
 * unbounded request. A capped page is still correct: `total` tells the client there is more.
 */
export const MAX_PAGE_LIMIT = 1000;

export interface PageInput {
  offset: number;
  limit: number;
}

/**
 * Absent → offset 0, limit 100. Limit 0 also means the default (proto3 cannot tell 0 from unset).
 * `{ offset: 0, limit: 5000 }` → `{ offset: 0, limit: 1000 }`.
 */
function checkPage(input: PageInput | undefined, violations: FieldViolation[]): Page {
  if (input === undefined) return { offset: 0, limit: DEFAULT_PAGE_LIMIT };
  // The reference's (unused) Pagination.Validate has this text; it is enforced here.
  if (input.offset < 0) violations.push({ field: "pagination.offset", rule: "offset must not be negative" });
  if (input.limit < 0) violations.push({ field: "pagination.limit", rule: "limit must not be negative" });
  const limit = input.limit === 0 ? DEFAULT_PAGE_LIMIT : Math.min(input.limit, MAX_PAGE_LIMIT);
  return { offset: input.offset, limit };
}

export function validatePage(input: PageInput | undefined): Validated<Page> {
  const violations: FieldViolation[] = [];
  const page = checkPage(input, violations);
  return violations.length > 0 ? { ok: false, violations } : { ok: true, value: page };
}

// ---------------------------------------------------------------------------------------------
// ListOperationRuns

export interface NameQuery {
  patterns: string[];
  isWildcard: boolean;
  useOr: boolean;
}

/** ListOperationRunsRequest as decoded: enums may be UNKNOWN, optional fields absent. */
export interface ListRunsQueryInput {
  name?: NameQuery;
  states: { status?: Scoped<RunStatus>; reason?: Scoped<RunReason> }[];
  kinds: { type: Scoped<OperationType>; code?: string }[];
  page?: PageInput;
}

/** Texts mirror the reference's converter. */
export function validateListRunsQuery(input: ListRunsQueryInput): Validated<ListRunsQuery> {
  const violations: FieldViolation[] = [];
  const add = (field: string, rule: string) => violations.push({ field, rule });

  input.name?.patterns.forEach((p, i) => {
    if (input.name?.isWildcard && likeTokens(wildcardPattern(p)) === undefined) {
      // PostgreSQL's own error text; the reference would fail with it at query time.
      add(`filter.name.patterns[${i}]`, "LIKE pattern must not end with escape character");
    }
  });

  const states: ListRunsQuery["states"] = [];
  input.states.forEach((s, i) => {
    const at = `filter.states[${i}]`;
    if (s.status === undefined && s.reason === undefined) {
      add(at, "operation run state filter must set status, reason, or both");
      return;
    }
    if (s.status === "UNKNOWN") add(`${at}.status`, "unknown operation run status in filter");
    if (s.reason === "UNKNOWN") add(`${at}.reason`, "unknown operation run status reason in filter");
    const entry: ListRunsQuery["states"][number] = {};
    if (s.status !== undefined && s.status !== "UNKNOWN") entry.status = s.status;
    if (s.reason !== undefined && s.reason !== "UNKNOWN") entry.reason = s.reason;
    states.push(entry);
  });

  const kinds: ListRunsQuery["kinds"] = [];
  input.kinds.forEach((k, i) => {
    const at = `filter.operation_kinds[${i}]`;
    if (k.type === "UNKNOWN") add(`${at}.type`, "operation kind filter must set operation type");
    if (k.code === "") add(`${at}.code`, "operation kind filter code must not be empty");
    if (k.type !== "UNKNOWN")
      kinds.push(k.code === undefined ? { type: k.type } : { type: k.type, code: k.code });
  });

  const page = checkPage(input.page, violations);
  if (violations.length > 0) return { ok: false, violations };
  const query: ListRunsQuery = { states, kinds, page };
  if (input.name !== undefined) query.name = input.name;
  return { ok: true, value: query };
}

// ---------------------------------------------------------------------------------------------
// ListOperationRunTargets, ListTasks, and run ids

/** The reference's text for a missing, malformed or nil run id (Get, ListTargets and the controls). */
export const RUN_ID_REQUIRED = "operation run ID is required";

/** The canonical run id, or InvalidArgument "operation run ID is required". */
export function requireRunId(raw: string | undefined): string {
  if (raw === undefined || !isUuid(raw) || isNilUuid(raw)) throw new InvalidArgumentError(RUN_ID_REQUIRED);
  return raw.toLowerCase();
}

export interface ListTargetsQueryInput {
  runId?: string;
  /** UNKNOWN = no status filter. */
  status: Scoped<TargetStatus>;
  /** UNKNOWN = CURRENT_PHASE. */
  phaseScope: Scoped<PhaseScope>;
  page?: PageInput;
}

/**
 * A bad run id is reported alone, with an empty field, so that the ValidationError's message is
 * exactly the reference's "operation run ID is required" (it checks the id before anything else).
 */
export function validateListTargetsQuery(input: ListTargetsQueryInput): Validated<ListTargetsQuery> {
  const { runId } = input;
  if (runId === undefined || !isUuid(runId) || isNilUuid(runId)) {
    return { ok: false, violations: [{ field: "", rule: RUN_ID_REQUIRED }] };
  }
  const violations: FieldViolation[] = [];
  const page = checkPage(input.page, violations);
  if (violations.length > 0) return { ok: false, violations };
  const query: ListTargetsQuery = {
    runId: runId.toLowerCase(),
    phaseScope: input.phaseScope === "UNKNOWN" ? "CURRENT_PHASE" : input.phaseScope,
    page,
  };
  if (input.status !== "UNKNOWN") query.status = input.status;
  return { ok: true, value: query };
}

export interface ListTasksQueryInput {
  rackId?: string;
  componentId?: string;
  activeOnly: boolean;
  withReport: boolean;
  page?: PageInput;
}

export function validateListTasksQuery(input: ListTasksQueryInput): Validated<ListTasksQuery> {
  const violations: FieldViolation[] = [];
  const query: ListTasksQuery = {
    activeOnly: input.activeOnly,
    withReport: input.withReport,
    page: checkPage(input.page, violations),
  };
  for (const [field, id] of [
    ["rack_id", input.rackId],
    ["component_id", input.componentId],
  ] as const) {
    if (id === undefined) continue;
    if (!isUuid(id)) violations.push({ field, rule: `must be a valid UUID (got ${JSON.stringify(id)})` });
    else if (field === "rack_id") query.rackId = id.toLowerCase();
    else query.componentId = id.toLowerCase();
  }
  return violations.length > 0 ? { ok: false, violations } : { ok: true, value: query };
}

// ---------------------------------------------------------------------------------------------
// Matching runs against a ListOperationRuns filter

/** Every run is an UpgradeFirmware rollout: FIRMWARE_CONTROL with the reference's code "upgrade". */
export const UPGRADE_FIRMWARE_CODE = "upgrade";

/** The run's `operation_kind`, as returned in its summary and matched by kind filters. */
export function runOperationKind(config: RunConfig): { type: OperationType; code: string } {
  switch (config.operation.kind) {
    case "upgradeFirmware":
      return { type: "FIRMWARE_CONTROL", code: UPGRADE_FIRMWARE_CODE };
  }
}

/** All three filters together; each matches everything when empty. */
export function matchesRunsQuery(
  run: Pick<Run, "name" | "status" | "reason" | "config">,
  query: ListRunsQuery,
): boolean {
  return (
    (query.name === undefined || matchesName(run.name, query.name)) &&
    matchesStates(run, query.states) &&
    matchesKinds(run, query.kinds)
  );
}

/**
 * The reference's name filter, reproduced:
 * - no patterns: no filter;
 * - exact (`is_wildcard` false): the name equals ANY pattern (the reference uses `= p`, or `IN (...)`
 *   for several; `use_or` plays no part, since AND-ing equalities could never match);
 * - wildcard: each pattern is a PostgreSQL LIKE pattern, case-sensitive, `%` any run of characters,
 *   `_` exactly one, `\` escapes. A pattern that neither starts nor ends with `%` is wrapped in `%…%`,
 *   so "canary" means "contains canary" while "canary%" means "starts with canary". Several patterns
 *   are AND-ed, or OR-ed when `use_or`.
 *
 * `matchesName("fw-canary-1", { patterns: ["canary"], isWildcard: true, useOr: false })` → true;
 * `matchesName("fw-canary-1", { patterns: ["canary%"], isWildcard: true, useOr: false })` → false.
 */
export function matchesName(name: string, query: NameQuery): boolean {
  if (query.patterns.length === 0) return true;
  if (!query.isWildcard) return query.patterns.includes(name);
  const hit = (p: string) => likeMatch(name, wildcardPattern(p));
  return query.useOr ? query.patterns.some(hit) : query.patterns.every(hit);
}

/** Entries OR; within an entry, status AND reason. No entries = no filter. */
export function matchesStates(run: Pick<Run, "status" | "reason">, states: ListRunsQuery["states"]): boolean {
  if (states.length === 0) return true;
  return states.some(
    (s) =>
      (s.status === undefined || s.status === run.status) &&
      (s.reason === undefined || s.reason === run.reason),
  );
}

/** Entries OR; within an entry, type AND (when given) code. No entries = no filter. */
export function matchesKinds(run: Pick<Run, "config">, kinds: ListRunsQuery["kinds"]): boolean {
  if (kinds.length === 0) return true;
  const kind = runOperationKind(run.config);
  return kinds.some((k) => k.type === kind.type && (k.code === undefined || k.code === kind.code));
}

/** The reference's wrapping: "" and patterns touching `%` at either end are left alone. */
function wildcardPattern(p: string): string {
  return p !== "" && !p.startsWith("%") && !p.endsWith("%") ? `%${p}%` : p;
}

type LikeToken = { k: "any" } | { k: "one" } | { k: "lit"; c: string };

/** Undefined when the pattern ends with a lone escape character (PostgreSQL rejects it). */
function likeTokens(pattern: string): LikeToken[] | undefined {
  const chars = Array.from(pattern);
  const tokens: LikeToken[] = [];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    if (c === "\\") {
      const next = chars[++i];
      if (next === undefined) return undefined;
      tokens.push({ k: "lit", c: next });
    } else if (c === "%") tokens.push({ k: "any" });
    else if (c === "_") tokens.push({ k: "one" });
    else tokens.push({ k: "lit", c });
  }
  return tokens;
}

/**
 * LIKE by code point (as PostgreSQL counts characters), with the classic single-backtrack wildcard
 * scan: on a mismatch, retry from the last `%` one character further. O(name × pattern) at worst,
 * with no regular expression to blow up on `%a%a%a%…`.
 */
function likeMatch(text: string, pattern: string): boolean {
  const tokens = likeTokens(pattern);
  if (tokens === undefined) return false;
  const chars = Array.from(text);
  let t = 0;
  let p = 0;
  let starP = -1;
  let starT = 0;
  while (t < chars.length) {
    const tok = tokens[p];
    if (tok !== undefined && (tok.k === "one" || (tok.k === "lit" && tok.c === chars[t]))) {
      t++;
      p++;
    } else if (tok?.k === "any") {
      starP = p++;
      starT = t;
    } else if (starP >= 0) {
      p = starP + 1;
      t = ++starT;
    } else {
      return false;
    }
  }
  while (tokens[p]?.k === "any") p++;
  return p === tokens.length;
}

// ---------------------------------------------------------------------------------------------
// Phase scope

/**
 * The phases a target listing covers, inclusive, against the run's current phase index:
 * CURRENT_PHASE is `= i`, COMPLETED_PHASES `< i`, CURRENT_AND_COMPLETED_PHASES `<= i`.
 * Future phases are never included, though their targets already exist.
 *
 * At phase 2: CURRENT → {2,2}; COMPLETED → {0,1}; CURRENT_AND_COMPLETED → {0,2}.
 * At phase 0: COMPLETED → "empty".
 */
export function phaseRange(
  scope: PhaseScope,
  currentPhaseIndex: number,
): { from: number; to: number } | "empty" {
  switch (scope) {
    case "CURRENT_PHASE":
      return { from: currentPhaseIndex, to: currentPhaseIndex };
    case "COMPLETED_PHASES":
      return currentPhaseIndex === 0 ? "empty" : { from: 0, to: currentPhaseIndex - 1 };
    case "CURRENT_AND_COMPLETED_PHASES":
      return { from: 0, to: currentPhaseIndex };
  }
}
