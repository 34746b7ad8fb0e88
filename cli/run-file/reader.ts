/** Reading, with every problem recorded against its key path. */

import type * as pb from "../../src/gen/flow/v1/flow.js";
import { parseDurationNs } from "../durations.js";
import { componentTypes } from "../names.js";

export interface FileProblem {
  /** Key path in the file: `options.gates[1].scope`; `(root)` for the whole document. */
  path: string;
  rule: string;
}

export type Obj = Record<string, unknown>;

export class Reader {
  readonly problems: FileProblem[] = [];

  /** Records a problem; returns undefined so a reader can `return r.add(...)` in one line. */
  add(path: string, rule: string): undefined {
    this.problems.push({ path: path === "" ? "(root)" : path, rule });
    return undefined;
  }

  /** A mapping whose keys are all in `allowed`; unknown keys are reported and ignored. */
  object(value: unknown, path: string, allowed: readonly string[]): Obj | undefined {
    if (value === null || typeof value !== "object" || Array.isArray(value) || value instanceof Date) {
      this.add(path, `must be a mapping with keys ${allowed.join(", ")} (got ${describe(value)})`);
      return undefined;
    }
    for (const key of Object.keys(value)) {
      if (!allowed.includes(key))
        this.add(join(path, key), `unknown key (expected one of ${allowed.join(", ")})`);
    }
    return value as Obj;
  }

  /** The one key of `oneOf` that `obj` sets, or undefined after reporting none or several. */
  exactlyOne(obj: Obj, path: string, oneOf: readonly string[]): string | undefined {
    const set = oneOf.filter((k) => obj[k] !== undefined);
    if (set.length === 1) return set[0];
    this.add(
      path,
      set.length === 0
        ? `must set one of ${oneOf.join(", ")}`
        : `must set exactly one of ${oneOf.join(", ")} (got ${set.join(" and ")})`,
    );
    return undefined;
  }

  list(value: unknown, path: string, options: { nonEmpty?: boolean } = {}): unknown[] | undefined {
    if (!Array.isArray(value)) {
      this.add(path, `must be a list (got ${describe(value)})`);
      return undefined;
    }
    if (options.nonEmpty === true && value.length === 0) {
      this.add(path, "must not be empty");
      return undefined;
    }
    return value;
  }

  string(value: unknown, path: string, options: { nonEmpty?: boolean } = {}): string | undefined {
    // YAML reads `version: 7.2` as a number; a version is text, so numbers are taken as written.
    if (typeof value === "number" && Number.isFinite(value)) return String(value);
    if (typeof value !== "string") {
      this.add(path, `must be a string (got ${describe(value)})`);
      return undefined;
    }
    if (options.nonEmpty === true && value.trim() === "") {
      this.add(path, "must not be empty");
      return undefined;
    }
    return value;
  }

  positiveInt(value: unknown, path: string): number | undefined {
    if (typeof value === "number" && Number.isInteger(value) && value > 0 && value <= 2_147_483_647)
      return value;
    this.add(path, `must be a positive integer (got ${describe(value)})`);
    return undefined;
  }

  /** `30`, `30%` and `"30 %"` are all 30; whole numbers from 1 to 100. */
  percentage(value: unknown, path: string): number | undefined {
    let n: number | undefined;
    if (typeof value === "number") n = value;
    else if (typeof value === "string") {
      const m = /^\s*(\d+(?:\.\d+)?)\s*%?\s*$/.exec(value);
      if (m !== null) n = Number(m[1]);
    }
    if (n !== undefined && Number.isInteger(n) && n >= 1 && n <= 100) return n;
    this.add(path, `must be a whole percentage from 1 to 100, e.g. 30 or 30% (got ${describe(value)})`);
    return undefined;
  }

  boolean(value: unknown, path: string): boolean | undefined {
    if (typeof value === "boolean") return value;
    this.add(path, `must be true or false (got ${describe(value)})`);
    return undefined;
  }

  /** A positive duration: `30s`, `5m`, `1h30m`, `250ms`. */
  duration(value: unknown, path: string): bigint | undefined {
    const ns = typeof value === "string" ? parseDurationNs(value) : undefined;
    if (ns === undefined) {
      this.add(path, `must be a duration with a unit, e.g. 30s, 5m, 1h30m (got ${describe(value)})`);
      return undefined;
    }
    if (ns <= 0n) {
      this.add(path, `must be longer than zero (got ${describe(value)})`);
      return undefined;
    }
    return ns;
  }

  uuid(value: unknown, path: string): string | undefined {
    if (typeof value === "string" && UUID.test(value) && !/^[0-]+$/.test(value)) return value.toLowerCase();
    this.add(path, `must be a UUID, e.g. 4f6f1a9e-0000-4000-8000-000000000001 (got ${describe(value)})`);
    return undefined;
  }

  componentType(value: unknown, path: string): pb.ComponentType | undefined {
    const type = typeof value === "string" ? componentTypes.parse(value) : undefined;
    if (type === undefined) {
      this.add(path, `must be one of ${componentTypes.names.join(", ")} (got ${describe(value)})`);
    }
    return type;
  }

  timestamp(value: unknown, path: string): Date | undefined {
    if (value instanceof Date && !Number.isNaN(value.getTime())) return value;
    if (typeof value === "string" && RFC3339.test(value.trim())) {
      const d = new Date(value.trim());
      if (!Number.isNaN(d.getTime())) return d;
    }
    this.add(path, `must be an RFC 3339 timestamp, e.g. 2026-11-20T08:00:00Z (got ${describe(value)})`);
    return undefined;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

export function join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

/** How a bad value is quoted in a message: `0`, `"abc"`, `a list`, `nothing`. */
export function describe(value: unknown): string {
  if (value === undefined || value === null) return "nothing";
  if (Array.isArray(value)) return "a list";
  if (value instanceof Date) return value.toISOString();
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") return JSON.stringify(value);
  return String(value);
}
