/**
 * The two-person rule through the use cases, on the in-memory stores: a create whose plan reaches
 * `approval.minRacks` racks is held PAUSED / AWAITING_APPROVAL and nothing of it is dispatched;
 * Resume and Advance do not lift it, Pause keeps it, Cancel ends it; its creator (by any name it
 * carries) and an unverified caller cannot approve it, and each refusal is logged and recorded in
 * its history; another verified caller can, and the history names both people.
 */

import { describe, expect, it } from "vitest";
import { createControls } from "../../src/app/controls.js";
import { createDispatcher } from "../../src/app/dispatcher.js";
import { createRunService } from "../../src/app/runs.js";
import type { Actor } from "../../src/domain/actor.js";
import { approvalRefusal, samePerson } from "../../src/domain/approval.js";
import { clockOf } from "../support/clock.js";
import { createRunInput } from "../support/domain-fixtures.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import { everyImage } from "../support/memory-images.js";
import { MemoryInventoryStore, MemoryRunStore } from "../support/memory-stores.js";
import { T0 } from "../support/run-states.js";
import { ScriptedSubmitter } from "../support/scripted-submitter.js";

const ALL = { offset: 0, limit: 100 };
const ALICE: Actor = {
  name: "alice",
  source: "CLIENT_CERTIFICATE",
  authenticated: true,
  subjectAltNames: ["URI:spiffe://example.org/people/alice"],
};
const BOB: Actor = {
  name: "bob",
  source: "CLIENT_CERTIFICATE",
  authenticated: true,
  subjectAltNames: ["URI:spiffe://example.org/people/bob"],
};
/** Another certificate, another CN, but alice's SPIFFE id: the same person. */
const ALICE_AGAIN: Actor = {
  name: "alice-laptop",
  source: "LOAD_BALANCER_CERTIFICATE",
  authenticated: true,
  subjectAltNames: ["URI:spiffe://example.org/people/alice"],
};
const CAROL_DECLARED: Actor = {
  name: "carol",
  source: "DECLARED",
  authenticated: false,
  subjectAltNames: [],
};

const INPUT = createRunInput({ name: "fleet-wide", maxConcurrentTargets: 4, phaseCount: 1 });

async function world(minRacks: number) {
  const runs = new MemoryRunStore();
  const rack = (n: number) => ({
    id: uuid(n, "aaaa0000"),
    name: `rack-${n}`,
    externalId: `EXT-${n}`,
    components: [{ id: uuid(n, "cccc0000"), type: "COMPUTE" as const }],
  });
  const inventory = new MemoryInventoryStore([1, 2, 3, 4].map(rack));
  const clock = { now: T0 };
  let ids = 0;
  const service = createRunService({
    images: everyImage,
    runs,
    inventory,
    clock: clockOf(() => clock.now),
    newId: () => uuid(++ids, "1d000000"),
  });
  const submitter = new ScriptedSubmitter();
  const warnings: string[] = [];
  const deps = {
    runs,
    submitter,
    clock: clockOf(() => clock.now),
    logger: {
      info: () => {},
      warn: (message: string, fields?: Record<string, unknown>) =>
        warnings.push(`${message} ${JSON.stringify(fields)}`),
      error: () => {},
    },
  };
  const dispatcher = createDispatcher(deps);
  const controls = createControls({ ...deps, dispatcher });
  const { id } = await service.createRun(INPUT, { actor: ALICE, approval: { minRacks } });
  const history = async () => (await runs.listRunEvents(id, ALL))?.events ?? [];
  const targetStatuses = async () =>
    (await runs.listTargets(id, { phaseFrom: 0, phaseTo: 0, page: ALL }))?.targets.map((t) => t.status);
  return { id, runs, clock, submitter, dispatcher, controls, history, targetStatuses, warnings };
}

describe("two-person rule: create", () => {
  it("a plan with as many racks as minRacks is created PAUSED / AWAITING_APPROVAL, CREATED then APPROVAL_REQUESTED", async () => {
    const w = await world(4);
    const run = await w.runs.getRun(w.id);
    expect(run).toMatchObject({
      status: "PAUSED",
      reason: "AWAITING_APPROVAL",
      statusMessage: "awaiting approval: 4 racks, the access policy requires a second person from 4",
    });
    expect((await w.history()).map((e) => [e.kind, e.actor?.name, e.detail?.type])).toEqual([
      ["CREATED", "alice", "plan"],
      ["APPROVAL_REQUESTED", undefined, "approval"],
    ]);
    expect((await w.history())[1]).toMatchObject({
      status: "PAUSED",
      reason: "AWAITING_APPROVAL",
      message: "awaiting approval: 4 racks, the access policy requires a second person from 4",
      detail: { type: "approval", minRacks: 4, racks: 4 },
    });
  });

  it("a plan with fewer racks than minRacks is created PENDING as before, CREATED alone", async () => {
    const w = await world(5);
    expect(await w.runs.getRun(w.id)).toMatchObject({ status: "PENDING", reason: "NONE" });
    expect((await w.history()).map((e) => e.kind)).toEqual(["CREATED"]);
  });
});

describe("two-person rule: nothing moves before approval", () => {
  it("a dispatch pass submits nothing and every target stays PENDING; Pause keeps the reason; Resume and Advance are refused", async () => {
    const w = await world(2);
    await w.dispatcher.dispatchRun(w.id);
    expect(w.submitter.submits).toEqual([]);
    expect(await w.targetStatuses()).toEqual(["PENDING", "PENDING", "PENDING", "PENDING"]);

    await w.controls.pause(w.id, ALICE);
    expect(await w.runs.getRun(w.id)).toMatchObject({ status: "PAUSED", reason: "AWAITING_APPROVAL" });
    await expect(w.controls.resume(w.id, ALICE)).rejects.toMatchObject({
      code: "FAILED_PRECONDITION",
      message: `operation run is not in a valid state for the requested operation: ${w.id} is awaiting approval by a second person; use ApproveOperationRun`,
    });
    await expect(w.controls.advance(w.id, undefined, ALICE)).rejects.toMatchObject({
      code: "FAILED_PRECONDITION",
      message: `operation run is not in a valid state for the requested operation: ${w.id} is not paused at a phase gate`,
    });
    expect((await w.history()).map((e) => e.kind)).toEqual(["CREATED", "APPROVAL_REQUESTED"]);
    expect(w.submitter.submits).toEqual([]);
  });

  it("Cancel still works: CANCELLED, every target SKIPPED, nothing submitted", async () => {
    const w = await world(2);
    const cancelled = await w.controls.cancel(w.id, "too big", BOB);
    expect(cancelled).toMatchObject({
      status: "CANCELLED",
      statusMessage: "operation run cancelled: too big",
    });
    expect(await w.targetStatuses()).toEqual(["SKIPPED", "SKIPPED", "SKIPPED", "SKIPPED"]);
    expect(w.submitter.submits).toEqual([]);
    await expect(w.controls.approve(w.id, BOB)).rejects.toMatchObject({
      code: "FAILED_PRECONDITION",
      message: `operation run is not in a valid state for the requested operation: ${w.id} is not awaiting approval`,
    });
  });
});

describe("two-person rule: who may approve", () => {
  it("the creator (same certificate, or another certificate with its SPIFFE id) is PERMISSION_DENIED; an unverified caller UNAUTHENTICATED; each refusal logged and in the history", async () => {
    const w = await world(2);
    await expect(w.controls.approve(w.id, ALICE)).rejects.toMatchObject({
      code: "PERMISSION_DENIED",
      message: `alice may not approve operation run ${w.id}: alice created it; a second person must approve`,
    });
    w.clock.now += 1;
    await expect(w.controls.approve(w.id, ALICE_AGAIN)).rejects.toMatchObject({
      code: "PERMISSION_DENIED",
      message: `alice-laptop may not approve operation run ${w.id}: alice created it; a second person must approve`,
    });
    w.clock.now += 1;
    await expect(w.controls.approve(w.id, CAROL_DECLARED)).rejects.toMatchObject({
      code: "UNAUTHENTICATED",
      message: `approving operation run ${w.id} needs a verified client certificate; the caller has none (declared name "carol" is not proof)`,
    });
    expect(await w.runs.getRun(w.id)).toMatchObject({ status: "PAUSED", reason: "AWAITING_APPROVAL" });
    const denials = (await w.history()).filter((e) => e.kind === "ACCESS_DENIED");
    expect(denials.map((e) => [e.actor?.name, e.detail])).toEqual([
      [
        "alice",
        {
          type: "denial",
          rpc: "ApproveOperationRun",
          code: "PERMISSION_DENIED",
          reason: `alice may not approve operation run ${w.id}: alice created it; a second person must approve`,
        },
      ],
      [
        "alice-laptop",
        {
          type: "denial",
          rpc: "ApproveOperationRun",
          code: "PERMISSION_DENIED",
          reason: `alice-laptop may not approve operation run ${w.id}: alice created it; a second person must approve`,
        },
      ],
      [
        "carol",
        {
          type: "denial",
          rpc: "ApproveOperationRun",
          code: "UNAUTHENTICATED",
          reason: `approving operation run ${w.id} needs a verified client certificate; the caller has none (declared name "carol" is not proof)`,
        },
      ],
    ]);
    expect(w.warnings.filter((l) => l.startsWith("access denied "))).toHaveLength(3);
    expect(w.submitter.submits).toEqual([]);
  });

  it("another verified caller approves: PENDING, APPROVED names both people, then the dispatch pass submits", async () => {
    const w = await world(2);
    w.clock.now += 1000;
    const approved = await w.controls.approve(w.id, BOB);
    expect(approved).toMatchObject({
      status: "PENDING",
      reason: "NONE",
      statusMessage: "operation run approved",
    });
    const events = await w.history();
    const approval = events.find((e) => e.kind === "APPROVED");
    expect(approval).toMatchObject({
      at: T0 + 1000,
      actor: BOB,
      message: "operation run approved by bob (created by alice)",
      detail: { type: "approval", minRacks: 2, racks: 4, requestedBy: ALICE },
    });
    // The approval woke a dispatch pass: the run started and its targets were submitted.
    expect(events.map((e) => e.kind)).toEqual([
      "CREATED",
      "APPROVAL_REQUESTED",
      "APPROVED",
      "STARTED",
      "PHASE_OPENED",
    ]);
    expect(w.submitter.submits).toHaveLength(4);
    await expect(w.controls.approve(w.id, BOB)).rejects.toMatchObject({
      code: "FAILED_PRECONDITION",
      message: `operation run is not in a valid state for the requested operation: ${w.id} is not awaiting approval`,
    });
  });

  it("samePerson compares the verified names (CN, each SAN), or a declared creator's name; a name declared beside a certificate is not compared", () => {
    expect(samePerson(ALICE, BOB)).toBe(false);
    expect(samePerson(ALICE, ALICE_AGAIN)).toBe(true);
    expect(
      samePerson(ALICE, { ...BOB, subjectAltNames: ["DNS:x", "URI:spiffe://example.org/people/alice"] }),
    ).toBe(true);
    expect(samePerson(ALICE, { ...BOB, name: "alice", subjectAltNames: [] })).toBe(true);
    // Both ran flowctl as the OS user "ubuntu": still two people.
    expect(samePerson({ ...ALICE, declaredName: "ubuntu" }, { ...BOB, declaredName: "ubuntu" })).toBe(false);
    // A creator without a certificate (allowDeclared) is its declared name.
    expect(samePerson(CAROL_DECLARED, { ...BOB, name: "carol" })).toBe(true);
    expect(approvalRefusal("r", undefined, BOB)).toBeUndefined();
  });

  it("a name in common under another CA still makes the same person: the rule refuses more, never less", () => {
    const fromOps = { ...ALICE, issuer: "CN=ops-ca" };
    const fromCorp = { ...ALICE_AGAIN, issuer: "CN=corp-ca" };
    expect(samePerson(fromOps, fromCorp)).toBe(true);
    expect(approvalRefusal("r", fromOps, fromCorp)?.code).toBe("PERMISSION_DENIED");
  });

  it("refusals name who they can: an anonymous approver quotes no name; a certificate without a CN is 'the caller', its creator 'the same person'", () => {
    const anonymous: Actor = { name: "", source: "ANONYMOUS", authenticated: false, subjectAltNames: [] };
    expect(approvalRefusal("r", ALICE, anonymous)).toEqual({
      code: "UNAUTHENTICATED",
      message: "approving operation run r needs a verified client certificate; the caller has none",
    });
    const aliceNoCn = { ...ALICE, name: "" };
    expect(approvalRefusal("r", aliceNoCn, { ...ALICE_AGAIN, name: "" })).toEqual({
      code: "PERMISSION_DENIED",
      message:
        "the caller may not approve operation run r: the same person created it; a second person must approve",
    });
  });
});
