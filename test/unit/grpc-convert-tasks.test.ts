/** The gRPC converters: UpgradeFirmware and the inventory. */
import { describe, expect, it } from "vitest";
import { firmwareTemplateFromProto } from "../../src/adapters/grpc/convert/firmware-request.js";
import { LIMITS } from "../../src/adapters/grpc/convert/limits.js";
import { listRunsQueryFromProto } from "../../src/adapters/grpc/convert/list-queries.js";
import {
  inventoryRacksFromProto,
  inventoryRackToProto,
} from "../../src/adapters/grpc/convert/tasks-inventory.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import * as pb from "../../src/gen/flow/v1/flow.js";
import { ImportInventoryRequest } from "../../src/gen/flowadmin/v1/admin.js";
import { A, B, C, odd, thrown } from "../support/grpc-convert.js";

describe("grpc convert: UpgradeFirmware and inventory", () => {
  it("a plain UpgradeFirmware request is decoded; the task service validates it (run-config tests)", () => {
    expect(firmwareTemplateFromProto(pb.UpgradeFirmwareRequest.fromPartial({})).targetSpec).toBeUndefined();
    const template = firmwareTemplateFromProto(
      pb.UpgradeFirmwareRequest.fromPartial({
        targetSpec: {
          targets: {
            $case: "racks",
            value: { targets: [{ identifier: { $case: "id", value: { id: A.toUpperCase() } } }] },
          },
        },
        targetVersion: "3.0",
      }),
    );
    // Ids are passed as sent: validateFirmwareTask lowercases them.
    expect(template).toEqual({
      targetSpec: { kind: "racks", racks: [{ ref: { by: "id", id: A.toUpperCase() }, componentTypes: [] }] },
      targetVersion: "3.0",
      description: "",
      subTargets: [],
      overrideReadinessCheck: false,
      overrideVersionCheck: false,
    });
    expect(
      firmwareTemplateFromProto(
        pb.UpgradeFirmwareRequest.fromPartial({
          targetSpec: { targets: { $case: "racks", value: { targets: [{}] } } },
        }),
      ).targetSpec,
    ).toEqual({ kind: "racks", racks: [{ ref: { by: "unset" }, componentTypes: [] }] });
    // Decoding errors are still the converter's: an enum number the proto does not define.
    expect(
      thrown(() =>
        firmwareTemplateFromProto(
          pb.UpgradeFirmwareRequest.fromPartial({ queueOptions: { conflictStrategy: 42 as never } }),
        ),
      ).message,
    ).toBe("queue_options.conflict_strategy: unknown enum value 42");
  });

  const RACK: InventoryRack = {
    id: A,
    name: "rack-1",
    externalId: "ext-1",
    nvlDomain: { id: B, name: "nvl-1" },
    location: { datacenter: "dc1", row: "R7", position: 4 },
    components: [
      {
        id: C,
        type: "COMPUTE",
        externalId: "node-1",
        firmwareVersion: "1.0",
        model: "GB200",
        vendor: "Acme",
      },
      { id: B, type: "POWERSHELF", readiness: { state: "MAINTENANCE", reason: "PSU swap" } },
    ],
  };

  it("inventory racks survive domain → proto → domain", () => {
    const request = ImportInventoryRequest.decode(
      ImportInventoryRequest.encode({
        racks: [inventoryRackToProto(RACK)],
        baselines: [],
        allowComponentTypeChange: false,
      }).finish(),
    );
    expect(inventoryRacksFromProto(request)).toStrictEqual([RACK]);
    const bare: InventoryRack = { id: B, name: "bare", components: [] };
    expect(
      inventoryRacksFromProto({
        racks: [inventoryRackToProto(bare)],
        baselines: [],
        allowComponentTypeChange: false,
      }),
    ).toStrictEqual([bare]);
  });

  it("inventory rows need ids, names and known component types", () => {
    const err = thrown(() =>
      inventoryRacksFromProto({
        racks: [
          {
            id: undefined,
            name: "",
            externalId: "",
            nvlDomainId: { id: "d" },
            nvlDomainName: "",
            location: undefined,
            components: [
              {
                id: { id: A },
                type: 0,
                externalId: "",
                firmwareVersion: "",
                model: "",
                vendor: "",
                readiness: undefined,
              },
              {
                id: { id: "c" },
                type: odd(12),
                externalId: "",
                firmwareVersion: "",
                model: "",
                vendor: "",
                readiness: { state: 2, reason: "" },
              },
            ],
          },
        ],
        baselines: [],
        allowComponentTypeChange: false,
      }),
    );
    expect(err.message.split("; ")).toEqual([
      "racks[0].name: must not be empty",
      'racks[0].id: must be a UUID (got "")',
      "racks[0].components[0].type: must be a known component type (got COMPONENT_TYPE_UNKNOWN)",
      "racks[0].components[1].type: unknown enum value 12",
      'racks[0].components[1].id: must be a UUID (got "c")',
      "racks[0].components[1].readiness.reason: a NOT_READY component needs a reason",
      'racks[0].nvl_domain_id: must be a UUID (got "d")',
    ]);
  });

  it("every label a request carries is capped: inventory strings, name patterns, sub-target names", () => {
    const long = "x".repeat(LIMITS.label + 1);
    const err = thrown(() =>
      inventoryRacksFromProto(
        ImportInventoryRequest.fromPartial({
          racks: [
            {
              id: { id: A },
              name: long,
              externalId: long,
              nvlDomainName: long,
              location: { datacenter: long, row: long, position: 1 },
              components: [
                {
                  id: { id: A },
                  type: 1,
                  externalId: long,
                  firmwareVersion: long,
                  model: long,
                  vendor: long,
                },
              ],
            },
          ],
        }),
      ),
    );
    const over = `must be at most ${LIMITS.label} characters (got ${long.length})`;
    expect(err.message.split("; ")).toEqual(
      [
        "name",
        "external_id",
        "nvl_domain_name",
        "location.datacenter",
        "location.row",
        "components[0].external_id",
        "components[0].firmware_version",
        "components[0].model",
        "components[0].vendor",
      ].map((f) => `racks[0].${f}: ${over}`),
    );
    // At the cap: accepted.
    const atCap = "x".repeat(LIMITS.label);
    expect(
      inventoryRacksFromProto(
        ImportInventoryRequest.fromPartial({ racks: [{ id: { id: A }, name: atCap, components: [] }] }),
      ),
    ).toEqual([{ id: A, name: atCap, components: [] }]);

    expect(
      thrown(() =>
        listRunsQueryFromProto(
          pb.ListOperationRunsRequest.fromPartial({ filter: { name: { patterns: ["ok", long] } } }),
        ),
      ).message,
    ).toBe(`filter.name.patterns[1]: ${over}`);
    expect(
      thrown(() =>
        firmwareTemplateFromProto(
          pb.UpgradeFirmwareRequest.fromPartial({ subTargets: ["bmc", "b".repeat(LIMITS.subTarget + 1)] }),
        ),
      ).message,
    ).toBe(`sub_targets[1]: must be at most ${LIMITS.subTarget} characters (got ${LIMITS.subTarget + 1})`);
  });
});
