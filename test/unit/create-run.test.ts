/**
 * The create use case (src/app/runs.ts) on fakes typed from the ports: what it reads of the
 * inventory, the client request id (same request → the first run's id, another → InvalidArgument,
 * the race of two creates with one id), and the caller's deadline (nothing is written for a caller
 * that is gone). The DynamoDB side of the same rules: test/integration/dynamodb-create.test.ts.
 */

import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { LocalRequestMac } from "../../src/adapters/kms/request-mac.js";
import { createCommitReserve, MIN_COMMIT_RESERVE_MS } from "../../src/app/commit-reserve.js";
import type {
  ClientRequestRecord,
  CreateRunOptions,
  CreateRunOutcome,
  RequestMac,
  RunStore,
} from "../../src/app/ports.js";
import { createRunService } from "../../src/app/runs.js";
import { credentialsMacMessage, requestFingerprint } from "../../src/domain/client-request.js";
import type { CreateRunInput } from "../../src/domain/create-run-input.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { FirmwareAuthentication, Run, Target } from "../../src/domain/model.js";
import { clockOf } from "../support/clock.js";
import { everyImage } from "../support/memory-images.js";
import { memoryInventory } from "../support/memory-inventory.js";

const NOW = 1_800_000_000_000;

const rackId = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`;
const fleet = (n: number): InventoryRack[] =>
  Array.from({ length: n }, (_, i) => ({
    id: rackId(i),
    name: `rack-${i}`,
    externalId: `EXT-${i}`,
    components: [{ id: `0000000c-0000-4000-8000-${String(i).padStart(12, "0")}`, type: "COMPUTE" as const }],
  }));

function input(overrides: { name?: string; racks?: number[]; secret?: string } = {}): CreateRunInput {
  const auth: FirmwareAuthentication | undefined =
    overrides.secret === undefined ? undefined : { kind: "shared", secret: overrides.secret };
  return {
    name: overrides.name ?? "rollout",
    description: "",
    configuration: {
      selector: { kind: "percentage", percentage: 100, seed: "" },
      options: {
        maxConcurrentTargets: 2,
        safetyPolicy: { gates: [{ kind: "failureCount", scope: "UNKNOWN", thresholdCount: 1 }] },
      },
      operation: {
        upgradeFirmware: {
          description: "",
          subTargets: [],
          overrideReadinessCheck: false,
          overrideVersionCheck: false,
          targetVersion: "2.0.0",
          targetSpec: {
            kind: "racks",
            racks: (overrides.racks ?? [1, 2, 3]).map((i) => ({
              ref: { by: "id", id: rackId(i) },
              componentTypes: [],
            })),
          },
          ...(auth === undefined ? {} : { authentication: auth }),
        },
      },
    },
  };
}

/** The part of RunStore a create uses, in memory; `onCreate` may answer instead of the store. */
function runStore(onCreate?: (run: Run) => CreateRunOutcome | undefined) {
  const runs = new Map<string, { run: Run; targets: Target[] }>();
  const requests = new Map<string, ClientRequestRecord>();
  const calls: string[] = [];
  const unexpected = (name: string) => () => Promise.reject(new Error(`RunStore.${name} was not expected`));
  const store = {
    createRun: async (run: Run, targets: Target[], options: CreateRunOptions = {}) => {
      calls.push("createRun");
      const answer = onCreate?.(run);
      if (answer !== undefined) return answer;
      if (options.mayCommit?.() === false) return { outcome: "abandoned" as const };
      const request = options.clientRequest;
      if (request !== undefined) {
        const known = requests.get(request.id);
        if (known !== undefined && known.expiresAt > run.createdAt)
          return { outcome: "request-id-taken" as const };
        const { id: _id, ...remembered } = request;
        requests.set(request.id, { runId: run.id, ...remembered });
      }
      runs.set(run.id, { run, targets });
      return { outcome: "created" as const };
    },
    getClientRequest: async (id: string, now: number) => {
      calls.push("getClientRequest");
      const record = requests.get(id);
      return record !== undefined && record.expiresAt > now ? record : undefined;
    },
    getRunSecrets: async (runId: string) => {
      calls.push("getRunSecrets");
      return runs.get(runId)?.run.config.operation.firmware.authentication;
    },
    getRun: unexpected("getRun"),
    listTargets: unexpected("listTargets"),
  } as unknown as RunStore;
  return { store, created: runs, requests, calls };
}

/** The local stack's request MAC, under a fixed test key. */
const MAC_KEY = Buffer.alloc(32, 7);

function service(
  racks = fleet(10),
  onCreate?: (run: Run) => CreateRunOutcome | undefined,
  requestMac: RequestMac | null = new LocalRequestMac(MAC_KEY),
) {
  let n = 0;
  const inventory = memoryInventory(racks);
  const fake = runStore(onCreate);
  const runsService = createRunService({
    images: everyImage,
    runs: fake.store,
    inventory,
    clock: clockOf(() => NOW),
    newId: () => `00000000-0000-4000-9000-${String(++n).padStart(12, "0")}`,
    ...(requestMac === null ? {} : { requestMac }),
  });
  return { api: runsService, inventory, ...fake };
}

const REUSED = "client_request_id: was used for a different request; a retry must resend the same request";

describe("create: reads what its plan needs", () => {
  it.each([100, 1_000, 5_000])(
    "a 10-rack explicit spec over %i racks reads 10 racks, never the fleet",
    async (size) => {
      const s = service(fleet(size));
      await s.api.createRun(input({ racks: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] }));
      expect(s.inventory.reads).toEqual({ getRacksByIds: 10 });
    },
  );
});

describe("create: the client request id", () => {
  it("the same id with the same request answers the first run's id without planning again", async () => {
    const s = service();
    const first = await s.api.createRun(input(), { clientRequestId: "req-1" });
    s.inventory.resetReads();
    const again = await s.api.createRun(input(), { clientRequestId: "req-1" });
    expect(again).toEqual(first);
    expect(s.created.size).toBe(1);
    expect(s.inventory.reads).toEqual({});
    expect(s.calls).toEqual(["getClientRequest", "createRun", "getClientRequest"]);
  });

  it("the same id with another request is InvalidArgument naming the field; nothing is created", async () => {
    const s = service();
    await s.api.createRun(input(), { clientRequestId: "req-1" });
    await expect(
      s.api.createRun(input({ name: "other" }), { clientRequestId: "req-1" }),
    ).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: REUSED,
    });
    await expect(s.api.createRun(input({ racks: [3, 2, 1] }), { clientRequestId: "req-1" })).rejects.toThrow(
      REUSED,
    );
    expect(s.created.size).toBe(1);
  });

  it("credentials are compared by a keyed digest: another secret is another request; nothing is decrypted", async () => {
    const s = service();
    const first = await s.api.createRun(input({ secret: "pw" }), { clientRequestId: "req-c" });
    expect(await s.api.createRun(input({ secret: "pw" }), { clientRequestId: "req-c" })).toEqual(first);
    await expect(s.api.createRun(input({ secret: "other" }), { clientRequestId: "req-c" })).rejects.toThrow(
      REUSED,
    );
    await expect(s.api.createRun(input(), { clientRequestId: "req-c" })).rejects.toThrow(REUSED);
    expect(s.created.size).toBe(1);
    // The retry never reads the first run's credentials (on AWS the front could not decrypt them).
    expect(s.calls).not.toContain("getRunSecrets");
    // What is remembered is the HMAC under the key, not the secret nor an unkeyed hash of it.
    const mac = s.requests.get("req-c")?.credentialsMac;
    const fingerprint = requestFingerprint(input({ secret: "pw" }));
    const message = credentialsMacMessage("req-c", fingerprint, { kind: "shared", secret: "pw" });
    expect(mac).toBe(Buffer.from(await new LocalRequestMac(MAC_KEY).mac(message)).toString("base64"));
    expect(mac).not.toBe(createHash("sha256").update(message).digest("base64"));
    expect(JSON.stringify(s.requests.get("req-c"))).not.toContain("pw");
  });

  it("the same credentials under another id have another digest", async () => {
    const s = service();
    await s.api.createRun(input({ secret: "pw" }), { clientRequestId: "req-a" });
    await s.api.createRun(input({ secret: "pw" }), { clientRequestId: "req-b" });
    expect(s.requests.get("req-a")?.credentialsMac).not.toBe(s.requests.get("req-b")?.credentialsMac);
  });

  it("without a request digest key, credentials with an id are FAILED_PRECONDITION before anything is read", async () => {
    const s = service(fleet(10), undefined, null);
    await expect(
      s.api.createRun(input({ secret: "pw" }), { clientRequestId: "req-k" }),
    ).rejects.toMatchObject({
      code: "FAILED_PRECONDITION",
      message:
        "client_request_id with firmware credentials needs the deployment's request digest key, and none is configured; send the request without client_request_id",
    });
    expect(s.calls).toEqual([]);
    expect(await s.api.createRun(input({ secret: "pw" }))).toHaveProperty("id");
  });

  it("without credentials the first run's secrets are never read", async () => {
    const s = service();
    await s.api.createRun(input(), { clientRequestId: "req-n" });
    await s.api.createRun(input(), { clientRequestId: "req-n" });
    expect(s.calls).not.toContain("getRunSecrets");
    expect(s.requests.get("req-n")).not.toHaveProperty("credentialsMac");
  });

  it("without an id every call creates a run", async () => {
    const s = service();
    const a = await s.api.createRun(input());
    const b = await s.api.createRun(input());
    expect(a).not.toEqual(b);
    expect(s.created.size).toBe(2);
    expect(s.calls).not.toContain("getClientRequest");
  });

  it("a malformed id is InvalidArgument before anything is read", async () => {
    const s = service();
    await expect(s.api.createRun(input(), { clientRequestId: "has space" })).rejects.toThrow(
      "client_request_id: must be 1 to 64 printable ASCII characters without spaces, e.g. a UUID (got 9 characters)",
    );
    expect(s.calls).toEqual([]);
  });

  it("losing the id to a concurrent create of the same request answers that create's run", async () => {
    const winner: ClientRequestRecord = { runId: "winner-run", fingerprint: "", expiresAt: NOW + 1 };
    const s: ReturnType<typeof service> = service(fleet(10), () => {
      // The other create committed between this one's lookup and its commit.
      s.requests.set("req-r", winner);
      return { outcome: "request-id-taken" };
    });
    winner.fingerprint = requestFingerprint(input());
    expect(await s.api.createRun(input(), { clientRequestId: "req-r" })).toEqual({ id: "winner-run" });
    expect(s.created.size).toBe(0);
  });

  it("…and if that record expired meanwhile, UNAVAILABLE: the call may be retried", async () => {
    const s = service(fleet(10), () => ({ outcome: "request-id-taken" }));
    await expect(s.api.createRun(input(), { clientRequestId: "req-x" })).rejects.toMatchObject({
      code: "UNAVAILABLE",
      message: "client_request_id changed hands while the run was created; retry the call",
    });
  });

  it("PlanOperationRun refuses a reused id like create, and otherwise plans as usual", async () => {
    const s = service();
    await s.api.createRun(input(), { clientRequestId: "req-p" });
    await expect(s.api.planRun(input({ name: "other" }), { clientRequestId: "req-p" })).rejects.toThrow(
      REUSED,
    );
    expect((await s.api.planRun(input(), { clientRequestId: "req-p" })).plan.targets).toHaveLength(3);
    expect((await s.api.planRun(input(), { clientRequestId: "req-unused" })).plan.targets).toHaveLength(3);
    expect(s.created.size).toBe(1);
  });
});

describe("create: a caller that is gone gets nothing written", () => {
  it("gone once planned: DEADLINE_EXCEEDED, the store is never asked to create", async () => {
    const s = service();
    await expect(s.api.createRun(input(), { abandoned: () => true })).rejects.toMatchObject({
      code: "DEADLINE_EXCEEDED",
      message: "the call's deadline passed before the run was committed; nothing was created",
    });
    expect(s.calls).toEqual([]);
  });

  it("gone by the commit: the store abandons, DEADLINE_EXCEEDED, and the id stays free for the retry", async () => {
    const s = service();
    let checks = 0;
    // Still there after planning, gone when the store asks right before its commit.
    const abandoned = () => ++checks > 1;
    await expect(s.api.createRun(input(), { clientRequestId: "req-d", abandoned })).rejects.toMatchObject({
      code: "DEADLINE_EXCEEDED",
    });
    // After planning (still there), by the store before its commit (gone), and to say why.
    expect(checks).toBe(3);
    expect(s.created.size).toBe(0);
    const retried = await s.api.createRun(input(), { clientRequestId: "req-d" });
    expect(s.created.has(retried.id)).toBe(true);
  });
});

describe("create: too little of the deadline left to commit → UNAVAILABLE, nothing written", () => {
  it("under the reserve at the start: not started", async () => {
    const s = service();
    await expect(s.api.createRun(input(), { deadline: NOW + 249 })).rejects.toMatchObject({
      code: "UNAVAILABLE",
      message:
        "too little of the call's deadline is left to create the run (creates need 250 ms now); nothing was created, retry",
    });
    expect(s.calls).toEqual([]);
  });

  it("enough at the start, too little by the commit: the store abandons, UNAVAILABLE", async () => {
    let now = NOW;
    const fake = runStore();
    const api = createRunService({
      images: everyImage,
      runs: fake.store,
      inventory: memoryInventory(fleet(10)),
      // Planning takes 800 ms of the 1 s deadline.
      clock: clockOf(() => now),
      newId: randomish(),
      commitReserve: { reserveMs: () => 250, observe: () => {} },
    });
    const planning = memoryInventory(fleet(10));
    const slowInventory = {
      ...planning,
      getRacksByIds: async (ids: string[]) => {
        now += 800;
        return planning.getRacksByIds(ids);
      },
    };
    const slow = createRunService({
      images: everyImage,
      runs: fake.store,
      inventory: slowInventory,
      clock: clockOf(() => now),
      newId: randomish(),
      commitReserve: { reserveMs: () => 250, observe: () => {} },
    });
    await expect(slow.createRun(input(), { deadline: NOW + 1_000 })).rejects.toMatchObject({
      code: "UNAVAILABLE",
      message:
        "too little of the call's deadline is left to commit the run (creates need 250 ms now); nothing was created, retry",
    });
    expect(fake.created.size).toBe(0);
    expect(await api.createRun(input(), { deadline: now + 1_000 })).toMatchObject({ id: expect.any(String) });
  });

  it("the reserve follows the store: 1.5 × the slowest of the last 20 freezes, at least 250 ms", () => {
    const reserve = createCommitReserve();
    expect(reserve.reserveMs()).toBe(MIN_COMMIT_RESERVE_MS);
    reserve.observe(40);
    expect(reserve.reserveMs()).toBe(250);
    reserve.observe(2_000);
    expect(reserve.reserveMs()).toBe(3_000);
    for (let i = 0; i < 20; i++) reserve.observe(100);
    expect(reserve.reserveMs()).toBe(250);
  });
});

function randomish() {
  let n = 0;
  return () => `00000000-0000-4000-a000-${String(++n).padStart(12, "0")}`;
}
