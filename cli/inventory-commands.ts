/** `flowctl inventory …`: import the rack inventory, list racks, and the firmware policy commands. */
import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { unreadable } from "../src/domain/input-file.js";
import type { InventoryRack } from "../src/domain/inventory.js";
import { InventoryFileError, parseInventoryDocument } from "../src/domain/inventory-document.js";
import * as pb from "../src/gen/flow/v1/flow.js";
import * as admin from "../src/gen/flowadmin/v1/admin.js";
import { type Act, nonNegativeInt, pageFooter, pagination, positiveInt, short } from "./command-args.js";
import { EXIT, UsageError } from "./errors.js";
import { componentTypes } from "./names.js";
import { table } from "./output.js";
import { baselineToProto, isNotReady, readinessToProto, registerInventoryPolicyCommands } from "./policy.js";

export function registerInventoryCommands(program: Command, act: Act): void {
  const inventory = program.command("inventory").description("load and list the rack inventory");

  inventory
    .command("import")
    .description("upsert racks and components from an inventory file (the local stack's JSON format)")
    .requiredOption("-f, --file <path>", "inventory JSON file")
    .option(
      "--allow-type-change",
      "let the file change the type of a component already in the inventory (refused otherwise: its next flash would get another type's image)",
    )
    .action(
      act(async (ctx, o: { file: string; allowTypeChange?: boolean }) => {
        let document: ReturnType<typeof parseInventoryDocument>;
        try {
          const text = await readFile(o.file, "utf8").catch((error: unknown) => {
            throw new InventoryFileError(o.file, [unreadable(error)]);
          });
          document = parseInventoryDocument(text, o.file);
        } catch (err) {
          if (err instanceof InventoryFileError) {
            throw new UsageError(`${o.file} is not a valid inventory file:\n${err.message}`);
          }
          throw err;
        }
        const resp = await ctx.conn().admin.importInventory({
          racks: document.racks.map(inventoryRackToProto),
          baselines: document.baselines.map(baselineToProto),
          allowComponentTypeChange: o.allowTypeChange === true,
        });
        const baselines = resp.baselinesWritten > 0 ? ` and ${resp.baselinesWritten} firmware baselines` : "";
        ctx.print({
          data: admin.ImportInventoryResponse.toJSON(resp),
          table: () =>
            `imported ${resp.racksWritten} racks and ${resp.componentsWritten} components${baselines} from ${o.file}`,
        });
        return EXIT.OK;
      }),
    );

  inventory
    .command("list")
    .description("list racks with their components")
    .option("--limit <n>", "page size (service default 100)", positiveInt)
    .option("--offset <n>", "skip this many racks", nonNegativeInt)
    .action(
      act(async (ctx, o: { limit?: number; offset?: number }) => {
        const resp = await ctx.conn().admin.listRacks({ pagination: pagination(o) });
        ctx.print({
          data: admin.ListRacksResponse.toJSON(resp),
          table: () =>
            `${table(
              ["ID", "NAME", "EXTERNAL ID", "NVL DOMAIN", "LOCATION", "COMPONENTS", "NOT READY"],
              resp.racks.map((r) => [
                short(r.id?.id),
                r.name,
                r.externalId,
                r.nvlDomainName,
                r.location === undefined || r.location.datacenter === ""
                  ? ""
                  : `${r.location.datacenter}/${r.location.row}/${r.location.position}`,
                countByType(r.components),
                String(r.components.filter((c) => isNotReady(c.readiness)).length || ""),
              ]),
            )}\n${pageFooter(resp.racks.length, o.offset ?? 0, resp.total, "racks")}`,
        });
        return EXIT.OK;
      }),
    );

  registerInventoryPolicyCommands(inventory, act);
}

function countByType(components: readonly admin.InventoryComponent[]): string {
  const counts = new Map<string, number>();
  for (const c of components) {
    const name = componentTypes.name(c.type);
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return [...counts].map(([t, n]) => `${t}×${n}`).join(" ");
}

function inventoryRackToProto(r: InventoryRack): admin.InventoryRack {
  return {
    id: { id: r.id },
    name: r.name,
    externalId: r.externalId ?? "",
    nvlDomainId: r.nvlDomain === undefined ? undefined : { id: r.nvlDomain.id },
    nvlDomainName: r.nvlDomain?.name ?? "",
    location: r.location,
    components: r.components.map((c) => ({
      id: { id: c.id },
      type: componentTypes.parse(c.type) ?? pb.ComponentType.COMPONENT_TYPE_UNKNOWN,
      externalId: c.externalId ?? "",
      firmwareVersion: c.firmwareVersion ?? "",
      model: c.model ?? "",
      vendor: c.vendor ?? "",
      readiness: readinessToProto(c.readiness),
    })),
  };
}
