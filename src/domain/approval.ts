/**
 * The two-person rule: with the access policy's `approval: { minRacks: N }`, a run whose frozen
 * plan holds N racks or more is created PAUSED / AWAITING_APPROVAL, and only a second person may
 * release it (ApproveOperationRun; the run machine's `approve` event). Resume does not; cancel
 * still works.
 *
 *   minRacks 20, a plan over 25 racks → PAUSED / AWAITING_APPROVAL
 *     "awaiting approval: 25 racks, the access policy requires a second person from 20"
 *   created by CN=alice, approved by CN=alice → PERMISSION_DENIED
 *     "alice may not approve operation run <id>: alice created it; a second person must approve"
 *
 * Who counts as the same person is decided on every verified name the two callers carry, not one:
 * the certificate's name (its CN) and each subject alternative name; a creator without a
 * certificate (a policy with allowDeclared) goes by its declared name. Any name in common makes
 * them the same person, so a second certificate with the creator's SPIFFE id or CN does not let
 * the creator approve its own run. A name declared beside a certificate is not compared: flowctl
 * declares the OS user, and two people on hosts with the same user name are still two people.
 * The issuer is not compared either: elsewhere the same CN under two CAs is two callers, but here
 * a name in common under any CA the front trusts counts as the creator (the rule refuses more,
 * never less: one person holding certificates from two CAs cannot approve their own run).
 */
import type { Actor } from "./actor.js";
import type { HistoryDraft } from "./history-event.js";
import type { Run } from "./model.js";
import { MSG_APPROVED } from "./run-messages.js";

export interface ApprovalRule {
  /** The smallest number of distinct racks a plan needs to require a second person. */
  minRacks: number;
}

/** The highest minRacks a policy may name: one more than a run can ever plan makes no sense. */
export const APPROVAL_MIN_RACKS_MAX = 100_000;

/** Whether a plan over `racks` distinct racks waits for approval under `rule`. */
export function needsApproval(rule: ApprovalRule | undefined, racks: number): boolean {
  return rule !== undefined && racks >= rule.minRacks;
}

/** The status message of a run created awaiting approval. */
export function awaitingApprovalMessage(racks: number, rule: ApprovalRule): string {
  return `awaiting approval: ${racks} racks, the access policy requires a second person from ${rule.minRacks}`;
}

/** The names an actor is known by: a certificate's CN and SANs, or else its declared name. */
function namesOf(actor: Actor): Set<string> {
  const names = new Set<string>(actor.authenticated ? actor.subjectAltNames : []);
  if (actor.name !== "") names.add(actor.name);
  return names;
}

/** Whether the two callers share any name (module comment). */
export function samePerson(a: Actor, b: Actor): boolean {
  const names = namesOf(a);
  return [...namesOf(b)].some((n) => names.has(n));
}

/**
 * Why `approver` may not approve run `runId` that `creator` created, or undefined when it may.
 * Only a verified certificate approves (a declared name is no proof of being a second person),
 * even on a front without an access policy.
 */
export function approvalRefusal(
  runId: string,
  creator: Actor | undefined,
  approver: Actor,
): { code: "UNAUTHENTICATED" | "PERMISSION_DENIED"; message: string } | undefined {
  if (!approver.authenticated) {
    const declared =
      approver.name === "" ? "" : ` (declared name ${JSON.stringify(approver.name)} is not proof)`;
    return {
      code: "UNAUTHENTICATED",
      message: `approving operation run ${runId} needs a verified client certificate; the caller has none${declared}`,
    };
  }
  if (creator !== undefined && samePerson(creator, approver)) {
    const who = approver.name === "" ? "the caller" : approver.name;
    const creatorName = creator.name === "" ? "the same person" : creator.name;
    return {
      code: "PERMISSION_DENIED",
      message: `${who} may not approve operation run ${runId}: ${creatorName} created it; a second person must approve`,
    };
  }
  return undefined;
}

/**
 * The APPROVAL_REQUESTED event of a run created awaiting approval (after its CREATED): the run's
 * status message, the rule's threshold and the plan's distinct racks.
 */
export function approvalRequestedDraft(
  run: Run,
  approval: { minRacks: number; racks: number },
): HistoryDraft {
  return {
    kind: "APPROVAL_REQUESTED",
    message: run.statusMessage,
    detail: { type: "approval", minRacks: approval.minRacks, racks: approval.racks },
  };
}

/**
 * The APPROVED event, the approver as actor: "approved by bob (created by alice)"; the rule's
 * threshold, the plan's racks and who created the run in the detail when known.
 */
export function approvedDraft(
  actor: Actor | undefined,
  approval: { minRacks: number; racks: number; requestedBy?: Actor } | undefined,
): HistoryDraft {
  return {
    kind: "APPROVED",
    message:
      actor === undefined || actor.name === ""
        ? MSG_APPROVED
        : `${MSG_APPROVED} by ${actor.name}${approval?.requestedBy?.name ? ` (created by ${approval.requestedBy.name})` : ""}`,
    ...(actor === undefined ? {} : { actor }),
    ...(approval === undefined ? {} : { detail: { type: "approval", ...approval } }),
  };
}
