/**
 * An input file a person wrote (the inventory file, the local stack's fleet file): parsed as JSON
 * and read against rules, every problem naming the JSON path and the rule it breaks.
 */
import { COMPONENT_TYPES, type ComponentType } from "./model.js";
import { isNilUuid, isUuid } from "./uuid.js";

export interface FileProblem {
  /** JSON path: `racks[3].components[0].type`; `(root)` for the whole document. */
  path: string;
  rule: string;
}

/** An input file that cannot be used. Stable `name`s of its kinds: InventoryFileError, FleetFileError. */
export class InputFileError extends Error {
  constructor(
    readonly file: string,
    readonly problems: readonly FileProblem[],
  ) {
    super(formatProblems(file, problems));
    this.name = "InputFileError";
  }
}

const MAX_LISTED = 20;

function formatProblems(file: string, problems: readonly FileProblem[]): string {
  const lines = problems.slice(0, MAX_LISTED).map((p) => `${file}: ${p.path}: ${p.rule}`);
  if (problems.length > MAX_LISTED)
    lines.push(`${file}: … and ${problems.length - MAX_LISTED} more problems`);
  return lines.join("\n");
}

/** The problem of a file that could not be read at all (`error`: what reading it threw). */
export function unreadable(error: unknown): FileProblem {
  return { path: "(root)", rule: `cannot be read (${(error as Error).message})` };
}

export function parseJson(text: string): { ok: true; value: unknown } | { ok: false; problem: FileProblem } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, problem: { path: "(root)", rule: `is not valid JSON (${(err as Error).message})` } };
  }
}

function kindOf(x: unknown): string {
  if (x === null) return "null";
  if (Array.isArray(x)) return "array";
  return typeof x;
}

/** Reads values, recording a `path: rule` problem for each one that breaks a rule. */
export class Checker {
  readonly problems: FileProblem[] = [];

  problem(path: string, rule: string): void {
    this.problems.push({ path, rule });
  }

  private wrong(path: string, want: string, got: unknown): undefined {
    this.problem(path, got === undefined ? "missing required field" : `must be ${want} (got ${kindOf(got)})`);
    return undefined;
  }

  /** An object whose keys are all in `allowed` (or any keys when `allowed` is undefined). */
  object(value: unknown, path: string, allowed?: readonly string[]): Record<string, unknown> | undefined {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return this.wrong(path, "an object", value);
    }
    const o = value as Record<string, unknown>;
    if (allowed) {
      for (const key of Object.keys(o)) {
        if (!allowed.includes(key)) {
          const where = path === "(root)" ? key : `${path}.${key}`;
          this.problem(where, `unknown field (allowed: ${allowed.join(", ")})`);
        }
      }
    }
    return o;
  }

  array(value: unknown, path: string): unknown[] | undefined {
    return Array.isArray(value) ? value : this.wrong(path, "an array", value);
  }

  /** A non-empty string with no leading or trailing whitespace. */
  text(value: unknown, path: string): string | undefined {
    if (typeof value !== "string") return this.wrong(path, "a string", value);
    if (value.trim() === "") {
      this.problem(path, "must not be empty");
      return undefined;
    }
    if (value.trim() !== value) {
      this.problem(path, `must not start or end with whitespace (got ${JSON.stringify(value)})`);
      return undefined;
    }
    return value;
  }

  /** A UUID in any case, returned lowercase; the nil UUID is refused. */
  uuid(value: unknown, path: string): string | undefined {
    if (typeof value !== "string") return this.wrong(path, "a UUID string", value);
    if (!isUuid(value)) {
      this.problem(
        path,
        `must be a UUID like 4f6f1a9e-0000-4000-8000-000000000001 (got ${JSON.stringify(value)})`,
      );
      return undefined;
    }
    if (isNilUuid(value)) {
      this.problem(path, "must not be the nil UUID");
      return undefined;
    }
    return value.toLowerCase();
  }

  nonNegativeInteger(value: unknown, path: string): number | undefined {
    if (typeof value !== "number") return this.wrong(path, "a number", value);
    if (!Number.isSafeInteger(value) || value < 0) {
      this.problem(path, `must be a non-negative integer (got ${value})`);
      return undefined;
    }
    return value;
  }

  componentType(value: unknown, path: string): ComponentType | undefined {
    return this.oneOf(value, path, COMPONENT_TYPES);
  }

  oneOf<T extends string>(value: unknown, path: string, allowed: readonly T[]): T | undefined {
    if (typeof value === "string" && (allowed as readonly string[]).includes(value)) return value as T;
    if (value === undefined) return this.wrong(path, "", value);
    this.problem(path, `must be one of ${allowed.join(", ")} (got ${JSON.stringify(value)})`);
    return undefined;
  }
}
