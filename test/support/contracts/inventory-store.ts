/**
 * The InventoryStore contract (src/app/ports.ts), run against the in-memory fake and DynamoDB on
 * moto. The suite's racks carry their own ids, names and external ids; loadAll is checked for
 * order and for holding them, since a shared store may hold other racks.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { InventoryStore, ScopeRack } from "../../../src/app/ports.js";
import type { InventoryRack } from "../../../src/domain/inventory.js";
import type { ComponentType } from "../../../src/domain/model.js";
import { uuid } from "../dynamodb-fixtures.js";

const rack = (n: number) => uuid(n, "1ac00000");
const component = (n: number) => uuid(n, "c0c00000");
const domain = uuid(1, "d0000000");

const RACKS: InventoryRack[] = [
  {
    id: rack(2),
    name: "contract-rack-b",
    externalId: "CONTRACT-EXT-B",
    nvlDomain: { id: domain, name: "contract-nvl-1" },
    location: { datacenter: "dc1", row: "A", position: 2 },
    components: [
      { id: component(21), type: "COMPUTE", externalId: "CONTRACT-SN-21", firmwareVersion: "1.0" },
      { id: component(22), type: "NVSWITCH" },
    ],
  },
  {
    id: rack(1),
    name: "contract-rack-a",
    nvlDomain: { id: domain, name: "contract-nvl-1" },
    components: [{ id: component(11), type: "COMPUTE", externalId: "CONTRACT-SN-11" }],
  },
  { id: rack(3), name: "contract-rack-c", externalId: "CONTRACT-EXT-C", components: [] },
];
const [B, A, C] = RACKS as [InventoryRack, InventoryRack, InventoryRack];

export function describeInventoryStoreContract(
  name: string,
  setup: () => Promise<{ inventory: InventoryStore }>,
): void {
  describe(`InventoryStore contract: ${name}`, () => {
    let inventory: InventoryStore;
    const names = (racks: InventoryRack[]) => racks.map((r) => r.name);
    beforeAll(async () => {
      ({ inventory } = await setup());
      await inventory.upsertRacks(RACKS);
      await inventory.upsertRacks(RACKS); // idempotent
    });

    it("loadAll holds every rack field for field, the whole list sorted by id", async () => {
      const all = await inventory.loadAll();
      expect(all.map((r) => r.id)).toEqual([...all.map((r) => r.id)].sort());
      expect(all.filter((r) => RACKS.some((x) => x.id === r.id))).toEqual([A, B, C]);
    });

    it("listRacks: pages of the racks by id, every rack once, and the total", async () => {
      const all = await inventory.loadAll();
      const paged: InventoryRack[] = [];
      for (let offset = 0; offset < all.length + 2; offset += 2) {
        const page = await inventory.listRacks({ offset, limit: 2 });
        expect(page.total).toBe(all.length);
        expect(page.racks.length).toBeLessThanOrEqual(2);
        paged.push(...page.racks);
      }
      expect(paged).toEqual(all);
      expect(await inventory.listRacks({ offset: 1, limit: 0 })).toEqual({ racks: [], total: all.length });
    });

    it("by ids in the order asked, unknown skipped; by names and external ids per value in order", async () => {
      expect(names(await inventory.getRacksByIds([C.id, uuid(9), B.id]))).toEqual([C.name, B.name]);
      expect(names(await inventory.getRacksByNames([A.name, "contract-none"]))).toEqual([A.name]);
      expect(names(await inventory.getRacksByExternalIds(["CONTRACT-EXT-C", "CONTRACT-EXT-B"]))).toEqual([
        C.name,
        B.name,
      ]);
    });

    it("by NVLink domain id or name, racks sorted by id; an unknown name is empty", async () => {
      expect(names(await inventory.getRacksByNvlDomain({ by: "id", id: domain }))).toEqual([A.name, B.name]);
      expect(names(await inventory.getRacksByNvlDomain({ by: "name", name: "contract-nvl-1" }))).toEqual([
        A.name,
        B.name,
      ]);
      expect(await inventory.getRacksByNvlDomain({ by: "name", name: "contract-nvl-9" })).toEqual([]);
    });

    it("by component id (unknown left out) and by component type and external id (the type must match)", async () => {
      const found = await inventory.getRacksByComponentIds([component(22), component(11), uuid(99)]);
      expect([...found].map(([c, r]) => [c, r.name]).sort()).toEqual([
        [component(11), A.name],
        [component(22), B.name],
      ]);
      const names = async (type: ComponentType, externalId: string) =>
        (await inventory.getRacksByComponentExternalId(type, externalId)).map((r) => r.name);
      expect(await names("COMPUTE", "CONTRACT-SN-21")).toEqual([B.name]);
      expect(await names("NVSWITCH", "CONTRACT-SN-21")).toEqual([]);
      expect(await names("COMPUTE", "CONTRACT-SN-99")).toEqual([]);
    });

    it("listScopeRacks: racks in id order with ids, name, external id and component ids by type only; stops at the limit", async () => {
      const ours = (rack: ScopeRack) => RACKS.some((r) => r.id === rack.id);
      const all = await inventory.listScopeRacks(ours, 10);
      expect(all.map((r) => r.id)).toEqual([A.id, B.id, C.id]);
      const narrow = (rack: InventoryRack) => ({
        id: rack.id,
        name: rack.name,
        ...(rack.externalId === undefined ? {} : { externalId: rack.externalId }),
        components: rack.components
          .map((c) => ({ id: c.id, type: c.type }))
          .sort((x, y) => (x.id < y.id ? -1 : 1)),
      });
      const sorted = (rack: ScopeRack) => ({
        ...rack,
        components: [...rack.components].sort((x, y) => (x.id < y.id ? -1 : 1)),
      });
      expect(all.map(sorted)).toEqual([A, B, C].map(narrow));
      expect((await inventory.listScopeRacks(ours, 2)).map((r) => r.id)).toEqual([A.id, B.id]);
      const withCompute = (rack: ScopeRack) =>
        ours(rack) && rack.components.some((c) => c.type === "COMPUTE");
      expect((await inventory.listScopeRacks(withCompute, 1)).length).toBe(1);
    });

    it("a re-import that moves a component answers with its new rack, by id and by external id", async () => {
      const moved: InventoryRack = { ...C, components: A.components };
      await inventory.upsertRacks([moved, { ...A, components: [] }]);
      expect((await inventory.getRacksByComponentIds([component(11)])).get(component(11))?.name).toBe(C.name);
      expect(
        (await inventory.getRacksByComponentExternalId("COMPUTE", "CONTRACT-SN-11")).map((r) => r.name),
      ).toEqual([C.name]);
      await inventory.upsertRacks(RACKS);
    });
  });
}
