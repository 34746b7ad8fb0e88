/**
 * The run controls, each answered with the run's state in one line (`run <id>: <status>, phase
 * 2/3 — <status message>`): `flowctl run pause|resume|advance|cancel`, and the two that carry a
 * person's verdict on a run, `flowctl run report-failure` (a completed rack failed afterwards)
 * and `flowctl run approve` (the two-person rule's second person).
 */
import type { Command } from "commander";
import * as pb from "../src/gen/flow/v1/flow.js";
import { type Act, expectedPhase, uuidArg } from "./command-args.js";
import type { Action } from "./context.js";
import { EXIT } from "./errors.js";
import { statusMessageForPeople } from "./phase-numbers.js";
import { reportFailureRequest } from "./report-failure.js";
import { statusText } from "./watch-view.js";

/** pause, resume, advance and cancel. */
export function registerControlCommands(run: Command, act: Act): void {
  control(
    run,
    act,
    "pause",
    "pause a pending or running run (submitted hardware work is not stopped)",
    (ctx, id) => ctx.conn().flow.pauseOperationRun({ id: { id } }),
  );
  control(run, act, "resume", "resume a paused run that is not at a phase gate", (ctx, id) =>
    ctx.conn().flow.resumeOperationRun({ id: { id } }),
  );
  control(run, act, "advance", "open the next phase of a run paused at a phase gate", (ctx, id, o) =>
    ctx
      .conn()
      .flow.advanceOperationRunPhase({ id: { id }, expectedPhaseIndex: o.expect as number | undefined }),
  ).option(
    "--expect <n>",
    "only if the next phase is phase N (counted from 1, as flowctl prints phases): guards against a double advance",
    expectedPhase,
  );
  control(
    run,
    act,
    "cancel",
    "cancel a run; child tasks of its current phase are cancelled best-effort",
    (ctx, id, o) =>
      ctx.conn().flow.cancelOperationRun({ id: { id }, reason: (o.reason as string | undefined) ?? "" }),
  ).option("--reason <text>", "why, recorded in the run's status message");
}

/** report-failure and approve. */
export function registerVerdictCommands(run: Command, act: Act): void {
  run
    .command("report-failure")
    .description(
      "report a rack that completed as failed afterwards (a late failure): the gates count it, so during a soak it can keep the next phase closed",
    )
    .argument("<id>", "run ID")
    .argument("<rack>", "the rack: its UUID, or its external id as `run targets` shows it")
    .requiredOption("--reason <text>", "why it failed; becomes the target's message")
    .action(
      act(async (ctx, id: string, rack: string, o: { reason?: string }) => {
        const runId = uuidArg("run ID", id);
        const request = await reportFailureRequest(ctx.conn(), runId, rack, o.reason);
        const r = await ctx.conn().flow.reportTargetFailure(request);
        ctx.print({ data: pb.OperationRun.toJSON(r), table: () => controlLine(r) });
        return EXIT.OK;
      }),
    );
  control(
    run,
    act,
    "approve",
    "approve a run the two-person rule holds (awaiting approval); not its creator's to approve",
    (ctx, id) => ctx.conn().flow.approveOperationRun({ id: { id } }),
  );
}

/** `flowctl run <name> <id>`: the call, then the run it answers with, in one line. */
function control(
  run: Command,
  act: Act,
  name: string,
  description: string,
  call: (ctx: Parameters<Action<[]>>[0], id: string, o: Record<string, unknown>) => Promise<pb.OperationRun>,
): Command {
  return run
    .command(name)
    .description(description)
    .argument("<id>", "run ID")
    .action(
      act(async (ctx, id: string, o: Record<string, unknown>) => {
        const r = await call(ctx, uuidArg("run ID", id), o);
        ctx.print({ data: pb.OperationRun.toJSON(r), table: () => controlLine(r) });
        return EXIT.OK;
      }),
    );
}

function controlLine(r: pb.OperationRun): string {
  const s = r.summary;
  const state = statusText({ status: s?.state?.status ?? 0, reason: s?.state?.reason ?? 0 });
  return `run ${s?.id?.id}: ${state}, phase ${(s?.currentPhaseIndex ?? 0) + 1}/${s?.totalPhases ?? 1}${s?.statusMessage ? ` — ${statusMessageForPeople(s.statusMessage)}` : ""}`;
}
