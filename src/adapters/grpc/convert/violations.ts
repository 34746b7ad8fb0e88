/**
 * The violations collector of every decoder in this folder, and the helpers they share.
 *
 * The converters of this folder map between the wire (ts-proto messages of src/gen) and the domain
 * (src/domain/model.ts and its neighbours), both ways, one file per concept. Pure functions: no I/O, no clock.
 *
 * Decoding is faithful, not validating: what a client may legally omit is passed on as absent,
 * `unset` or `UNKNOWN`, and the domain's validators decide what that means (an UNKNOWN gate scope
 * becomes CURRENT_PHASE, a missing selector is an error). The converters report only what the
 * domain types cannot even express, i.e. what only the wire can get wrong:
 *
 *   - enum numbers the proto does not define (a newer client, or garbage):
 *       configuration.options.safety_policy.gates[0].failure_rate.scope: unknown enum value 42
 *   - malformed UUIDs where no domain validator looks at the id (task ids, inventory ids);
 *   - component references without an identifier, and UNKNOWN types of external component
 *     references (the domain's ComponentRef has room for neither);
 *   - sizes no real request has (see `LIMITS` in limits.ts);
 *   - durations and timestamps outside the ranges the well-known types define.
 *
 * Every problem is collected with its proto field path, then thrown at once as a `ValidationError`
 * (gRPC InvalidArgument). Where the domain has a validator for the decoded form (list queries, a
 * plain UpgradeFirmware request, run ids) the converter calls it, so the rules and the reference's
 * texts live in one place (src/domain/list-queries.ts, src/domain/run-config.ts); `createRun`
 * validates inside the application, which takes the raw `CreateRunInput`.
 */

import type { Validated } from "../../../domain/errors.js";
import { type FieldViolation, ValidationError } from "../../../domain/errors.js";
import { isNilUuid, normalizeUuid } from "../../../domain/uuid.js";

/** Collects every wire-level problem of one request; `throwIfAny` ends the decode. */
export class Violations {
  readonly list: FieldViolation[] = [];

  add(field: string, rule: string): void {
    this.list.push({ field, rule });
  }

  unknownEnum(field: string, value: number): void {
    this.add(field, `unknown enum value ${value}`);
  }

  maxLength(field: string, value: string, max: number): void {
    if (value.length > max) this.add(field, `must be at most ${max} characters (got ${value.length})`);
  }

  maxEntries(field: string, entries: readonly unknown[], max: number): void {
    if (entries.length > max) this.add(field, `must have at most ${max} entries (got ${entries.length})`);
  }

  /** The canonical lowercase id, or undefined after reporting why `value` is not a usable id. */
  uuid(field: string, value: string): string | undefined {
    const id = normalizeUuid(value);
    if (id === undefined) this.add(field, `must be a UUID (got ${JSON.stringify(value)})`);
    else if (isNilUuid(id)) this.add(field, "must not be the nil UUID");
    else return id;
    return undefined;
  }

  throwIfAny(): void {
    if (this.list.length > 0) throw new ValidationError(this.list);
  }
}

/** `at("", "target_spec")` → `target_spec`; `at("configuration.operation", "target_scope")` → joined. */
export function at(prefix: string, field: string): string {
  return prefix === "" ? field : `${prefix}.${field}`;
}

/** Drops keys whose value is undefined, so optional domain fields are absent rather than undefined. */
export function compact<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) {
    if (value[key] === undefined) delete value[key];
  }
  return value;
}

/** Runs `decode` with a fresh collector and throws every violation it reported, or returns its value. */
export function decoding<T>(decode: (v: Violations) => T): T {
  const v = new Violations();
  const result = decode(v);
  v.throwIfAny();
  return result;
}

/** The domain's verdict, or its violations thrown as one ValidationError. */
export function validated<T>(result: Validated<T>): T {
  if (!result.ok) throw new ValidationError(result.violations);
  return result.value;
}
