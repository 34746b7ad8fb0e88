/** validateCreateRun: the rules of the operation, its target spec and its target scope, one case each. */
import { describe, it } from "vitest";
import type { ComponentType } from "../../src/domain/model.js";
import {
  COMPONENT,
  cfg,
  F,
  FILTER,
  fw,
  NIL,
  RUN_A,
  type RuleCase,
  rack,
  rejectsWith,
  SCOPE,
  SPEC,
  scope,
} from "../support/run-config-inputs.js";

const cases: RuleCase[] = [
  // Operation
  [
    "no operation",
    (i) => void delete cfg(i).operation,
    [["configuration.operation", "operation is required"]],
  ],
  [
    "an operation without upgrade_firmware",
    (i) => {
      cfg(i).operation = { targetScope: { excludeOperationRunIds: [] } };
    },
    [["configuration.operation", "operation is required"]],
  ],
  ...["", "  "].map(
    (version): RuleCase => [
      `target_version ${JSON.stringify(version)}`,
      (i) => {
        fw(i).targetVersion = version;
      },
      [
        [
          `${F}.target_version`,
          "must not be empty: omit it to take each component's version from the firmware baselines",
        ],
      ],
    ],
  ),
  ...["../../NVSWITCH/9.9", "2.0/evil", "2.0 beta", ".hidden", "v%2e%2e", "1.0\u001b[2J"].map(
    (version): RuleCase => [
      `target_version ${JSON.stringify(version)}: not a version's characters`,
      (i) => {
        fw(i).targetVersion = version;
      },
      [
        [
          `${F}.target_version`,
          `must be letters, digits, '.', '_', '+' and '-', starting with a letter or digit (got ${JSON.stringify(version)})`,
        ],
      ],
    ],
  ),
  [
    "a target_version of 129 characters",
    (i) => {
      fw(i).targetVersion = "1".repeat(129);
    },
    [[`${F}.target_version`, "must be at most 128 characters (got 129)"]],
  ],
  ...["not-a-uuid", NIL].map(
    (ruleId): RuleCase => [
      `rule_id ${ruleId}`,
      (i) => {
        fw(i).ruleId = ruleId;
      },
      [[`${F}.rule_id`, "must be a valid non-zero UUID"]],
    ],
  ),
  // Target spec
  [
    "a target spec with no kind set",
    (i) => {
      fw(i).targetSpec = { kind: "unset" };
    },
    [[SPEC, "target_spec must have one of racks, nvl_domains, or components set"]],
  ],
  [
    "an empty racks list",
    (i) => {
      fw(i).targetSpec = { kind: "racks", racks: [] };
    },
    [[`${SPEC}.racks.targets`, "racks.targets must have at least one entry"]],
  ],
  [
    "an empty components list",
    (i) => {
      fw(i).targetSpec = { kind: "components", components: [] };
    },
    [[`${SPEC}.components.targets`, "components.targets must have at least one entry"]],
  ],
  [
    "an empty NVLink domains list",
    (i) => {
      fw(i).targetSpec = { kind: "nvlDomains", domains: [] };
    },
    [[`${SPEC}.nvl_domains.targets`, "nvl_domains.targets must have at least one entry"]],
  ],
  [
    "a rack target with no identifier",
    (i) => {
      fw(i).targetSpec = rack({ by: "unset" });
    },
    [[`${SPEC}.racks.targets[0]`, "rack target must have either id, external_id, or name set"]],
  ],
  [
    "an empty rack id",
    (i) => {
      fw(i).targetSpec = rack({ by: "id", id: "" });
    },
    [[`${SPEC}.racks.targets[0].id`, "rack target id must not be empty"]],
  ],
  [
    "a short rack id",
    (i) => {
      fw(i).targetSpec = rack({ by: "id", id: "r1" });
    },
    [[`${SPEC}.racks.targets[0].id`, 'invalid rack uuid "r1": invalid UUID length: 2']],
  ],
  [
    "a 36-character rack id that is not hex",
    (i) => {
      fw(i).targetSpec = rack({ by: "id", id: "zzzzzzzz-0000-4000-8000-000000000001" });
    },
    [
      [
        `${SPEC}.racks.targets[0].id`,
        'invalid rack uuid "zzzzzzzz-0000-4000-8000-000000000001": invalid UUID format',
      ],
    ],
  ],
  [
    "an empty rack name",
    (i) => {
      fw(i).targetSpec = rack({ by: "name", name: "" });
    },
    [[`${SPEC}.racks.targets[0].name`, "rack target name must not be empty"]],
  ],
  [
    "an empty rack external id",
    (i) => {
      fw(i).targetSpec = rack({ by: "externalId", externalId: "" });
    },
    [[`${SPEC}.racks.targets[0].external_id`, "rack target external_id must not be empty"]],
  ],
  [
    "an UNKNOWN component type in a rack target",
    (i) => {
      fw(i).targetSpec = rack({ by: "name", name: "r" }, ["COMPUTE", "UNKNOWN"]);
    },
    [
      [
        `${SPEC}.racks.targets[0].component_types[1]`,
        "unknown component type COMPONENT_TYPE_UNKNOWN in rack target filter",
      ],
    ],
  ],
  [
    "a malformed component id",
    (i) => {
      fw(i).targetSpec = { kind: "components", components: [{ by: "id", id: "c-1" }] };
    },
    [[`${SPEC}.components.targets[0].id`, 'invalid component uuid "c-1": invalid UUID length: 3']],
  ],
  [
    "an empty external component id",
    (i) => {
      fw(i).targetSpec = {
        kind: "components",
        components: [{ by: "external", type: "COMPUTE", externalId: "" }],
      };
    },
    [[`${SPEC}.components.targets[0].external.id`, "external component id must not be empty"]],
  ],
  [
    "a malformed NVLink domain id (length counted in UTF-8 bytes)",
    (i) => {
      fw(i).targetSpec = {
        kind: "nvlDomains",
        domains: [{ ref: { by: "id", id: "é" }, componentTypes: [] }],
      };
    },
    [[`${SPEC}.nvl_domains.targets[0].id`, 'invalid NVLink domain id "é": invalid UUID length: 2']],
  ],
  [
    "an empty NVLink domain name",
    (i) => {
      fw(i).targetSpec = {
        kind: "nvlDomains",
        domains: [{ ref: { by: "name", name: "" }, componentTypes: [] }],
      };
    },
    [[`${SPEC}.nvl_domains.targets[0].name`, "NVLink domain target name must not be empty"]],
  ],
  [
    "an UNKNOWN component type in an NVLink domain target",
    (i) => {
      fw(i).targetSpec = {
        kind: "nvlDomains",
        domains: [{ ref: { by: "name", name: "nvl" }, componentTypes: ["UNKNOWN" as ComponentType] }],
      };
    },
    [
      [
        `${SPEC}.nvl_domains.targets[0].component_types[0]`,
        "unknown component type COMPONENT_TYPE_UNKNOWN in NVLink domain target filter",
      ],
    ],
  ],
  // Target scope
  [
    "malformed and nil excluded run ids",
    (i) => {
      scope(i).excludeOperationRunIds = [RUN_A, "run-7", NIL];
    },
    [
      [
        `${SCOPE}.exclude_operation_run_ids[1]`,
        "target_scope.exclude_operation_run_ids[1] must be a valid UUID",
      ],
      [
        `${SCOPE}.exclude_operation_run_ids[2]`,
        "target_scope.exclude_operation_run_ids[2] must be a valid UUID",
      ],
    ],
  ],
  [
    "a default-scope filter beside a target spec",
    (i) => {
      fw(i).targetSpec = rack({ by: "name", name: "r" });
      scope(i).defaultScopeComponentFilter = { kind: "types", types: ["COMPUTE"] };
    },
    [[FILTER, "target_scope.default_scope_component_filter requires target_spec to be omitted"]],
  ],
  [
    "an empty type filter",
    (i) => {
      scope(i).defaultScopeComponentFilter = { kind: "types", types: [] };
    },
    [[`${FILTER}.types.types`, 'component filter kind "types" requires at least one type']],
  ],
  [
    "an UNKNOWN type in the filter",
    (i) => {
      scope(i).defaultScopeComponentFilter = { kind: "types", types: ["COMPUTE", "UNKNOWN"] };
    },
    [[`${FILTER}.types.types[1]`, "target_scope.default_scope_component_filter.types[1] is unknown"]],
  ],
  [
    "an empty component filter",
    (i) => {
      scope(i).defaultScopeComponentFilter = { kind: "components", components: [] };
    },
    [[`${FILTER}.components.targets`, 'component filter kind "components" requires at least one component']],
  ],
  [
    "an external reference in the component filter",
    (i) => {
      scope(i).defaultScopeComponentFilter = {
        kind: "components",
        components: [
          { by: "id", id: COMPONENT },
          { by: "external", type: "COMPUTE", externalId: "tray-1" },
        ],
      };
    },
    [
      [
        `${FILTER}.components.targets[1]`,
        "target_scope.default_scope_component_filter.components[1] must use component UUID",
      ],
    ],
  ],
  ...["tray-1", NIL].map(
    (id): RuleCase => [
      `component filter id ${id}`,
      (i) => {
        scope(i).defaultScopeComponentFilter = { kind: "components", components: [{ by: "id", id }] };
      },
      [
        [
          `${FILTER}.components.targets[0].id`,
          "target_scope.default_scope_component_filter.components[0] must be a valid UUID",
        ],
      ],
    ],
  ),
];

describe("validateCreateRun: each rule of the operation, with its field path and exact message", () => {
  it.each(cases)("rejects %s", (_, mutate, expected) => rejectsWith(mutate, expected));
});
