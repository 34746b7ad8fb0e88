/** The admin service's firmware policy messages ↔ the domain: baselines, readiness, operation rules. */
import { describe, expect, it } from "vitest";
import {
  baselineKeyFromProto,
  baselinesFromProto,
  baselineToProto,
  setReadinessFromProto,
} from "../../src/adapters/grpc/convert/policy.js";
import { createRuleFromProto, ruleIdFromProto, ruleToProto } from "../../src/adapters/grpc/convert/rules.js";
import { DEFAULT_RULE, DEFAULT_RULE_ID, type OperationRule } from "../../src/domain/operation-rules.js";
import { ComponentType } from "../../src/gen/flow/v1/flow.js";
import * as admin from "../../src/gen/flowadmin/v1/admin.js";

const ID = "aaaaaaaa-0000-4000-8000-000000000001";
const thrown = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error("expected an error");
};

describe("grpc convert: firmware baselines", () => {
  it("round-trip; '' model and vendor mean not narrowed", () => {
    const wire = [
      { componentType: 1, model: "", vendor: "", version: "2.0" },
      { componentType: 1, model: "GB200", vendor: "Acme", version: "2.1" },
    ];
    const domain = baselinesFromProto(wire, "baselines");
    expect(domain).toEqual([
      { componentType: "COMPUTE", version: "2.0" },
      { componentType: "COMPUTE", model: "GB200", vendor: "Acme", version: "2.1" },
    ]);
    expect(domain.map(baselineToProto)).toEqual(wire);
  });

  it("an undefined enum number and the domain's rules are reported together", () => {
    expect(
      thrown(() =>
        baselinesFromProto([{ componentType: 42 as never, model: "", vendor: "", version: "" }], "baselines"),
      ),
    ).toBe("baselines[0].component_type: unknown enum value 42");
    expect(thrown(() => baselineKeyFromProto({ componentType: 0, model: "", vendor: "" }))).toBe(
      "component_type: must be a known component type (got COMPONENT_TYPE_UNKNOWN)",
    );
    expect(baselineKeyFromProto({ componentType: 3, model: "m", vendor: "" })).toEqual({
      componentType: "POWERSHELF",
      model: "m",
    });
  });
});

describe("grpc convert: readiness", () => {
  it("READY (or UNKNOWN, or absent) clears it; the others need a reason", () => {
    expect(setReadinessFromProto({ componentId: { id: ID }, readiness: undefined })).toEqual({
      componentId: ID,
      readiness: undefined,
    });
    expect(
      setReadinessFromProto({ componentId: { id: ID }, readiness: { state: 0, reason: "" } }).readiness,
    ).toBeUndefined();
    expect(
      setReadinessFromProto({
        componentId: { id: ID },
        readiness: { state: admin.ReadinessState.READINESS_STATE_MAINTENANCE, reason: "psu" },
      }),
    ).toEqual({ componentId: ID, readiness: { state: "MAINTENANCE", reason: "psu" } });
    expect(
      thrown(() =>
        setReadinessFromProto({ componentId: { id: "x" }, readiness: { state: 9 as never, reason: "" } }),
      ),
    ).toBe('component_id: must be a UUID (got "x"); readiness.state: unknown enum value 9');
  });
});

describe("grpc convert: operation rules", () => {
  const request: admin.CreateOperationRuleRequest = {
    id: { id: ID.toUpperCase() },
    expectedVersion: 3,
    name: "compute first",
    description: "d",
    readinessTimeoutSeconds: 30,
    stages: [
      {
        name: "compute",
        componentTypes: [ComponentType.COMPONENT_TYPE_COMPUTE],
        maxParallel: 2,
        steps: [
          {
            action: admin.RuleAction.RULE_ACTION_VERIFY_REACHABILITY,
            timeoutSeconds: 10,
            retry: undefined,
            sleepSeconds: 0,
          },
          {
            action: admin.RuleAction.RULE_ACTION_UPDATE_FIRMWARE,
            timeoutSeconds: 0,
            retry: { maxRetries: 1, intervalSeconds: 5, backoffRate: 2 },
            sleepSeconds: 0,
          },
          {
            action: admin.RuleAction.RULE_ACTION_SLEEP,
            timeoutSeconds: 0,
            retry: undefined,
            sleepSeconds: 9,
          },
        ],
      },
    ],
  };

  it("a create request decodes to the validated definition, its id lowercased and its expected version", () => {
    const { definition, id, expectedVersion } = createRuleFromProto(request);
    expect([id, expectedVersion]).toEqual([ID, 3]);
    const rule: OperationRule = { ...definition, id: ID, version: 4, createdAt: 1_800_000_000_000 };
    expect(ruleToProto(rule)).toEqual({
      id: { id: ID },
      version: 4,
      name: "compute first",
      description: "d",
      readinessTimeoutSeconds: 30,
      stages: [{ ...request.stages[0], componentTypes: [1] }],
      createdAt: new Date(1_800_000_000_000),
      builtIn: false,
    });
    expect(createRuleFromProto({ ...request, id: undefined, expectedVersion: undefined })).toEqual({
      definition,
    });
  });

  it("the built-in default says so, and has no creation time", () => {
    const wire = ruleToProto(DEFAULT_RULE);
    expect([wire.id?.id, wire.builtIn, wire.createdAt, wire.stages.length]).toEqual([
      DEFAULT_RULE_ID,
      true,
      undefined,
      6,
    ]);
  });

  it("wire problems and the rule's violations: enum numbers first, then the domain's", () => {
    expect(
      thrown(() =>
        createRuleFromProto({
          ...request,
          id: { id: "nope" },
          stages: [
            {
              ...request.stages[0]!,
              steps: [{ action: 77 as never, timeoutSeconds: 0, retry: undefined, sleepSeconds: 0 }],
            },
          ],
        }),
      ),
    ).toBe('stages[0].steps[0].action: unknown enum value 77; id: must be a UUID (got "nope")');
    expect(thrown(() => createRuleFromProto({ ...request, stages: [] }))).toBe(
      "stages: a rule needs at least one stage",
    );
    expect(ruleIdFromProto({ id: { id: ID }, version: undefined })).toEqual({ id: ID });
    expect(thrown(() => ruleIdFromProto({ id: { id: ID }, version: 0 }))).toBe(
      "version: must be 1 or more (got 0)",
    );
  });
});

describe("grpc convert: an AC_CYCLE step's scope", () => {
  const stepOf = (action: admin.RuleAction, acScope?: admin.AcCycleScope): admin.RuleStep => ({
    action,
    timeoutSeconds: 0,
    retry: undefined,
    sleepSeconds: 0,
    ...(acScope === undefined ? {} : { acScope }),
  });
  const requestWith = (steps: admin.RuleStep[]): admin.CreateOperationRuleRequest => ({
    id: undefined,
    expectedVersion: undefined,
    name: "whole rack",
    description: "",
    readinessTimeoutSeconds: 0,
    stages: [
      { name: "trays", componentTypes: [ComponentType.COMPONENT_TYPE_COMPUTE], maxParallel: 0, steps },
    ],
  });
  const {
    RULE_ACTION_UPDATE_FIRMWARE: UPDATE,
    RULE_ACTION_AC_CYCLE: AC,
    RULE_ACTION_WAIT_BRING_UP: UP,
  } = admin.RuleAction;

  it("RACK round-trips; TRAY and unset are the tray (nothing on the wire back)", () => {
    const rack = createRuleFromProto(
      requestWith([stepOf(UPDATE), stepOf(AC, admin.AcCycleScope.AC_CYCLE_SCOPE_RACK), stepOf(UP)]),
    ).definition;
    expect(rack.stages[0]?.steps[1]?.acScope).toBe("RACK");
    const wire = ruleToProto({ ...rack, id: ID, version: 1, createdAt: 1 });
    expect(wire.stages[0]?.steps.map((s) => s.acScope)).toEqual([
      undefined,
      admin.AcCycleScope.AC_CYCLE_SCOPE_RACK,
      undefined,
    ]);
    const tray = createRuleFromProto(
      requestWith([stepOf(UPDATE), stepOf(AC, admin.AcCycleScope.AC_CYCLE_SCOPE_TRAY), stepOf(UP)]),
    ).definition;
    expect(tray.stages[0]?.steps[1]).toEqual({ action: "AC_CYCLE", timeoutSeconds: 0, sleepSeconds: 0 });
  });

  it("a scope on another action is INVALID_ARGUMENT naming the field; an unknown number is refused too", () => {
    const refused = (steps: admin.RuleStep[]) => {
      try {
        createRuleFromProto(requestWith(steps));
      } catch (e) {
        return [(e as { code?: string }).code, (e as Error).message];
      }
      throw new Error("expected an error");
    };
    expect(refused([stepOf(UPDATE, admin.AcCycleScope.AC_CYCLE_SCOPE_RACK), stepOf(AC), stepOf(UP)])).toEqual(
      [
        "INVALID_ARGUMENT",
        "stages[0].steps[0].ac_scope: only an AC_CYCLE step has a scope (got UPDATE_FIRMWARE)",
      ],
    );
    expect(refused([stepOf(UPDATE), stepOf(AC, 9 as admin.AcCycleScope), stepOf(UP)])).toEqual([
      "INVALID_ARGUMENT",
      "stages[0].steps[1].ac_scope: unknown enum value 9",
    ]);
  });
});
