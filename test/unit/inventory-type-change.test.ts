/**
 * ImportInventory and a component's type: a component already in the inventory keeps its type
 * unless the import asks for the change explicitly (its next flash would get another type's image);
 * with the flag, the change is made and logged with who made it. Through the composed FlowApi on
 * the in-memory inventory.
 */
import { describe, expect, it } from "vitest";
import type { Actor } from "../../src/domain/actor.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import { composeFlowApi } from "../../src/service/flow-api.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import { MemoryInventoryStore } from "../support/memory-stores.js";

const RACK = uuid(1, "aaaa0000");
const C0 = uuid(1, "cccc0000");
const C1 = uuid(2, "cccc0000");
const ADMIN: Actor = {
  name: "admin-1",
  source: "CLIENT_CERTIFICATE",
  authenticated: true,
  subjectAltNames: [],
};

const rack = (types: ["COMPUTE" | "NVSWITCH", "COMPUTE" | "NVSWITCH"]): InventoryRack => ({
  id: RACK,
  name: "r1",
  components: [
    { id: C0, type: types[0] },
    { id: C1, type: types[1] },
  ],
});

function world() {
  const inventory = new MemoryInventoryStore([rack(["COMPUTE", "NVSWITCH"])]);
  const lines: string[] = [];
  const api = composeFlowApi({
    inventory,
    logger: { info: (message, fields) => lines.push(`${message} ${JSON.stringify(fields)}`) },
    buildInfo: { version: "t", buildTime: "", gitCommit: "" },
  });
  const stored = async () => (await inventory.getRacksByIds([RACK]))[0]?.components.map((c) => c.type);
  return { api, lines, stored };
}

describe("ImportInventory: a known component's type", () => {
  it("a change is refused without the flag, naming each component and where it is; nothing is written", async () => {
    const w = world();
    await expect(
      w.api.importInventory([rack(["NVSWITCH", "COMPUTE"])], [], { actor: ADMIN }),
    ).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      violations: [
        {
          field: "racks[0].components[0].type",
          rule: `component ${C0} is COMPUTE; importing it as NVSWITCH would flash it another type's image (set allow_component_type_change to change its type)`,
        },
        {
          field: "racks[0].components[1].type",
          rule: `component ${C1} is NVSWITCH; importing it as COMPUTE would flash it another type's image (set allow_component_type_change to change its type)`,
        },
      ],
    });
    expect(await w.stored()).toEqual(["COMPUTE", "NVSWITCH"]);
    expect(w.lines).toEqual([]);
  });

  it("the same types again, or new components, need no flag", async () => {
    const w = world();
    await expect(w.api.importInventory([rack(["COMPUTE", "NVSWITCH"])])).resolves.toMatchObject({
      components: 2,
    });
    expect(w.lines).toEqual([]);
  });

  it("with allow_component_type_change the change is written and logged with who made it", async () => {
    const w = world();
    await w.api.importInventory([rack(["COMPUTE", "COMPUTE"])], [], {
      allowComponentTypeChange: true,
      actor: ADMIN,
    });
    expect(await w.stored()).toEqual(["COMPUTE", "COMPUTE"]);
    expect(w.lines).toEqual([
      `component type changed by inventory import ${JSON.stringify({ actor: "admin-1", authenticated: true, componentId: C1, from: "NVSWITCH", to: "COMPUTE" })}`,
    ]);
  });
});
