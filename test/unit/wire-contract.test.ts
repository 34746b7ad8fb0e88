/**
 * The wire contract (proto/wire-contract.md) checked against the compiled descriptors, field by
 * field (the ts-proto codec against a reflective one: wire-codec.test.ts).
 *
 * Descriptors come from `buf build` run here (test/support/wire-descriptors.ts), so the check sees
 * exactly what codegen sees. The contract is parsed from its bullet lines:
 *
 *   - message **PercentageSelector**: 1 `percentage` int32; 2 `seed` string
 *   - message **ListTasksRequest**: 1 `rack_id` optional UUID; ...
 *   - message **OperationRunSelector**: 1 `percentage` oneof selector PercentageSelector
 *   - enum **TaskStatus**: `TASK_STATUS_UNKNOWN`=0, `TASK_STATUS_PENDING`=1, ...
 *     - nested enum **OperationRunPhysicalLocationOrdering.Strategy**: `STRATEGY_UNKNOWN`=0, ...
 *   | CreateOperationRun | CreateOperationRunRequest | CreateOperationRunResponse |
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type DescField, type FileRegistry, ScalarType } from "@bufbuild/protobuf";
import { beforeAll, describe, expect, it } from "vitest";
import { compiledDescriptors } from "../support/wire-descriptors.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CONTRACT_TEXT = readFileSync(join(ROOT, "proto/wire-contract.md"), "utf8");

// ---------------------------------------------------------------------------------------------
// The contract, parsed

interface ContractField {
  number: number;
  name: string;
  /** A scalar (`int32`), a message or enum name as written (`UUID`, `Strategy`, `google.protobuf.Duration`). */
  type: string;
  /** "" | "optional" | "repeated" | "oneof <name>" */
  label: string;
}

interface Contract {
  messages: Map<string, ContractField[]>;
  /** Keyed by the name as written: `TaskStatus`, `OperationRunPhysicalLocationOrdering.Strategy`. */
  enums: Map<string, { name: string; number: number }[]>;
  rpcs: { name: string; request: string; response: string }[];
}

function parseContract(text: string): Contract {
  const contract: Contract = { messages: new Map(), enums: new Map(), rpcs: [] };
  let inRpcTable = false;
  for (const line of text.split("\n")) {
    if (line.startsWith("## ")) inRpcTable = line.startsWith("## RPCs");
    const message = /^\s*- message \*\*(\w+)\*\*: (.*)$/.exec(line);
    if (message) {
      const [, name, body] = message as unknown as [string, string, string];
      contract.messages.set(name, body.trim() === "(no fields)" ? [] : body.split("; ").map(parseField));
      continue;
    }
    const en = /^\s*- (?:nested )?enum \*\*([\w.]+)\*\*: (.*)$/.exec(line);
    if (en) {
      const [, name, body] = en as unknown as [string, string, string];
      contract.enums.set(
        name,
        body.split(", ").map((v) => {
          const m = /^`(\w+)`=(\d+)$/.exec(v.trim());
          if (!m) throw new Error(`cannot parse enum value ${JSON.stringify(v)} of ${name}`);
          return { name: m[1]!, number: Number(m[2]) };
        }),
      );
      continue;
    }
    const rpc = /^\| (\w+) \| (\w+) \| (\w+) \|$/.exec(line);
    if (inRpcTable && rpc && rpc[1] !== "RPC") {
      contract.rpcs.push({ name: rpc[1]!, request: rpc[2]!, response: rpc[3]! });
    }
  }
  return contract;
}

function parseField(text: string): ContractField {
  const m = /^(\d+) `(\w+)` (?:(optional|repeated|oneof \w+) )?([\w.]+)$/.exec(text.trim());
  if (!m) throw new Error(`cannot parse field ${JSON.stringify(text)}`);
  return { number: Number(m[1]), name: m[2]!, label: m[3] ?? "", type: m[4]! };
}

// ---------------------------------------------------------------------------------------------
// The descriptors, described the same way

const SCALAR_NAMES: Record<ScalarType, string> = {
  [ScalarType.DOUBLE]: "double",
  [ScalarType.FLOAT]: "float",
  [ScalarType.INT64]: "int64",
  [ScalarType.UINT64]: "uint64",
  [ScalarType.INT32]: "int32",
  [ScalarType.FIXED64]: "fixed64",
  [ScalarType.FIXED32]: "fixed32",
  [ScalarType.BOOL]: "bool",
  [ScalarType.STRING]: "string",
  [ScalarType.BYTES]: "bytes",
  [ScalarType.UINT32]: "uint32",
  [ScalarType.SFIXED32]: "sfixed32",
  [ScalarType.SFIXED64]: "sfixed64",
  [ScalarType.SINT32]: "sint32",
  [ScalarType.SINT64]: "sint64",
};
const SCALARS = new Set(Object.values(SCALAR_NAMES));

/** `string`, `enum v1.TaskStatus`, `message v1.UUID`: what the field is on the wire. */
function describeType(f: DescField): string {
  switch (f.fieldKind) {
    case "scalar":
      return SCALAR_NAMES[f.scalar];
    case "enum":
      return `enum ${f.enum.typeName}`;
    case "message":
      return `message ${f.message.typeName}`;
    case "list":
      switch (f.listKind) {
        case "scalar":
          return SCALAR_NAMES[f.scalar];
        case "enum":
          return `enum ${f.enum.typeName}`;
        case "message":
          return `message ${f.message.typeName}`;
      }
      break;
    case "map":
      return "map";
  }
  throw new Error("unreachable field kind");
}

function describeLabel(f: DescField): string {
  if (f.fieldKind === "list") return "repeated";
  if (f.proto.proto3Optional) return "optional";
  if (f.oneof) return `oneof ${f.oneof.name}`;
  return "";
}

/**
 * Resolves a type as the contract writes it, relative to its message and package `v1`, the way
 * protoc resolves names: `Strategy` inside OperationRunPhysicalLocationOrdering is the nested enum.
 */
function expectedType(contract: Contract, message: string, type: string, registry: FileRegistry): string {
  if (SCALARS.has(type)) return type;
  for (const candidate of [`v1.${message}.${type}`, `v1.${type}`, type]) {
    const found = registry.get(candidate);
    if (found?.kind === "enum" || found?.kind === "message") {
      const contractKnowsEnum = contract.enums.has(type) || contract.enums.has(`${message}.${type}`);
      // The contract's own enum list decides the kind, so an enum compiled as a message is caught.
      return `${contractKnowsEnum ? "enum" : "message"} ${candidate}`;
    }
  }
  return `unresolved ${type}`;
}

/** Every difference between the contract and the descriptors, as readable lines; [] = compatible. */
function compare(contract: Contract, registry: FileRegistry): string[] {
  const problems: string[] = [];
  const file = registry.getFile("flow/v1/flow.proto");
  if (file?.proto.package !== "v1") problems.push(`flow.proto package is ${file?.proto.package}, want v1`);
  if (file?.proto.syntax !== "proto3")
    problems.push(`flow.proto syntax is ${file?.proto.syntax}, want proto3`);

  for (const [name, fields] of contract.messages) {
    const desc = registry.getMessage(`v1.${name}`);
    if (!desc) {
      problems.push(`message ${name}: missing`);
      continue;
    }
    for (const want of fields) {
      const got = desc.fields.find((f) => f.number === want.number);
      if (!got) {
        problems.push(`${name}.${want.name} = ${want.number}: missing`);
        continue;
      }
      if (got.name !== want.name)
        problems.push(`${name} field ${want.number}: named ${got.name}, want ${want.name}`);
      const wantType = expectedType(contract, name, want.type, registry);
      if (describeType(got) !== wantType) {
        problems.push(`${name}.${want.name}: type ${describeType(got)}, want ${wantType}`);
      }
      if (describeLabel(got) !== want.label) {
        problems.push(`${name}.${want.name}: label "${describeLabel(got)}", want "${want.label}"`);
      }
    }
    for (const extra of desc.fields.filter((f) => !fields.some((w) => w.number === f.number))) {
      if (extra.number < 100) {
        problems.push(`${name}.${extra.name} = ${extra.number}: not in the contract and numbered below 100`);
      }
    }
  }

  for (const [name, values] of contract.enums) {
    const desc = registry.getEnum(`v1.${name}`);
    if (!desc) {
      problems.push(`enum ${name}: missing`);
      continue;
    }
    for (const want of values) {
      const got = desc.values.find((v) => v.number === want.number);
      if (got?.name !== want.name) {
        problems.push(
          `${name} value ${want.number}: ${got ? `named ${got.name}` : "missing"}, want ${want.name}`,
        );
      }
    }
    for (const extra of desc.values.filter((v) => !values.some((w) => w.number === v.number))) {
      if (extra.number < 100) {
        problems.push(`${name}.${extra.name} = ${extra.number}: not in the contract and numbered below 100`);
      }
    }
  }

  const service = registry.getService("v1.Flow");
  if (!service) problems.push("service v1.Flow: missing");
  for (const rpc of contract.rpcs) {
    const method = service?.methods.find((m) => m.name === rpc.name);
    if (!method) {
      problems.push(`rpc ${rpc.name}: missing`);
      continue;
    }
    const got = `${method.methodKind} ${method.input.typeName} → ${method.output.typeName}`;
    const want = `unary v1.${rpc.request} → v1.${rpc.response}`;
    if (got !== want) problems.push(`rpc ${rpc.name}: ${got}, want ${want}`);
  }
  return problems;
}

let registry: FileRegistry;

beforeAll(() => {
  registry = compiledDescriptors();
});

describe("wire contract: proto/wire-contract.md against the compiled descriptors", () => {
  const contract = parseContract(CONTRACT_TEXT);

  it("parses every message, enum and RPC the contract lists (73 messages, 11 enums, 13 RPCs)", () => {
    expect(contract.messages.size).toBe(73);
    expect(contract.enums.size).toBe(11);
    expect(contract.rpcs.map((r) => r.name)).toEqual([
      "CreateOperationRun",
      "GetOperationRun",
      "ListOperationRuns",
      "ListOperationRunTargets",
      "PauseOperationRun",
      "ResumeOperationRun",
      "AdvanceOperationRunPhase",
      "CancelOperationRun",
      "UpgradeFirmware",
      "GetTasksByIDs",
      "ListTasks",
      "CancelTask",
      "Version",
    ]);
    expect(contract.messages.get("RackTarget")).toEqual([
      { number: 1, name: "id", label: "oneof identifier", type: "UUID" },
      { number: 2, name: "name", label: "oneof identifier", type: "string" },
      { number: 3, name: "component_types", label: "repeated", type: "ComponentType" },
      { number: 4, name: "external_id", label: "oneof identifier", type: "string" },
    ]);
    expect(contract.enums.get("OperationRunPhysicalLocationOrdering.Strategy")).toHaveLength(3);
  });

  it("every listed message, field, enum value and RPC matches; extensions are numbered from 100", () => {
    expect(compare(contract, registry)).toEqual([]);
  });

  it("project extensions present: OperationRunSummary.current_phase_index = 100, STEP_FUNCTIONS = 100, Task.rack_external_id = 130", () => {
    const summary = registry.getMessage("v1.OperationRunSummary")!;
    expect(summary.fields.find((f) => f.name === "current_phase_index")?.number).toBe(100);
    const executor = registry.getEnum("v1.TaskExecutorType")!;
    expect(executor.values.find((v) => v.name === "TASK_EXECUTOR_TYPE_STEP_FUNCTIONS")?.number).toBe(100);
    const task = registry.getMessage("v1.Task")!;
    expect(task.fields.find((f) => f.name === "rack_external_id")).toMatchObject({ number: 130 });
  });

  it("maintenance-window extensions: reason MAINTENANCE_WINDOW = 100, maintenance_windows = 100, next_window_openings = 100", () => {
    const reason = registry.getEnum("v1.OperationRunStatusReason")!;
    expect(
      reason.values.find((v) => v.name === "OPERATION_RUN_STATUS_REASON_MAINTENANCE_WINDOW")?.number,
    ).toBe(100);
    const options = registry.getMessage("v1.OperationRunOptions")!;
    const windows = options.fields.find((f) => f.name === "maintenance_windows");
    expect([windows?.number, windows?.fieldKind, windows?.message?.typeName]).toEqual([
      100,
      "list",
      "v1.MaintenanceWindow",
    ]);
    const window = registry.getMessage("v1.MaintenanceWindow")!;
    expect(window.fields.map((f) => [f.number, f.name])).toEqual([
      [1, "cron"],
      [2, "duration"],
    ]);
    const plan = registry.getMessage("v1.PlanOperationRunResponse")!;
    expect(plan.fields.find((f) => f.name === "next_window_openings")?.number).toBe(100);
  });

  it("run-history extension: ListOperationRunEvents in v1.Flow, its messages new (nothing published changes)", () => {
    const service = registry.getService("v1.Flow")!;
    const rpc = service.methods.find((m) => m.name === "ListOperationRunEvents");
    expect([rpc?.methodKind, rpc?.input.typeName, rpc?.output.typeName]).toEqual([
      "unary",
      "v1.ListOperationRunEventsRequest",
      "v1.ListOperationRunEventsResponse",
    ]);
    const contract = parseContract(CONTRACT_TEXT);
    for (const name of [
      "ListOperationRunEventsRequest",
      "ListOperationRunEventsResponse",
      "OperationRunEvent",
      "OperationRunActor",
    ]) {
      expect(contract.messages.has(name), name).toBe(false);
    }
    const event = registry.getMessage("v1.OperationRunEvent")!;
    // Its own fields; numbers from 100 are extensions of it (each tested with its feature).
    expect(event.fields.filter((f) => f.number < 100).map((f) => [f.number, f.name])).toEqual([
      [1, "id"],
      [2, "operation_run_id"],
      [3, "kind"],
      [4, "time"],
      [5, "state"],
      [6, "message"],
      [7, "phase_index"],
      [8, "total_phases"],
      [9, "stats"],
      [10, "actor"],
      [11, "plan"],
      [12, "gate"],
      [13, "advance"],
      [14, "cancel"],
      [15, "conflict"],
      [16, "window"],
    ]);
    expect(
      registry
        .getEnum("v1.OperationRunEventKind")
        ?.values.map((v) => v.number)
        .filter((n) => n < 100),
    ).toEqual(Array.from({ length: 15 }, (_, i) => i));
  });

  it("retry and rollback extensions: request 101/102, summary 102-105, target 111/112, event kinds and detail 100/101", () => {
    const numbers = (message: string) =>
      registry
        .getMessage(`v1.${message}`)
        ?.fields.filter((f) => f.number >= 100)
        .map((f) => [f.number, f.name]);
    expect(numbers("CreateOperationRunRequest")).toEqual(
      expect.arrayContaining([
        [101, "retry"],
        [102, "rollback"],
      ]),
    );
    expect(numbers("OperationRunSummary")).toEqual(
      expect.arrayContaining([
        [102, "retry_of"],
        [103, "rollback_of"],
        [104, "retried_by"],
        [105, "rolled_back_by"],
      ]),
    );
    expect(numbers("OperationRunTarget")).toEqual(
      expect.arrayContaining([
        [111, "prior_versions"],
        [112, "skipped_components"],
      ]),
    );
    expect(numbers("OperationRunEvent")).toEqual(expect.arrayContaining([[100, "follow_up"]]));
    const kinds = registry.getEnum("v1.OperationRunEventKind")?.values.map((v) => [v.number, v.name]);
    expect(kinds).toEqual(
      expect.arrayContaining([
        [100, "OPERATION_RUN_EVENT_KIND_RETRIED"],
        [101, "OPERATION_RUN_EVENT_KIND_ROLLED_BACK"],
      ]),
    );
  });

  it("two-person extension: ApproveOperationRun in v1.Flow, its messages new, numbers in its own ranges", () => {
    const rpc = registry.getService("v1.Flow")!.methods.find((m) => m.name === "ApproveOperationRun");
    expect([rpc?.methodKind, rpc?.input.typeName, rpc?.output.typeName]).toEqual([
      "unary",
      "v1.ApproveOperationRunRequest",
      "v1.OperationRun",
    ]);
    const contract = parseContract(CONTRACT_TEXT);
    for (const name of ["ApproveOperationRunRequest", "OperationRunApproval", "OperationRunAccessDenial"]) {
      expect(contract.messages.has(name), name).toBe(false);
    }
    expect(registry.getEnum("v1.OperationRunStatusReason")?.values.find((v) => v.number === 110)?.name).toBe(
      "OPERATION_RUN_STATUS_REASON_AWAITING_APPROVAL",
    );
    const event = registry.getMessage("v1.OperationRunEvent")!;
    expect(
      event.fields.filter((f) => f.number >= 120 && f.number < 130).map((f) => [f.number, f.name]),
    ).toEqual([
      [120, "approval"],
      [121, "denial"],
    ]);
    expect(
      registry
        .getEnum("v1.OperationRunEventKind")
        ?.values.filter((v) => v.number >= 120 && v.number < 130)
        .map((v) => v.number),
    ).toEqual([120, 121, 122]);
  });

  it("late-failure extension: ReportTargetFailure in v1.Flow, target fields 120/121, kind and detail 111", () => {
    const rpc = registry.getService("v1.Flow")!.methods.find((m) => m.name === "ReportTargetFailure");
    expect([rpc?.methodKind, rpc?.input.typeName, rpc?.output.typeName]).toEqual([
      "unary",
      "v1.ReportTargetFailureRequest",
      "v1.OperationRun",
    ]);
    const request = registry.getMessage("v1.ReportTargetFailureRequest")!;
    expect(request.fields.map((f) => [f.number, f.name])).toEqual([
      [1, "id"],
      [2, "target_id"],
      [3, "rack_id"],
      [4, "reason"],
    ]);
    const target = registry.getMessage("v1.OperationRunTarget")!;
    expect(target.fields.filter((f) => f.number >= 120).map((f) => [f.number, f.name])).toEqual([
      [120, "failure_reported_by"],
      [121, "failure_reported_at"],
    ]);
    const kinds = registry.getEnum("v1.OperationRunEventKind")!;
    expect(
      kinds.values.find((v) => v.name === "OPERATION_RUN_EVENT_KIND_TARGET_FAILURE_REPORTED")?.number,
    ).toBe(111);
    const event = registry.getMessage("v1.OperationRunEvent")!;
    expect(event.fields.find((f) => f.name === "late_failure")?.number).toBe(111);
  });

  it("soak extension: phase_policy.min_soak = 100, phase_min_soaks = 101, soak_ends_at = 106, SOAK_STARTED = 110", () => {
    const policy = registry.getMessage("v1.OperationRunPhasePolicy")!;
    const field = (name: string) => policy.fields.find((f) => f.name === name);
    expect([field("min_soak")?.number, field("min_soak")?.message?.typeName]).toEqual([
      100,
      "google.protobuf.Duration",
    ]);
    expect([field("phase_min_soaks")?.number, field("phase_min_soaks")?.message?.typeName]).toEqual([
      101,
      "v1.OperationRunPhaseSoaks",
    ]);
    const summary = registry.getMessage("v1.OperationRunSummary")!;
    expect(summary.fields.find((f) => f.name === "soak_ends_at")?.number).toBe(106);
    const kinds = registry.getEnum("v1.OperationRunEventKind")!;
    expect(kinds.values.find((v) => v.name === "OPERATION_RUN_EVENT_KIND_SOAK_STARTED")?.number).toBe(110);
    const event = registry.getMessage("v1.OperationRunEvent")!;
    expect(event.fields.find((f) => f.name === "soak")?.number).toBe(110);
  });

  it("detects a renumbered field, a retyped field, a relabelled field and a missing RPC", () => {
    const tampered = parseContract(
      CONTRACT_TEXT.replace(
        "2 `description` string; 3 `configuration`",
        "4 `description` string; 3 `configuration`",
      )
        .replace("1 `percentage` int32; 2 `seed` string", "1 `percentage` int64; 2 `seed` string")
        .replace("1 `task_ids` repeated UUID\n", "1 `task_ids` UUID\n")
        .replace(
          "| Version | VersionRequest | BuildInfo |",
          "| Version | VersionRequest | BuildInfo |\n| Ping | VersionRequest | BuildInfo |",
        ),
    );
    expect(compare(tampered, registry)).toEqual([
      "CreateOperationRunRequest.description = 4: missing",
      "CreateOperationRunRequest.description = 2: not in the contract and numbered below 100",
      "PercentageSelector.percentage: type int32, want int64",
      'SubmitTaskResponse.task_ids: label "repeated", want ""',
      "rpc Ping: missing",
    ]);
  });

  it("detects a nested enum resolved at the wrong level and a wrong enum value name", () => {
    const tampered = parseContract(
      CONTRACT_TEXT.replace("`STRATEGY_ROW_BY_ROW`=1", "`STRATEGY_ROWS`=1").replace(
        "1 `strategy` Strategy",
        "1 `strategy` ComponentType",
      ),
    );
    expect(compare(tampered, registry)).toEqual([
      "OperationRunPhysicalLocationOrdering.strategy: type enum v1.OperationRunPhysicalLocationOrdering.Strategy, want enum v1.ComponentType",
      "OperationRunPhysicalLocationOrdering.Strategy value 1: named STRATEGY_ROW_BY_ROW, want STRATEGY_ROWS",
    ]);
  });
});
