/**
 * The violation collector of create-time validation (run-config.ts, firmware-template.ts): every
 * check reports and carries on, so a request gets all its problems back at once, each with the
 * field's proto path and the rule.
 */

import type { Scoped } from "./create-run-input.js";
import type { FieldViolation } from "./errors.js";
import { COMPONENT_TYPES, type ComponentType } from "./model.js";
import { isNilUuid, isUuid } from "./uuid.js";

/** Collects violations; every check reports and carries on rather than returning early. */
export class Violations {
  readonly list: FieldViolation[] = [];

  add(field: string, rule: string): void {
    this.list.push({ field, rule });
  }

  /** (ours) The wire's int32 always is whole, but the CLI and tests build inputs by hand. */
  wholeNumber(field: string, value: number): boolean {
    if (Number.isInteger(value)) return true;
    this.add(field, `must be a whole number (got ${value})`);
    return false;
  }

  /** `rule` is reported when `value` is a whole number outside min..max. */
  between(field: string, value: number, min: number, max: number, rule: string): void {
    if (this.wholeNumber(field, value) && (value < min || value > max)) this.add(field, rule);
  }

  /** `rule` is reported when `value` is a whole number <= 0. */
  positive(field: string, value: number, rule: string): void {
    if (this.wholeNumber(field, value) && value <= 0) this.add(field, rule);
  }

  /** A non-nil UUID, lowercased; otherwise reports `rule` and returns undefined. */
  nonNilUuid(field: string, value: string, rule: string): string | undefined {
    if (isUuid(value) && !isNilUuid(value)) return value.toLowerCase();
    this.add(field, rule);
    return undefined;
  }

  /** Keeps the known types; reports `rule(index, type)` for UNKNOWN (and anything else unknown). */
  componentTypes(
    field: string,
    types: readonly Scoped<ComponentType>[],
    rule: (i: number, t: string) => string,
  ): ComponentType[] {
    const known: ComponentType[] = [];
    types.forEach((t, i) => {
      if (isComponentType(t)) known.push(t);
      else this.add(`${field}[${i}]`, rule(i, t));
    });
    return known;
  }
}

export function isComponentType(t: string): t is ComponentType {
  return (COMPONENT_TYPES as readonly string[]).includes(t);
}

/** How Go's `%v` prints the proto enum value in the reference's messages. */
export function protoComponentType(t: string): string {
  return `COMPONENT_TYPE_${t}`;
}
