/**
 * Settings read from the environment (and, for the local stack, from command-line flags beside
 * it), validated, all problems reported at once. Each setting names its variable, its rule and its
 * default; a reader built from them (`configReader`) knows every name it reads, so the CDK app's
 * function environments can be checked against it (test/unit/infra-env.test.ts).
 *
 *   readDispatchConfig({ FLOW_TABLE_PREFIX: "", AWS_ENDPOINT_URL: "moto" })
 *   → ConfigError: FLOW_TABLE_PREFIX: is required; AWS_ENDPOINT_URL: must be an http:// or
 *     https:// URL (got "moto"); FLOW_CHILD_TASK_STATE_MACHINE_ARN: is required
 *
 * Rules of reading, the same for every deployable:
 * - A variable set to blanks is unset (what `FLOW_X=` in a shell means), so its default applies.
 * - A flag wins over its variable; a flag given is validated even when empty (`--port ""` is an
 *   error, not the default).
 * - A problem names where the value came from: the flag (`--tick: …`) when it came from one, the
 *   variable (`FLOW_TICK: …`) otherwise. A rule echoes the text it refused, except for secrets.
 * - The result is deeply frozen: the core receives plain values that nothing can change later.
 */

export type Source = Readonly<Record<string, string | undefined>>;

/** Every problem of one reading, in the order the settings are declared; `message` joins them. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.join("; "));
    this.name = "ConfigError";
  }
}

/** The value, or what is wrong with the text (the reader puts the variable's or flag's name first). */
export type Checked<T> = { value: T } | { problem: string };
export type Rule<T> = (text: string) => Checked<T>;

export interface Setting<T> {
  /** The environment variable. */
  readonly env: string;
  /** The flag's key in parsed arguments (`data-dir` for `--data-dir`); absent: no flag. */
  readonly flag?: string;
  readonly rule: Rule<T>;
  readonly required: boolean;
  readonly fallback: T;
}

export function required<T>(env: string, rule: Rule<T>): Setting<T> {
  // The fallback of a required setting is never returned: a missing value is a problem instead.
  return { env, rule, required: true, fallback: undefined as T };
}

export function optional<T>(env: string, rule: Rule<T>): Setting<T | undefined> {
  return { env, rule, required: false, fallback: undefined };
}

export function withDefault<T>(env: string, rule: Rule<T>, fallback: T): Setting<T> {
  return { env, rule, required: false, fallback };
}

/** The same setting, also given by `--<flag>`, which wins. */
export function withFlag<T>(flag: string, setting: Setting<T>): Setting<T> {
  return { ...setting, flag };
}

type Settings = Record<string, Setting<unknown>>;
export type ValuesOf<S extends Settings> = { [K in keyof S]: S[K] extends Setting<infer T> ? T : never };

/** Adds a problem that involves more than one setting, e.g. `FLOW_TLS_KEY: is required with FLOW_TLS_CERT`. */
export type Report = (name: string, problem: string) => void;

export interface ConfigReader<C> {
  (env: Source, flags?: Source): Readonly<C>;
  /** Every variable the reader reads. */
  readonly names: readonly string[];
  /** The variables it cannot start without. */
  readonly required: readonly string[];
}

/**
 * A reader: reads every setting, lets `assemble` shape the values and check what involves several
 * of them, then throws one ConfigError with every problem, or returns the frozen configuration.
 */
export function configReader<S extends Settings, C extends object>(
  settings: S,
  assemble: (values: ValuesOf<S>, report: Report) => C,
): ConfigReader<C> {
  const read = (env: Source, flags: Source = {}): Readonly<C> => {
    const problems: string[] = [];
    const values: Record<string, unknown> = {};
    for (const [key, setting] of Object.entries(settings)) {
      const flagText = setting.flag === undefined ? undefined : flags[setting.flag];
      const label = flagText === undefined ? setting.env : `--${setting.flag}`;
      const text = flagText ?? nonBlank(env[setting.env]);
      if (text === undefined) {
        if (setting.required) problems.push(`${label}: is required`);
        values[key] = setting.fallback;
        continue;
      }
      const checked = setting.rule(text.trim());
      if ("problem" in checked) problems.push(`${label}: ${checked.problem}`);
      else values[key] = checked.value;
    }
    const config = assemble(values as ValuesOf<S>, (name, problem) => problems.push(`${name}: ${problem}`));
    if (problems.length > 0) throw new ConfigError(problems);
    return deepFreeze(config);
  };
  const all = Object.values(settings);
  return Object.assign(read, {
    names: Object.freeze(all.map((s) => s.env)),
    required: Object.freeze(all.filter((s) => s.required).map((s) => s.env)),
  });
}

function nonBlank(text: string | undefined): string | undefined {
  return text === undefined || text.trim() === "" ? undefined : text;
}

function deepFreeze<T extends object>(value: T): Readonly<T> {
  for (const inner of Object.values(value)) {
    if (typeof inner === "object" && inner !== null) deepFreeze(inner);
  }
  return Object.freeze(value);
}

// ---- rules every deployable uses

const got = (text: string): string => `(got ${JSON.stringify(text)})`;

/** Any text but an empty one (only a flag can be given empty: a blank variable is unset). */
export const text: Rule<string> = (t) => (t === "" ? { problem: "must not be empty" } : { value: t });

/** A whole number in [min, max], digits only: `1e3` and `0x10` are refused, not read as numbers. */
export function integerFrom(min: number, max: number): Rule<number> {
  return (t) => {
    const n = /^\d+$/.test(t) ? Number(t) : Number.NaN;
    return n >= min && n <= max
      ? { value: n }
      : { problem: `must be an integer from ${min} to ${max} ${got(t)}` };
  };
}

export const port: Rule<number> = integerFrom(0, 65_535);

export const boolean: Rule<boolean> = (t) =>
  t === "true" || t === "false"
    ? { value: t === "true" }
    : { problem: `must be "true" or "false" ${got(t)}` };

export const httpUrl: Rule<string> = (t) => {
  let protocol: string | undefined;
  try {
    protocol = new URL(t).protocol;
  } catch {
    protocol = undefined;
  }
  return protocol === "http:" || protocol === "https:"
    ? { value: t }
    : { problem: `must be an http:// or https:// URL ${got(t)}` };
};

/** `bytes` bytes as hexadecimal; the text is a secret, so it is never echoed. */
export function hexKey(bytes: number): Rule<string> {
  const pattern = new RegExp(`^[0-9a-fA-F]{${bytes * 2}}$`);
  return (t) => (pattern.test(t) ? { value: t } : { problem: `must be ${bytes * 2} hexadecimal digits` });
}

/** Text matching `pattern`, else `must be <what> (got "…")`. */
export function matching(pattern: RegExp, what: string): Rule<string> {
  return (t) => (pattern.test(t) ? { value: t } : { problem: `must be ${what} ${got(t)}` });
}
