import { type Command, Option } from "commander";
import * as pb from "../src/gen/flow/v1/flow.js";
import {
  type Act,
  collect,
  enumArg,
  nonNegativeInt,
  OUTCOME_UNKNOWN,
  pageFooter,
  pagination,
  phaseScopeOf,
  positiveInt,
  requestIdArg,
  short,
  uuidArg,
} from "./command-args.js";
import { registerControlCommands, registerVerdictCommands } from "./control-commands.js";
import { formatElapsed, parseDurationNs } from "./durations.js";
import { EXIT, isServiceError, UsageError } from "./errors.js";
import { registerFollowUpCommands } from "./follow-up-commands.js";
import { historyTable, listEventsFrom } from "./history.js";
import {
  componentTypes,
  operationTypes,
  PHASE_FLAGS,
  runReasons,
  runStatuses,
  targetStatuses,
} from "./names.js";
import { fields, indent, table, time, yamlText } from "./output.js";
import { statusMessageForPeople } from "./phase-numbers.js";
import { withRetries } from "./retry.js";
import { loadRunFile } from "./run-file/load.js";
import { runFileFromConfig } from "./run-file/to-file.js";
import { phaseNotes } from "./target-phases.js";
import { watchRun } from "./watch.js";
import { statusText } from "./watch-view.js";
import { windowText } from "./window.js";

export function registerRunCommands(program: Command, act: Act): void {
  const run = program.command("run").description("create, inspect and steer operation runs");

  run
    .command("create")
    .description("create a run from a run file (YAML or JSON; see docs/cli.md for the schema)")
    .requiredOption("-f, --file <path>", "run file")
    .option("--dry-run", "print the plan the service would freeze (phases and their racks); create nothing")
    .option(
      "--request-id <id>",
      "the create's client request id (default: a new UUID each time); the id an earlier invocation printed finds its run instead of creating another",
      requestIdArg,
    )
    .action(
      act(async (ctx, o: { file: string; dryRun?: boolean; requestId?: string }) => {
        const request = await loadRunFile(o.file);
        if (request.configuration?.operation?.operation?.value.queueOptions !== undefined) {
          ctx.io.stderr.write(`warning: ${o.file}: ${QUEUE_IGNORED}\n`);
        }
        if (o.dryRun === true) {
          const plan = await ctx.conn().flow.planOperationRun(request);
          ctx.print({
            data: pb.PlanOperationRunResponse.toJSON(plan),
            table: () => planTable(request, plan),
          });
          return EXIT.OK;
        }
        // One id per invocation, the same on every retry: a create that happened but whose answer
        // was lost is found again instead of repeated.
        const clientRequestId = o.requestId ?? ctx.newRequestId();
        const { id } = await withRetries(
          () => ctx.conn().flow.createOperationRun({ ...request, clientRequestId }),
          ctx.retryPolicy,
        ).catch((err: unknown) => {
          if (isServiceError(err) && OUTCOME_UNKNOWN.has(err.code)) {
            throw Object.assign(err, {
              outcomeHint: `the run may have been created: \`flowctl run create -f ${o.file} --request-id ${clientRequestId}\` answers its id if so, and creates it if not`,
            });
          }
          throw err;
        });
        ctx.print({
          data: pb.CreateOperationRunResponse.toJSON({ id }),
          table: () => `created run ${id?.id}\nwatch it: flowctl run watch ${id?.id}`,
        });
        return EXIT.OK;
      }),
    );

  run
    .command("get")
    .description("show a run: state, message, phase, configuration (and counts with --stats)")
    .argument("<id>", "run ID")
    .option("--stats", "include per-phase outcome counts")
    .action(
      act(async (ctx, id: string, o: { stats?: boolean }) => {
        const { operationRun } = await ctx.conn().flow.getOperationRun({
          id: { id: uuidArg("run ID", id) },
          includeStats: o.stats === true,
        });
        const r = operationRun ?? pb.OperationRun.fromPartial({});
        ctx.print({ data: pb.OperationRun.toJSON(r), table: () => runDetail(r) });
        return EXIT.OK;
      }),
    );

  run
    .command("list")
    .description("list runs, newest first")
    .option(
      "--name <pattern>",
      "name to match (repeat for several; all must match unless --any-name)",
      collect,
    )
    .option("--wildcard", "--name patterns are LIKE patterns: % any text, _ one character, \\ escapes")
    .option("--any-name", "a run matches if any --name pattern matches")
    .option(
      "--status <status>",
      `filter by status (repeatable): ${runStatuses.names.map((n) => n.toLowerCase()).join(", ")}`,
      enumArg(runStatuses),
    )
    .option(
      "--reason <reason>",
      `filter by status reason (repeatable): ${runReasons.names.map((n) => n.toLowerCase()).join(", ")}`,
      enumArg(runReasons),
    )
    .option("--limit <n>", "page size (service default 100)", positiveInt)
    .option("--offset <n>", "skip this many runs", nonNegativeInt)
    .action(
      act(
        async (
          ctx,
          o: {
            name?: string[];
            wildcard?: boolean;
            anyName?: boolean;
            status?: pb.OperationRunStatus[];
            reason?: pb.OperationRunStatusReason[];
            limit?: number;
            offset?: number;
          },
        ) => {
          const resp = await ctx.conn().flow.listOperationRuns({
            filter: {
              name:
                o.name === undefined
                  ? undefined
                  : { patterns: o.name, isWildcard: o.wildcard === true, useOr: o.anyName === true },
              states: stateFilters(o.status ?? [], o.reason ?? []),
              operationKinds: [],
            },
            pagination: pagination(o),
          });
          ctx.print({
            data: pb.ListOperationRunsResponse.toJSON(resp),
            table: () =>
              `${table(
                ["ID", "NAME", "STATUS", "PHASE", "CREATED", "MESSAGE"],
                resp.operationRuns.map((s) => [
                  short(s.id?.id),
                  s.name,
                  statusText({
                    status: s.state?.status ?? 0,
                    reason: s.state?.reason ?? 0,
                  }),
                  `${s.currentPhaseIndex + 1}/${s.totalPhases}`,
                  time(s.createdAt),
                  statusMessageForPeople(s.statusMessage),
                ]),
              )}\n${pageFooter(resp.operationRuns.length, o.offset ?? 0, resp.total, "runs")}`,
          });
          return EXIT.OK;
        },
      ),
    );

  run
    .command("targets")
    .description(
      "list a run's rack targets in phase-then-sequence order: the current and completed phases (future phases are never listed; the footer says how many targets they hold)",
    )
    .argument("<id>", "run ID")
    .option("--phase <which>", `which phases: ${PHASE_FLAGS.names.join(", ")} (default all-visible)`)
    .addOption(new Option("--phase-scope <scope>", "the older spelling of --phase").hideHelp())
    .option(
      "--status <status>",
      `only targets in this status: ${targetStatuses.names.map((n) => n.toLowerCase()).join(", ")}`,
    )
    .option("--limit <n>", "page size (service default 100)", positiveInt)
    .option("--offset <n>", "skip this many targets", nonNegativeInt)
    .action(
      act(
        async (
          ctx,
          id: string,
          o: { phase?: string; phaseScope?: string; status?: string; limit?: number; offset?: number },
        ) => {
          const phaseScope = phaseScopeOf(o);
          let status = pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_UNKNOWN;
          if (o.status !== undefined) {
            const parsed = targetStatuses.parse(o.status);
            if (parsed === undefined) {
              throw new UsageError(
                `--status: expected one of ${targetStatuses.names.map((n) => n.toLowerCase()).join(", ")} (got ${JSON.stringify(o.status)})`,
              );
            }
            status = parsed;
          }
          const runId = uuidArg("run ID", id);
          // The run's phase sizes say what the listing leaves out; only people read that.
          const [resp, run] = await Promise.all([
            ctx.conn().flow.listOperationRunTargets({
              operationRunId: { id: runId },
              status,
              phaseScope,
              pagination: pagination(o),
            }),
            ctx.format === "table"
              ? ctx.conn().flow.getOperationRun({ id: { id: runId }, includeStats: false })
              : undefined,
          ]);
          const summary = run?.operationRun?.summary;
          // Once a preflight has read them, each rack's versions before the run and what it flashes.
          const priors = resp.targets.some((t) => t.priorVersions.length > 0);
          ctx.print({
            data: pb.ListOperationRunTargetsResponse.toJSON(resp),
            table: () =>
              [
                table(
                  [
                    "PHASE",
                    "SEQ",
                    "RACK",
                    "STATUS",
                    "COMPONENTS",
                    ...(priors ? ["VERSIONS (BEFORE→TO)"] : []),
                    "TASK",
                    "MESSAGE",
                  ],
                  resp.targets.map((t) => [
                    String(t.phaseIndex + 1),
                    String(t.sequenceIndex),
                    t.rackExternalId || short(t.rackId?.id),
                    targetStatuses.name(t.status),
                    componentsText(t.componentsByType),
                    ...(priors ? [priorVersionsText(t.priorVersions)] : []),
                    short(t.taskId?.id),
                    t.message,
                  ]),
                ),
                pageFooter(resp.targets.length, o.offset ?? 0, resp.total, "targets"),
                ...(summary === undefined ? [] : phaseNotes(summary, phaseScope)),
              ].join("\n"),
          });
          return EXIT.OK;
        },
      ),
    );

  run
    .command("history")
    .description(
      "show a run's history as a timeline, oldest first: every change of its state, when, and who asked (the certificate's subject, or the OS user flowctl sends, marked unauthenticated)",
    )
    .argument("<id>", "run ID")
    .option("--limit <n>", "at most this many events (default: all)", positiveInt)
    .option("--offset <n>", "skip this many events", nonNegativeInt)
    .action(
      act(async (ctx, id: string, o: { limit?: number; offset?: number }) => {
        const runId = uuidArg("run ID", id);
        const offset = o.offset ?? 0;
        const resp =
          o.limit === undefined
            ? await listEventsFrom(ctx.conn(), runId, offset)
            : await ctx.conn().flow.listOperationRunEvents({
                operationRunId: { id: runId },
                pagination: { offset, limit: o.limit },
              });
        ctx.print({
          data: pb.ListOperationRunEventsResponse.toJSON(resp),
          table: () =>
            `${historyTable(resp.events)}\n${pageFooter(resp.events.length, offset, resp.total, "events")}`,
        });
        return EXIT.OK;
      }),
    );

  run
    .command("watch")
    .description(
      "follow a run live until it ends or pauses (exit 0 COMPLETED, 2 FAILED/COMPLETED_WITH_FAILURES/CANCELLED, 3 paused)",
    )
    .argument("<id>", "run ID")
    .option("--interval <duration>", "how often to poll", "1s")
    .action(
      act(async (ctx, id: string, o: { interval: string }) => {
        const ns = parseDurationNs(o.interval);
        if (ns === undefined || ns < 50_000_000n) {
          throw new UsageError(
            `--interval: expected a duration of at least 50ms, e.g. 1s (got ${JSON.stringify(o.interval)})`,
          );
        }
        const out = ctx.io.stdout;
        const live = out.isTTY === true || ctx.io.env.FLOWCTL_TTY === "1";
        return watchRun(ctx.conn(), {
          runId: uuidArg("run ID", id),
          intervalMs: Number(ns / 1_000_000n),
          live,
          color: live && ctx.color,
          columns: () => out.columns || Number(ctx.io.env.COLUMNS) || 120,
          out,
          interrupted: ctx.io.interrupted,
        });
      }),
    );

  registerControlCommands(run, act);
  registerFollowUpCommands(run, act);
  registerVerdictCommands(run, act);
}

/**
 * State filters from the flags: each status with each reason (AND within an entry, OR across):
 * `--status paused --reason safety_gate --reason phase_gate` → PAUSED∧SAFETY_GATE ∨ PAUSED∧PHASE_GATE.
 */
export function stateFilters(
  statuses: readonly pb.OperationRunStatus[],
  reasons: readonly pb.OperationRunStatusReason[],
): pb.OperationRunStateFilter[] {
  if (statuses.length === 0) return reasons.map((reason) => ({ reason }));
  if (reasons.length === 0) return statuses.map((status) => ({ status }));
  return statuses.flatMap((status) => reasons.map((reason) => ({ status, reason })));
}

/** `COMPUTE×4 NVSWITCH×2` */
function componentsText(c: pb.ComponentsByType | undefined): string {
  return (c?.groups ?? []).map((g) => `${componentTypes.name(g.type)}×${g.componentIds.length}`).join(" ");
}

/** `1.0→2.0×3 1.1→2.0×1`: components per (version before, version flashed to), in first-seen order. */
export function priorVersionsText(priors: readonly pb.ComponentPriorVersion[]): string {
  const counts = new Map<string, number>();
  for (const p of priors) {
    const key = `${p.priorVersion}→${p.targetVersion || "?"}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([key, n]) => `${key}×${n}`).join(" ");
}

function runDetail(r: pb.OperationRun): string {
  const s = r.summary;
  const kind = s?.operationKind;
  const duration =
    s?.startedAt === undefined
      ? ""
      : formatElapsed((s.finishedAt ?? new Date()).getTime() - s.startedAt.getTime()) +
        (s.finishedAt === undefined ? " so far" : "");
  const parts = [
    fields([
      ["ID", s?.id?.id ?? ""],
      ["Name", s?.name ?? ""],
      ["Description", s?.description ?? ""],
      [
        "Operation",
        kind === undefined ? "" : `${operationTypes.name(kind.type)}${kind.code ? ` (${kind.code})` : ""}`,
      ],
      ["Status", statusText({ status: s?.state?.status ?? 0, reason: s?.state?.reason ?? 0 })],
      ["Message", statusMessageForPeople(s?.statusMessage ?? "")],
      ...windowField(r.configuration),
      ["Phase", `${(s?.currentPhaseIndex ?? 0) + 1} of ${s?.totalPhases ?? 1}`],
      ["Created", time(s?.createdAt)],
      ["Started", time(s?.startedAt)],
      ["Finished", time(s?.finishedAt)],
      ["Updated", time(s?.updatedAt)],
      ["Duration", duration],
      ...followUpFields(s),
    ]),
  ];
  if (r.stats !== undefined) {
    const row = (label: string, p: pb.OperationRunPhaseStats | undefined) => {
      const c = p?.outcomeCounts;
      return [
        label,
        p === undefined ? "" : String(p.phaseIndex + 1),
        String(p?.selectedTargets ?? 0),
        String(c?.completed ?? 0),
        String(c?.failed ?? 0),
        String(c?.terminated ?? 0),
        String(c?.skipped ?? 0),
      ];
    };
    parts.push(
      `\nStats:\n${indent(
        table(
          ["SCOPE", "PHASE", "SELECTED", "COMPLETED", "FAILED", "TERMINATED", "SKIPPED"],
          [row("current phase", r.stats.currentPhaseStats), row("cumulative", r.stats.cumulativePhaseStats)],
        ),
      )}`,
    );
  }
  if (r.configuration !== undefined) {
    parts.push(
      `\nConfiguration (run-file form):\n${indent(yamlText(runFileFromConfig(s?.name ?? "", s?.description ?? "", r.configuration)))}`,
    );
  }
  return parts.join("\n");
}

/** A retry or rollback run's origin, and the runs made from this one; nothing for other runs. */
function followUpFields(s: pb.OperationRunSummary | undefined): [string, string][] {
  const ids = (list: pb.UUID[] | undefined) => (list ?? []).map((u) => u.id).join(", ");
  const fields: [string, string][] = [];
  if (s?.retryOf !== undefined) {
    const more = [
      ...(s.retryOf.includeTerminated ? ["terminated"] : []),
      ...(s.retryOf.includeSkipped ? ["skipped"] : []),
    ];
    fields.push([
      "Retry of",
      `${s.retryOf.operationRunId?.id ?? ""} (failed${more.map((m) => `, ${m}`).join("")} racks)`,
    ]);
  }
  if (s?.rollbackOf !== undefined) fields.push(["Rollback of", s.rollbackOf.operationRunId?.id ?? ""]);
  if ((s?.retriedBy.length ?? 0) > 0) fields.push(["Retried by", ids(s?.retriedBy)]);
  if ((s?.rolledBackBy.length ?? 0) > 0) fields.push(["Rolled back by", ids(s?.rolledBackBy)]);
  return fields;
}

/** The run file's `queue` inside a run: accepted on the wire, and ignored by design. */
export const QUEUE_IGNORED =
  "operation.upgradeFirmware.queue is ignored in a run: its child tasks always use the reject strategy (a busy rack blocks its target, retried per options.conflictRetry)";

/** `Window  open: closes at …` for a run with a maintenance window; nothing otherwise. */
function windowField(config: pb.OperationRunConfiguration | undefined): [string, string][] {
  const text = windowText(config, new Date());
  return text === undefined ? [] : [["Window", text]];
}

function planTable(request: pb.CreateOperationRunRequest, plan: pb.PlanOperationRunResponse): string {
  const byPhase = new Map<number, pb.OperationRunTarget[]>();
  for (const t of plan.targets) byPhase.set(t.phaseIndex, [...(byPhase.get(t.phaseIndex) ?? []), t]);
  const lines = [
    `dry run: nothing was created. The service would freeze this plan for run "${request.name}":`,
    `${plan.candidateCount} candidate racks, ${plan.targets.length} selected, ${plan.totalPhases} phase${plan.totalPhases === 1 ? "" : "s"}`,
    "",
  ];
  // Without target_version, each component's version comes from the baselines, frozen per target.
  const versioned = plan.targets.some((t) => t.targetVersions.length > 0);
  // With a failure-domain spread, each rack's domain (at most N of one in flight at once).
  const spread = plan.targets.some((t) => t.failureDomain !== "");
  for (let i = 0; i < plan.totalPhases; i++) {
    const targets = byPhase.get(i) ?? [];
    lines.push(`phase ${i + 1} (${targets.length} rack${targets.length === 1 ? "" : "s"}):`);
    lines.push(
      indent(
        table(
          [
            "SEQ",
            "RACK",
            "RACK ID",
            ...(spread ? ["DOMAIN"] : []),
            "COMPONENTS",
            ...(versioned ? ["VERSIONS"] : []),
          ],
          targets.map((t) => [
            String(t.sequenceIndex),
            t.rackExternalId || "-",
            short(t.rackId?.id),
            ...(spread ? [t.failureDomain] : []),
            componentsText(t.componentsByType),
            ...(versioned
              ? [t.targetVersions.map((v) => `${v.version}×${v.componentIds.length}`).join(" ")]
              : []),
          ]),
        ),
      ),
    );
  }
  const window = windowText(plan.configuration, new Date());
  if (window !== undefined) {
    lines.push("", `maintenance window: ${window}`);
    if (plan.nextWindowOpenings.length > 0) {
      lines.push(
        `next openings: ${plan.nextWindowOpenings.map((t) => t.toISOString().replace(".000Z", "Z")).join(", ")}`,
      );
    }
  }
  lines.push(
    "",
    "Effective configuration (generated seeds and defaults filled in; save it to create exactly this plan):",
    indent(yamlText(runFileFromConfig(request.name, request.description, plan.configuration))),
  );
  return lines.join("\n");
}

// ---------------------------------------------------------------------------------------------
// task
