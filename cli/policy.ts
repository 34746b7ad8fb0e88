/**
 * The firmware policy commands (docs/cli.md, docs/firmware-policy.md): `rule …`, `baseline …`,
 * `inventory readiness`, and `inventory drift`, which reads the racks and the baselines and resolves them with the same
 * domain functions the service uses at create (src/domain/firmware-baselines.ts).
 */
import type { Command } from "commander";
import {
  type DriftEntry,
  type FirmwareBaseline,
  firmwareDrift,
  sortBaselines,
} from "../src/domain/firmware-baselines.js";
import type { ComponentReadiness, InventoryComponent, InventoryRack } from "../src/domain/inventory.js";
import type { ComponentType } from "../src/domain/model.js";
import * as pb from "../src/gen/flow/v1/flow.js";
import * as admin from "../src/gen/flowadmin/v1/admin.js";
import type { Action, Context } from "./context.js";
import { EXIT, UsageError } from "./errors.js";
import { componentTypes } from "./names.js";
import { table } from "./output.js";
import { loadRuleFile } from "./rule-file.js";

type Act = <A extends unknown[]>(fn: Action<A>) => (...args: unknown[]) => Promise<void>;

function componentTypeArg(value: string): pb.ComponentType {
  const type = componentTypes.parse(value);
  if (type === undefined) {
    throw new UsageError(
      `component type: expected one of ${componentTypes.names.join(", ")} (got ${JSON.stringify(value)})`,
    );
  }
  return type;
}

export function baselineToProto(b: FirmwareBaseline): admin.FirmwareBaseline {
  return {
    componentType: componentTypes.parse(b.componentType) ?? pb.ComponentType.COMPONENT_TYPE_UNKNOWN,
    model: b.model ?? "",
    vendor: b.vendor ?? "",
    version: b.version,
  };
}

function baselineFromProto(b: admin.FirmwareBaseline): FirmwareBaseline {
  const baseline: FirmwareBaseline = {
    componentType: componentTypes.name(b.componentType) as ComponentType,
    version: b.version,
  };
  if (b.model !== "") baseline.model = b.model;
  if (b.vendor !== "") baseline.vendor = b.vendor;
  return baseline;
}

function baselinesTable(baselines: readonly admin.FirmwareBaseline[]): string {
  if (baselines.length === 0) return "no firmware baselines";
  return table(
    ["TYPE", "MODEL", "VENDOR", "VERSION"],
    baselines.map((b) => [componentTypes.name(b.componentType), b.model || "*", b.vendor || "*", b.version]),
  );
}

function secondsText(s: number): string {
  if (s === 0) return "default";
  return s % 60 === 0 ? `${s / 60}m` : `${s}s`;
}

function stepText(step: admin.RuleStep): string {
  const action = admin
    .ruleActionToJSON(step.action)
    .replace("RULE_ACTION_", "")
    .toLowerCase()
    .replace(/_/g, "-");
  if (step.action === admin.RuleAction.RULE_ACTION_SLEEP) return `sleep ${secondsText(step.sleepSeconds)}`;
  const timeout = step.timeoutSeconds > 0 ? ` (timeout ${secondsText(step.timeoutSeconds)})` : "";
  const retry = step.retry
    ? ` (retry ×${step.retry.maxRetries}, ${secondsText(step.retry.intervalSeconds)} ×${step.retry.backoffRate})`
    : "";
  const check =
    step.externalCheck === undefined || step.externalCheck === ""
      ? ""
      : ` (external check ${step.externalCheck}${step.externalCheckTimeoutSeconds ? `, timeout ${secondsText(step.externalCheckTimeoutSeconds)}` : ""})`;
  const scope = step.acScope === admin.AcCycleScope.AC_CYCLE_SCOPE_RACK ? " (whole rack)" : "";
  return `${action}${scope}${timeout}${retry}${check}`;
}

function ruleText(rule: admin.OperationRule): string {
  const head = `rule ${rule.id?.id} v${rule.version}${rule.builtIn ? " (built in)" : ""}: ${rule.name}`;
  const lines = [head];
  if (rule.description !== "") lines.push(`  ${rule.description}`);
  if (rule.readinessTimeoutSeconds > 0)
    lines.push(`  readiness timeout ${secondsText(rule.readinessTimeoutSeconds)}`);
  lines.push(
    table(
      ["STAGE", "TYPES", "MAX PARALLEL", "STEPS"],
      rule.stages.map((s, i) => [
        `${i + 1} ${s.name}`.trim(),
        s.componentTypes.map((t) => componentTypes.name(t)).join(" "),
        s.maxParallel === 0 ? "default" : String(s.maxParallel),
        s.steps.map(stepText).join(" → "),
      ]),
    ),
  );
  return lines.join("\n");
}

export function registerPolicyCommands(program: Command, act: Act): void {
  const rule = program
    .command("rule")
    .description("operation rules: the step plan a firmware task runs on a rack");

  rule
    .command("create")
    .description(
      "create a rule from a rule file, or with --id a new version of one (docs/cli.md has the format)",
    )
    .requiredOption("-f, --file <path>", "rule file (YAML or JSON)")
    .option("--id <id>", "the rule's id: writes its next version (or its first)")
    .option("--expect-version <n>", "refuse unless the rule is at this version now (0: it must not exist)")
    .action(
      act(async (ctx, o: { file: string; id?: string; expectVersion?: string }) => {
        const fields = await loadRuleFile(o.file);
        const expected = o.expectVersion === undefined ? undefined : Number(o.expectVersion);
        if (expected !== undefined && (!Number.isInteger(expected) || expected < 0)) {
          throw new UsageError(
            `--expect-version: expected a whole number, 0 or more (got ${JSON.stringify(o.expectVersion)})`,
          );
        }
        const created = await ctx.conn().admin.createOperationRule({
          ...fields,
          id: o.id === undefined ? undefined : { id: o.id.trim().toLowerCase() },
          expectedVersion: expected,
        });
        ctx.print({ data: admin.OperationRule.toJSON(created), table: () => ruleText(created) });
        return EXIT.OK;
      }),
    );

  rule
    .command("get")
    .description("show a rule (its latest version, or --version N)")
    .argument("<id>", "rule id")
    .option("--version <n>", "that version")
    .action(
      act(async (ctx, id: string, o: { version?: string }) => {
        const got = await ctx.conn().admin.getOperationRule({
          id: { id: id.trim().toLowerCase() },
          version: o.version === undefined ? undefined : Number(o.version),
        });
        ctx.print({ data: admin.OperationRule.toJSON(got), table: () => ruleText(got) });
        return EXIT.OK;
      }),
    );

  rule
    .command("list")
    .description("the built-in default rule, then the stored rules (latest versions)")
    .action(
      act(async (ctx) => {
        const resp = await ctx.conn().admin.listOperationRules({ pagination: { offset: 0, limit: 1000 } });
        ctx.print({
          data: admin.ListOperationRulesResponse.toJSON(resp),
          table: () =>
            table(
              ["ID", "VERSION", "NAME", "STAGES"],
              resp.rules.map((r) => [
                r.id?.id ?? "",
                String(r.version),
                r.builtIn ? `${r.name} (built in)` : r.name,
                r.stages
                  .map((s) => s.componentTypes.map((t) => componentTypes.name(t)).join("+"))
                  .join(" → "),
              ]),
            ),
        });
        return EXIT.OK;
      }),
    );

  const baseline = program
    .command("baseline")
    .description("firmware baselines: the version each component type (model, vendor) should run");

  baseline
    .command("set")
    .description("add a baseline, or replace the one of the same type, model and vendor")
    .argument("<type>", "component type (COMPUTE, NVSWITCH, POWERSHELF, TORSWITCH, UMS, CDU)")
    .argument("<version>", "the firmware version")
    .option("--model <model>", "only for components of this model")
    .option("--vendor <vendor>", "only for components of this vendor")
    .action(
      act(async (ctx, type: string, version: string, o: { model?: string; vendor?: string }) => {
        const resp = await ctx.conn().admin.setFirmwareBaselines({
          baselines: [
            { componentType: componentTypeArg(type), model: o.model ?? "", vendor: o.vendor ?? "", version },
          ],
        });
        ctx.print({
          data: admin.ListFirmwareBaselinesResponse.toJSON(resp),
          table: () => baselinesTable(resp.baselines),
        });
        return EXIT.OK;
      }),
    );

  baseline
    .command("list")
    .description("list the firmware baselines")
    .action(
      act(async (ctx) => {
        const resp = await ctx.conn().admin.listFirmwareBaselines({});
        ctx.print({
          data: admin.ListFirmwareBaselinesResponse.toJSON(resp),
          table: () => baselinesTable(resp.baselines),
        });
        return EXIT.OK;
      }),
    );

  baseline
    .command("delete")
    .description("remove the baseline of this type (and model, vendor)")
    .argument("<type>", "component type")
    .option("--model <model>", "the baseline's model")
    .option("--vendor <vendor>", "the baseline's vendor")
    .action(
      act(async (ctx, type: string, o: { model?: string; vendor?: string }) => {
        const resp = await ctx.conn().admin.deleteFirmwareBaseline({
          componentType: componentTypeArg(type),
          model: o.model ?? "",
          vendor: o.vendor ?? "",
        });
        ctx.print({
          data: admin.DeleteFirmwareBaselineResponse.toJSON(resp),
          table: () => `deleted\n${baselinesTable(resp.baseline ? [resp.baseline] : [])}`,
        });
        return EXIT.OK;
      }),
    );
}

// ---------------------------------------------------------------------------------------------
// inventory drift

function componentFromProto(c: admin.InventoryComponent): InventoryComponent {
  const component: InventoryComponent = {
    id: c.id?.id ?? "",
    type: componentTypes.name(c.type) as ComponentType,
  };
  if (c.firmwareVersion !== "") component.firmwareVersion = c.firmwareVersion;
  if (c.model !== "") component.model = c.model;
  if (c.vendor !== "") component.vendor = c.vendor;
  return component;
}

/** Every rack, page by page (ListRacks caps a page at 1000). */
async function allRacks(ctx: Context): Promise<InventoryRack[]> {
  const racks: InventoryRack[] = [];
  for (let offset = 0; ; ) {
    const page = await ctx.conn().admin.listRacks({ pagination: { offset, limit: 1000 } });
    for (const r of page.racks) {
      racks.push({ id: r.id?.id ?? "", name: r.name, components: r.components.map(componentFromProto) });
    }
    offset += page.racks.length;
    if (page.racks.length === 0 || offset >= page.total) return racks;
  }
}

/** One row per (rack, type): how many components are off their baseline, from what to what. */
function driftTable(drifted: readonly DriftEntry[]): string {
  const rows = new Map<string, { rack: string; type: string; entries: DriftEntry[] }>();
  for (const d of drifted) {
    const key = `${d.rackId}/${d.type}`;
    const row = rows.get(key) ?? { rack: d.rackName, type: d.type, entries: [] };
    row.entries.push(d);
    rows.set(key, row);
  }
  return table(
    ["RACK", "TYPE", "NOT AT BASELINE", "CURRENT → BASELINE"],
    [...rows.values()].map((r) => {
      const moves = new Map<string, number>();
      for (const e of r.entries) {
        const move = `${e.current ?? "unknown"} → ${e.desired}`;
        moves.set(move, (moves.get(move) ?? 0) + 1);
      }
      return [
        r.rack,
        r.type,
        String(r.entries.length),
        [...moves].map(([m, n]) => (n === 1 ? m : `${m} (×${n})`)).join(", "),
      ];
    }),
  );
}

const READINESS_ARGS: Record<string, admin.ReadinessState> = {
  READY: admin.ReadinessState.READINESS_STATE_READY,
  NOT_READY: admin.ReadinessState.READINESS_STATE_NOT_READY,
  MAINTENANCE: admin.ReadinessState.READINESS_STATE_MAINTENANCE,
};

export function readinessToProto(r: ComponentReadiness | undefined): admin.ComponentReadiness | undefined {
  return r === undefined ? undefined : { state: READINESS_ARGS[r.state]!, reason: r.reason };
}

export function isNotReady(r: admin.ComponentReadiness | undefined): boolean {
  return (
    r !== undefined &&
    r.state !== admin.ReadinessState.READINESS_STATE_READY &&
    r.state !== admin.ReadinessState.READINESS_STATE_UNKNOWN
  );
}

function readinessText(r: admin.ComponentReadiness | undefined): string {
  if (!isNotReady(r)) return "READY";
  const state = admin.readinessStateToJSON(r!.state).replace("READINESS_STATE_", "");
  return `${state}: ${r!.reason}`;
}

export function registerInventoryPolicyCommands(inventory: Command, act: Act): void {
  inventory
    .command("readiness")
    .description("set a component's readiness: ready, not-ready or maintenance (with a reason)")
    .argument("<component-id>", "component UUID")
    .argument("<state>", "ready, not-ready or maintenance")
    .option("--reason <text>", "why (required for not-ready and maintenance)")
    .action(
      act(async (ctx, componentId: string, stateArg: string, o: { reason?: string }) => {
        const state = READINESS_ARGS[stateArg.trim().toUpperCase().replace(/-/g, "_")];
        if (state === undefined) {
          throw new UsageError(
            `state: expected ready, not-ready or maintenance (got ${JSON.stringify(stateArg)})`,
          );
        }
        const component = await ctx.conn().admin.setComponentReadiness({
          componentId: { id: componentId.trim().toLowerCase() },
          readiness: { state, reason: o.reason ?? "" },
        });
        ctx.print({
          data: admin.InventoryComponent.toJSON(component),
          table: () =>
            `component ${component.id?.id} (${componentTypes.name(component.type)}): ${readinessText(component.readiness)}`,
        });
        return EXIT.OK;
      }),
    );

  inventory
    .command("drift")
    .description("components not at their firmware baseline, per rack and type")
    .option("--components", "one line per component instead of per rack and type")
    .action(
      act(async (ctx, o: { components?: boolean }) => {
        const [racks, listed] = await Promise.all([
          allRacks(ctx),
          ctx.conn().admin.listFirmwareBaselines({}),
        ]);
        const baselines = sortBaselines(listed.baselines.map(baselineFromProto));
        const drift = firmwareDrift(racks, baselines);
        const uncoveredTypes = [...new Set(drift.uncovered.map((u) => u.type))];
        ctx.print({
          data: drift,
          table: () => {
            const lines: string[] = [];
            if (drift.drifted.length === 0) lines.push("every component with a baseline is at it");
            else if (o.components === true) {
              lines.push(
                table(
                  ["RACK", "TYPE", "COMPONENT", "MODEL", "VENDOR", "CURRENT", "BASELINE"],
                  drift.drifted.map((d) => [
                    d.rackName,
                    d.type,
                    d.componentId,
                    d.model ?? "",
                    d.vendor ?? "",
                    d.current ?? "unknown",
                    d.desired ?? "",
                  ]),
                ),
              );
            } else lines.push(driftTable(drift.drifted));
            lines.push(
              "",
              `${drift.drifted.length} components not at baseline, ${drift.atBaseline} at baseline` +
                (drift.uncovered.length > 0
                  ? `, ${drift.uncovered.length} without a baseline (${uncoveredTypes.join(", ")})`
                  : ""),
            );
            return lines.join("\n");
          },
        });
        return EXIT.OK;
      }),
    );
}

const SOURCES: Record<number, string> = {
  [pb.OperationRunActorSource.OPERATION_RUN_ACTOR_SOURCE_CLIENT_CERTIFICATE]:
    "client certificate the service verified (mutual TLS)",
  [pb.OperationRunActorSource.OPERATION_RUN_ACTOR_SOURCE_LOAD_BALANCER_CERTIFICATE]:
    "client certificate the load balancer verified",
  [pb.OperationRunActorSource.OPERATION_RUN_ACTOR_SOURCE_DECLARED]: "declared name, NOT verified",
  [pb.OperationRunActorSource.OPERATION_RUN_ACTOR_SOURCE_ANONYMOUS]:
    "nothing: no certificate, no declared name",
};

/**
 * `flowctl whoami`:
 *   identity:  alice (client certificate the service verified (mutual TLS))
 *   SANs:      URI:spiffe://example.org/ops/alice
 *   issuer:    CN=Ops CA, O=Example
 *   policy:    enforced
 *   grant:     operator (read, operate) on datacenters dc1; rows A, B
 */
export function whoAmITable(me: pb.WhoAmIResponse): string {
  const actor = me.actor;
  const lines = [`identity:  ${actor?.name || "(none)"} (${SOURCES[actor?.source ?? 0] ?? "unknown"})`];
  if (actor !== undefined && actor.subjectAltNames.length > 0) {
    lines.push(`SANs:      ${actor.subjectAltNames.join(", ")}`);
  }
  if (actor?.issuer) lines.push(`issuer:    ${actor.issuer}`);
  if (actor?.declaredName) lines.push(`declared:  ${actor.declaredName} (not verified)`);
  if (!me.policyEnforced) {
    lines.push("policy:    none: the service lets every caller make every call");
    return lines.join("\n");
  }
  lines.push("policy:    enforced");
  if (me.grants.length === 0) lines.push("grant:     none: this identity may make no call");
  for (const g of me.grants) {
    const scope = [
      ["datacenters", g.datacenters],
      ["rows", g.rows],
      ["NVLink domains", g.nvlDomains],
      ["racks", g.rackNames],
    ]
      .filter(([, values]) => values!.length > 0)
      .map(([name, values]) => `${name} ${(values as string[]).join(", ")}`)
      .join("; ");
    const from = g.issuers.length > 0 ? ` (certificates from ${g.issuers.join("; ")})` : "";
    lines.push(
      `grant:     ${g.roles.join(", ")} (${g.permissions.join(", ")}) on ${scope || "every rack"}${from}`,
    );
  }
  return lines.join("\n");
}
