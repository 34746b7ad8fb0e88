/**
 * The firmware policy stores against moto: baselines are one item in the Inventory table, every
 * edit conditional on the revision it read, so concurrent edits all land; racks never see it.
 * Readiness is set in place on the component inside its rack's item, next to firmware versions.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DynamoStores } from "../../src/adapters/dynamodb/index.js";
import type { FirmwareBaseline } from "../../src/domain/firmware-baselines.js";
import type { OperationRule } from "../../src/domain/operation-rules.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import { freshStores } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

let drop: () => Promise<void>;
let stores: DynamoStores;

beforeAll(async () => {
  ({ stores, drop } = await freshStores(testEndpoint(), "policy"));
});
afterAll(() => drop());

const COMPUTE: FirmwareBaseline = { componentType: "COMPUTE", version: "2.0.0" };
const GB200: FirmwareBaseline = { componentType: "COMPUTE", model: "GB200", version: "2.1.0" };

describe("firmware policy store: baselines", () => {
  it("starts empty; put adds or replaces by key, list returns them sorted, delete returns the removed one", async () => {
    expect(await stores.policy.listBaselines()).toEqual([]);
    expect(await stores.policy.deleteBaseline({ componentType: "CDU" })).toBeUndefined();
    await stores.policy.putBaselines([GB200, { componentType: "NVSWITCH", version: "4.0" }]);
    await stores.policy.putBaselines([COMPUTE, { ...GB200, version: "2.2.0" }]);
    await stores.policy.putBaselines([]);
    expect(await stores.policy.listBaselines()).toEqual([
      COMPUTE,
      { ...GB200, version: "2.2.0" },
      { componentType: "NVSWITCH", version: "4.0" },
    ]);
    expect(await stores.policy.deleteBaseline({ componentType: "COMPUTE", model: "GB200" })).toEqual({
      ...GB200,
      version: "2.2.0",
    });
    expect(await stores.policy.deleteBaseline({ componentType: "COMPUTE", model: "GB200" })).toBeUndefined();
    expect(await stores.policy.listBaselines()).toEqual([
      COMPUTE,
      { componentType: "NVSWITCH", version: "4.0" },
    ]);
  });

  it("concurrent edits are all kept (each is re-read and re-applied when another won the revision)", async () => {
    const edits = Array.from(
      { length: 8 },
      (_, i): FirmwareBaseline => ({
        componentType: "CDU",
        vendor: `vendor-${i}`,
        version: `1.${i}`,
      }),
    );
    await Promise.all(edits.map((b) => stores.policy.putBaselines([b])));
    const cdu = (await stores.policy.listBaselines()).filter((b) => b.componentType === "CDU");
    expect(cdu.map((b) => b.vendor).sort()).toEqual(edits.map((b) => b.vendor).sort());
  });

  it("lives in the Inventory table without showing up as a rack", async () => {
    await stores.inventory.upsertRacks([{ id: uuid(1, "aaaaaaaa"), name: "r1", components: [] }]);
    expect((await stores.inventory.loadAll()).map((r) => r.name)).toEqual(["r1"]);
  });
});

describe("readiness store", () => {
  const rackId = uuid(2, "aaaaaaaa");
  const [a, b] = [uuid(21, "cccccccc"), uuid(22, "cccccccc")];

  it("sets and clears one component's readiness in place; the rack's notReady lists what is not READY", async () => {
    await stores.inventory.upsertRacks([
      {
        id: rackId,
        name: "r2",
        components: [
          { id: a, type: "COMPUTE", firmwareVersion: "1.0" },
          { id: b, type: "CDU" },
        ],
      },
    ]);
    expect(await stores.readiness.notReady(rackId)).toEqual(new Map());
    const set = await stores.readiness.setReadiness(a, { state: "MAINTENANCE", reason: "PSU swap" });
    expect(set).toEqual({
      rackId,
      component: {
        id: a,
        type: "COMPUTE",
        firmwareVersion: "1.0",
        readiness: { state: "MAINTENANCE", reason: "PSU swap" },
      },
    });
    expect(await stores.readiness.notReady(rackId)).toEqual(
      new Map([[a, { state: "MAINTENANCE", reason: "PSU swap" }]]),
    );
    // The rest of the component, and of the rack, is untouched; a firmware version recorded meanwhile stays.
    const [rack] = await stores.inventory.getRacksByIds([rackId]);
    expect(rack?.components[1]).toEqual({ id: b, type: "CDU" });
    expect((await stores.readiness.setReadiness(a, undefined))?.component).toEqual({
      id: a,
      type: "COMPUTE",
      firmwareVersion: "1.0",
    });
    expect(await stores.readiness.notReady(rackId)).toEqual(new Map());
    expect(await stores.readiness.setReadiness(uuid(99, "cccccccc"), undefined)).toBeUndefined();
  });

  it("follows a component that a re-import moved to another rack; a stale pointer finds nothing", async () => {
    const other = uuid(3, "aaaaaaaa");
    await stores.inventory.upsertRacks([
      { id: rackId, name: "r2", components: [{ id: b, type: "CDU" }] },
      { id: other, name: "r3", components: [{ id: a, type: "COMPUTE" }] },
    ]);
    expect((await stores.readiness.setReadiness(a, { state: "NOT_READY", reason: "burn-in" }))?.rackId).toBe(
      other,
    );
    expect(await stores.readiness.notReady(rackId)).toEqual(new Map());
  });
});

describe("firmware policy store: operation rules", () => {
  const rule = (id: string, version: number, name: string): OperationRule => ({
    id,
    version,
    name,
    description: "",
    stages: [
      {
        name: "all",
        componentTypes: ["COMPUTE"],
        maxParallel: 0,
        steps: [{ action: "UPDATE_FIRMWARE", timeoutSeconds: 0, sleepSeconds: 0 }],
      },
    ],
    readinessTimeoutSeconds: 0,
    createdAt: version,
  });
  const [a, b] = [uuid(1, "eeeeeeee"), uuid(2, "eeeeeeee")];

  it("versions are written once, in order; the head is the latest; every version stays readable", async () => {
    expect(await stores.policy.listRules({ offset: 0, limit: 10 })).toEqual({ rules: [], total: 0 });
    expect(await stores.policy.putRuleVersion(rule(a, 1, "zeta"))).toBe("written");
    expect(await stores.policy.putRuleVersion(rule(a, 1, "zeta again"))).toBe("conflict");
    expect(await stores.policy.putRuleVersion(rule(a, 3, "skips 2"))).toBe("conflict");
    expect(await stores.policy.putRuleVersion(rule(a, 2, "zeta 2"))).toBe("written");
    expect(await stores.policy.putRuleVersion(rule(b, 1, "alpha"))).toBe("written");
    expect(await stores.policy.getRule(a)).toEqual(rule(a, 2, "zeta 2"));
    expect(await stores.policy.getRule(a, 1)).toEqual(rule(a, 1, "zeta"));
    expect(await stores.policy.getRule(a, 7)).toBeUndefined();
    expect(await stores.policy.getRule(uuid(3, "eeeeeeee"))).toBeUndefined();
    // Latest versions by name; paged after sorting.
    expect(await stores.policy.listRules({ offset: 0, limit: 10 })).toEqual({
      rules: [rule(b, 1, "alpha"), rule(a, 2, "zeta 2")],
      total: 2,
    });
    expect(await stores.policy.listRules({ offset: 1, limit: 1 })).toEqual({
      rules: [rule(a, 2, "zeta 2")],
      total: 2,
    });
  });

  it("two writers of the same next version: exactly one wins", async () => {
    const id = uuid(4, "eeeeeeee");
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, (_, i) => stores.policy.putRuleVersion(rule(id, 1, `writer ${i}`))),
    );
    expect(outcomes.filter((o) => o === "written")).toHaveLength(1);
    expect((await stores.policy.getRule(id))?.version).toBe(1);
  });
});
