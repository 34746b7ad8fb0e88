/**
 * The inventory file (`npm start -- --inventory FILE`, `flowctl inventory import -f FILE`; format
 * in docs/local-stack.md): parse, validate, normalize. Its callers read the file. A malformed
 * file is refused with every problem listed, each naming the file, the JSON path and the rule:
 *
 *   inventory.json: racks[3].components[0].type: must be one of COMPUTE, NVSWITCH, POWERSHELF,
 *   TORSWITCH, UMS, CDU (got "GPU")
 *
 * Rules beyond the field types, because the rest of the product relies on them:
 * - ids are UUIDs (any case; stored lowercase), never the nil UUID;
 * - rack ids, rack names and rack external ids are unique (racks are addressed by each);
 * - component ids are unique across the file; (type, externalId) is unique (components are
 *   addressed by that pair);
 * - one NVLink domain id always carries the same name, and one name the same id;
 * - unknown fields are refused, so a typo (`firmwareVerison`) fails loudly instead of vanishing;
 * - firmware baselines (optional `baselines`, src/domain/firmware-baselines.ts): one per
 *   (componentType, model, vendor);
 * - a component's optional `readiness` (src/domain/readiness.ts): NOT_READY and MAINTENANCE need
 *   a reason; READY is the default and is stored as no readiness.
 */
import { type FirmwareBaseline, validateBaselines } from "./firmware-baselines.js";
import { Checker, type FileProblem, InputFileError, parseJson } from "./input-file.js";
import {
  type ComponentReadiness,
  type InventoryComponent,
  type InventoryRack,
  READINESS_STATES,
} from "./inventory.js";
import { checkReadiness } from "./readiness.js";

/** What an inventory file holds: racks and, optionally, firmware baselines. */
export interface InventoryDocument {
  racks: InventoryRack[];
  baselines: FirmwareBaseline[];
}

export class InventoryFileError extends InputFileError {
  constructor(file: string, problems: readonly FileProblem[]) {
    super(file, problems);
    this.name = "InventoryFileError";
  }
}

/** Parses the file's text; `file` is only used in messages. Throws InventoryFileError. */
export function parseInventory(text: string, file: string): InventoryRack[] {
  return parseInventoryDocument(text, file).racks;
}

/** The racks and the baselines of the file's text. Throws InventoryFileError. */
export function parseInventoryDocument(text: string, file: string): InventoryDocument {
  const parsed = parseJson(text);
  if (!parsed.ok) throw new InventoryFileError(file, [parsed.problem]);
  const result = validateInventory(parsed.value);
  if (!result.ok) throw new InventoryFileError(file, result.problems);
  return { racks: result.racks, baselines: result.baselines };
}

/** The file as the local stack would write it (e.g. the generated demo fleet, for editing). */
export function serializeInventory(
  racks: readonly InventoryRack[],
  baselines: readonly FirmwareBaseline[] = [],
): string {
  return `${JSON.stringify(baselines.length === 0 ? { racks } : { racks, baselines }, null, 2)}\n`;
}

export function validateInventory(
  value: unknown,
):
  | { ok: true; racks: InventoryRack[]; baselines: FirmwareBaseline[] }
  | { ok: false; problems: FileProblem[] } {
  const c = new Checker();
  const root = c.object(value, "(root)", ["racks", "baselines"]);
  const racksRaw = root && c.array(root.racks, "racks");
  const racks: InventoryRack[] = [];
  racksRaw?.forEach((raw, i) => {
    const rack = readRack(c, raw, `racks[${i}]`);
    if (rack) racks.push(rack);
  });
  const baselines = root?.baselines === undefined ? [] : readBaselines(c, root.baselines);
  if (c.problems.length === 0) checkUniqueness(c, racks);
  return c.problems.length > 0 ? { ok: false, problems: c.problems } : { ok: true, racks, baselines };
}

const RACK_FIELDS = ["id", "name", "externalId", "nvlDomain", "location", "components"];
const COMPONENT_FIELDS = ["id", "type", "externalId", "firmwareVersion", "model", "vendor", "readiness"];
const BASELINE_FIELDS = ["componentType", "model", "vendor", "version"];

/** `baselines[i]`: the Checker reads the shape, the domain's rules the rest (duplicates, lengths). */
function readBaselines(c: Checker, raw: unknown): FirmwareBaseline[] {
  const list = c.array(raw, "baselines");
  if (list === undefined) return [];
  const inputs = list.flatMap((entry, i) => {
    const at = `baselines[${i}]`;
    const o = c.object(entry, at, BASELINE_FIELDS);
    if (!o) return [];
    const componentType = c.componentType(o.componentType, `${at}.componentType`);
    const version = c.text(o.version, `${at}.version`);
    const model = o.model === undefined ? "" : c.text(o.model, `${at}.model`);
    const vendor = o.vendor === undefined ? "" : c.text(o.vendor, `${at}.vendor`);
    if (componentType === undefined || version === undefined || model === undefined || vendor === undefined)
      return [];
    return [{ componentType, model, vendor, version }];
  });
  const result = validateBaselines(inputs, "baselines");
  if (result.ok) return result.value;
  // The domain's paths are proto-style (`baselines[0].component_type`); the file's are camelCase.
  for (const v of result.violations) c.problem(v.field.replace("component_type", "componentType"), v.rule);
  return [];
}

function readRack(c: Checker, raw: unknown, at: string): InventoryRack | undefined {
  const o = c.object(raw, at, RACK_FIELDS);
  if (!o) return undefined;
  const id = c.uuid(o.id, `${at}.id`);
  const name = c.text(o.name, `${at}.name`);
  const externalId = o.externalId === undefined ? undefined : c.text(o.externalId, `${at}.externalId`);
  let nvlDomain: InventoryRack["nvlDomain"];
  if (o.nvlDomain !== undefined) {
    const d = c.object(o.nvlDomain, `${at}.nvlDomain`, ["id", "name"]);
    const domainId = d && c.uuid(d.id, `${at}.nvlDomain.id`);
    const domainName = d && c.text(d.name, `${at}.nvlDomain.name`);
    if (domainId !== undefined && domainName !== undefined) nvlDomain = { id: domainId, name: domainName };
  }
  let location: InventoryRack["location"];
  if (o.location !== undefined) {
    const l = c.object(o.location, `${at}.location`, ["datacenter", "row", "position"]);
    const datacenter = l && c.text(l.datacenter, `${at}.location.datacenter`);
    const row = l && c.text(l.row, `${at}.location.row`);
    const position = l && c.nonNegativeInteger(l.position, `${at}.location.position`);
    if (datacenter !== undefined && row !== undefined && position !== undefined) {
      location = { datacenter, row, position };
    }
  }
  const componentsRaw = c.array(o.components, `${at}.components`);
  const components: InventoryComponent[] = [];
  componentsRaw?.forEach((rawComponent, j) => {
    const component = readComponent(c, rawComponent, `${at}.components[${j}]`);
    if (component) components.push(component);
  });
  if (id === undefined || name === undefined) return undefined;
  const rack: InventoryRack = { id, name, components };
  if (externalId !== undefined) rack.externalId = externalId;
  if (nvlDomain !== undefined) rack.nvlDomain = nvlDomain;
  if (location !== undefined) rack.location = location;
  return rack;
}

function readComponent(c: Checker, raw: unknown, at: string): InventoryComponent | undefined {
  const o = c.object(raw, at, COMPONENT_FIELDS);
  if (!o) return undefined;
  const id = c.uuid(o.id, `${at}.id`);
  const type = c.componentType(o.type, `${at}.type`);
  const externalId = o.externalId === undefined ? undefined : c.text(o.externalId, `${at}.externalId`);
  const firmwareVersion =
    o.firmwareVersion === undefined ? undefined : c.text(o.firmwareVersion, `${at}.firmwareVersion`);
  const model = o.model === undefined ? undefined : c.text(o.model, `${at}.model`);
  const vendor = o.vendor === undefined ? undefined : c.text(o.vendor, `${at}.vendor`);
  const readiness = o.readiness === undefined ? undefined : readReadiness(c, o.readiness, `${at}.readiness`);
  if (id === undefined || type === undefined) return undefined;
  const component: InventoryComponent = { id, type };
  if (externalId !== undefined) component.externalId = externalId;
  if (firmwareVersion !== undefined) component.firmwareVersion = firmwareVersion;
  if (model !== undefined) component.model = model;
  if (vendor !== undefined) component.vendor = vendor;
  if (readiness !== undefined) component.readiness = readiness;
  return component;
}

/** `{ "state": "MAINTENANCE", "reason": "…" }`; READY is the default and is kept as no readiness. */
function readReadiness(c: Checker, raw: unknown, at: string): ComponentReadiness | undefined {
  const o = c.object(raw, at, ["state", "reason"]);
  const state = o && c.oneOf(o.state, `${at}.state`, READINESS_STATES);
  const reason = o?.reason === undefined ? "" : c.text(o.reason, `${at}.reason`);
  if (state === undefined || reason === undefined) return undefined;
  const checked = checkReadiness(state, reason, at);
  if (checked.ok) return checked.readiness;
  for (const v of checked.violations) c.problem(v.field, v.rule);
  return undefined;
}

/** Runs only on an otherwise valid file, so every index below matches the input. */
function checkUniqueness(c: Checker, racks: readonly InventoryRack[]): void {
  const firstSeen = new Map<string, string>();
  const unique = (kind: string, key: string, path: string, what: string): void => {
    const k = `${kind}\u0000${key}`;
    const earlier = firstSeen.get(k);
    if (earlier === undefined) firstSeen.set(k, path);
    else c.problem(path, `duplicate ${what} ${JSON.stringify(key)} (first at ${earlier})`);
  };
  const domainNameById = new Map<string, { name: string; path: string }>();
  const domainIdByName = new Map<string, { id: string; path: string }>();
  racks.forEach((rack, i) => {
    const at = `racks[${i}]`;
    unique("rack-id", rack.id, `${at}.id`, "rack id");
    unique("rack-name", rack.name, `${at}.name`, "rack name");
    if (rack.externalId !== undefined)
      unique("rack-ext", rack.externalId, `${at}.externalId`, "rack externalId");
    if (rack.nvlDomain) {
      const { id, name } = rack.nvlDomain;
      const byId = domainNameById.get(id);
      if (byId && byId.name !== name) {
        c.problem(
          `${at}.nvlDomain.name`,
          `domain ${id} is named ${JSON.stringify(byId.name)} at ${byId.path}`,
        );
      } else if (!byId) domainNameById.set(id, { name, path: `${at}.nvlDomain` });
      const byName = domainIdByName.get(name);
      if (byName && byName.id !== id) {
        c.problem(
          `${at}.nvlDomain.id`,
          `domain name ${JSON.stringify(name)} has id ${byName.id} at ${byName.path}`,
        );
      } else if (!byName) domainIdByName.set(name, { id, path: `${at}.nvlDomain` });
    }
    rack.components.forEach((component, j) => {
      const cat = `${at}.components[${j}]`;
      unique("component-id", component.id, `${cat}.id`, "component id");
      if (component.externalId !== undefined) {
        unique(
          `component-ext-${component.type}`,
          component.externalId,
          `${cat}.externalId`,
          `${component.type} externalId`,
        );
      }
    });
  });
}
