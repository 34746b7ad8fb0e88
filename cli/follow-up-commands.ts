/**
 * `flowctl run retry` and `flowctl run rollback`: a new run made from a finished one
 * (CreateOperationRunRequest.retry / .rollback). The new run's options (gates, concurrency,
 * phases, conflict retry, windows) are the followed run's, as GetOperationRun shows them, with
 * fresh selection and ordering seeds and every rack of the scope (100 %); its template is the
 * followed run's (the service fills it in). `--dry-run` prints the plan and creates nothing.
 */
import type { Command } from "commander";
import * as pb from "../src/gen/flow/v1/flow.js";
import { type Act, OUTCOME_UNKNOWN, requestIdArg, short, uuidArg } from "./command-args.js";
import type { Context } from "./context.js";
import { EXIT, isServiceError } from "./errors.js";
import { componentTypes } from "./names.js";
import { indent, table } from "./output.js";
import { withRetries } from "./retry.js";

type Kind = "retry" | "rollback";

export function registerFollowUpCommands(run: Command, act: Act): void {
  run
    .command("retry")
    .description(
      "retry a finished run's FAILED racks (and TERMINATED, SKIPPED ones if asked), each with the components frozen for it, with the run's template and options",
    )
    .argument("<id>", "the finished run's ID")
    .option("--include-terminated", "also its TERMINATED racks (stopped flashes)")
    .option("--include-skipped", "also its SKIPPED racks (never started)")
    .option("--name <name>", "the new run's name (default: \"<the run's name> retry\")")
    .option("--dry-run", "print the plan the service would freeze; create nothing")
    .option(
      "--request-id <id>",
      "the create's client request id (default: a new UUID each time)",
      requestIdArg,
    )
    .action(
      act(
        async (
          ctx,
          id: string,
          o: FollowUpOptions & { includeTerminated?: boolean; includeSkipped?: boolean },
        ) =>
          followUp(ctx, "retry", uuidArg("run ID", id), o, {
            retry: {
              operationRunId: { id: uuidArg("run ID", id) },
              includeTerminated: o.includeTerminated === true,
              includeSkipped: o.includeSkipped === true,
            },
            rollback: undefined,
          }),
      ),
    );

  run
    .command("rollback")
    .description(
      "roll a finished run back: every component it flashed goes back to the version it ran before (recorded by the flash's preflight), with the run's template and options",
    )
    .argument("<id>", "the finished run's ID")
    .option("--name <name>", "the new run's name (default: \"<the run's name> rollback\")")
    .option("--dry-run", "print the plan the service would freeze; create nothing")
    .option(
      "--request-id <id>",
      "the create's client request id (default: a new UUID each time)",
      requestIdArg,
    )
    .action(
      act(async (ctx, id: string, o: FollowUpOptions) =>
        followUp(ctx, "rollback", uuidArg("run ID", id), o, {
          retry: undefined,
          rollback: { operationRunId: { id: uuidArg("run ID", id) } },
        }),
      ),
    );
}

interface FollowUpOptions {
  name?: string;
  dryRun?: boolean;
  requestId?: string;
}

async function followUp(
  ctx: Context,
  kind: Kind,
  runId: string,
  o: FollowUpOptions,
  link: Pick<pb.CreateOperationRunRequest, "retry" | "rollback">,
): Promise<number> {
  const { operationRun } = await ctx.conn().flow.getOperationRun({ id: { id: runId }, includeStats: false });
  const request = followUpRequest(kind, runId, operationRun, o.name, link);
  if (o.dryRun === true) {
    const plan = await ctx.conn().flow.planOperationRun(request);
    ctx.print({
      data: pb.PlanOperationRunResponse.toJSON(plan),
      table: () => followUpPlanTable(kind, runId, plan),
    });
    return EXIT.OK;
  }
  const clientRequestId = o.requestId ?? ctx.newRequestId();
  const { id } = await withRetries(
    () => ctx.conn().flow.createOperationRun({ ...request, clientRequestId }),
    ctx.retryPolicy,
  ).catch((err: unknown) => {
    if (isServiceError(err) && OUTCOME_UNKNOWN.has(err.code)) {
      throw Object.assign(err, {
        outcomeHint: `the run may have been created: \`flowctl run ${kind} ${runId} --request-id ${clientRequestId}\` answers its id if so, and creates it if not`,
      });
    }
    throw err;
  });
  ctx.print({
    data: pb.CreateOperationRunResponse.toJSON({ id }),
    table: () => `created run ${id?.id} (${kind} of run ${runId})\nwatch it: flowctl run watch ${id?.id}`,
  });
  return EXIT.OK;
}

/**
 * The request: the followed run's options without its ordering seed, every rack of the scope
 * with a fresh selection seed, no operation (the service takes the followed run's template).
 */
export function followUpRequest(
  kind: Kind,
  runId: string,
  followed: pb.OperationRun | undefined,
  name: string | undefined,
  link: Pick<pb.CreateOperationRunRequest, "retry" | "rollback">,
): pb.CreateOperationRunRequest {
  const options = followed?.configuration?.options;
  return {
    name: name ?? `${followed?.summary?.name ?? "run"} ${kind}`,
    description: `${kind} of run ${runId}`,
    configuration: {
      selector: { selector: { $case: "percentage", value: { percentage: 100, seed: "" } } },
      options: options === undefined ? undefined : { ...options, orderingPolicy: undefined },
      operation: undefined,
    },
    clientRequestId: "",
    ...link,
  };
}

/** The plan by phase, each rack's components and versions, and what a rollback leaves alone. */
function followUpPlanTable(kind: Kind, runId: string, plan: pb.PlanOperationRunResponse): string {
  const lines = [
    `dry run: nothing was created. A ${kind} of run ${runId} would freeze ${plan.targets.length} rack${plan.targets.length === 1 ? "" : "s"} in ${plan.totalPhases} phase${plan.totalPhases === 1 ? "" : "s"}:`,
    indent(
      table(
        ["PHASE", "SEQ", "RACK", "COMPONENTS", "VERSIONS"],
        plan.targets.map((t) => [
          String(t.phaseIndex + 1),
          String(t.sequenceIndex),
          t.rackExternalId || short(t.rackId?.id),
          (t.componentsByType?.groups ?? [])
            .map((g) => `${componentTypes.name(g.type)}×${g.componentIds.length}`)
            .join(" "),
          t.targetVersions.length > 0
            ? t.targetVersions.map((v) => `${v.version}×${v.componentIds.length}`).join(" ")
            : (plan.configuration?.operation?.operation?.value.targetVersion ?? ""),
        ]),
      ),
    ),
  ];
  const skipped = plan.targets.flatMap((t) =>
    t.skippedComponents.map((s) => [
      t.rackExternalId || short(t.rackId?.id),
      s.componentId?.id ?? "",
      componentTypes.name(s.type),
      s.reason,
    ]),
  );
  if (skipped.length > 0) {
    lines.push("", "left alone:", indent(table(["RACK", "COMPONENT", "TYPE", "WHY"], skipped)));
  }
  return lines.join("\n");
}
