/**
 * What commands print: human-readable tables by default, or the service's messages as JSON or YAML
 * (`--output json|yaml`: proto3 JSON field names, enum names, RFC 3339 timestamps) for scripts.
 *
 * Nothing the service sends reaches the terminal raw: a run named "\x1b[2J" would clear the screen
 * of whoever lists runs. `terminalSafe` shows every control character (src/domain/text.ts: C0 but
 * tab, DEL, C1) as an escape instead; `table` and `fields` apply it to every cell, `render` to
 * everything a command prints, and the error and watch printers to the service's text they show.
 */
import { createRequire } from "node:module";
import type * as YamlPackage from "yaml";
import { CONTROL_CHARACTERS } from "../src/domain/text.js";

const require = createRequire(import.meta.url);
let yamlPackage: typeof YamlPackage | undefined;

/**
 * The yaml package, loaded when a command first reads or writes YAML (a run or rule file, `-o yaml`,
 * a run's configuration) instead of at every start: its seventy modules are about a tenth of the
 * start of a command that prints a table, or of `--help`.
 */
export function yaml(): typeof YamlPackage {
  yamlPackage ??= require("yaml") as typeof YamlPackage;
  return yamlPackage;
}

export const OUTPUT_FORMATS = ["table", "json", "yaml"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export interface Writer {
  write(text: string): void;
}

/** One command's result: the machine form, and how to show it to a person. */
export interface Result {
  data: unknown;
  table: () => string;
}

export function render(result: Result, format: OutputFormat): string {
  switch (format) {
    case "json":
      return unicodeEscaped(`${JSON.stringify(result.data, null, 2)}\n`);
    case "yaml":
      return unicodeEscaped(yaml().stringify(result.data, { lineWidth: 0 }));
    case "table": {
      const text = terminalSafe(result.table(), "keep-newlines");
      return text.endsWith("\n") || text === "" ? text : `${text}\n`;
    }
  }
}

const NAMED_ESCAPES: Record<string, string> = { "\n": "\\n", "\r": "\\r" };

/**
 * `text` with every control character shown as an escape: `\x1b`, `\x9b`, `\n`. With
 * "keep-newlines", line breaks stay line breaks (for text flowctl laid out itself):
 *
 *   terminalSafe("a\x1b[2Jb\nc")                   → "a\\x1b[2Jb\\nc"
 *   terminalSafe("a\x1b[2Jb\nc", "keep-newlines")  → "a\\x1b[2Jb" + newline + "c"
 */
export function terminalSafe(
  text: string,
  newlines: "escape-newlines" | "keep-newlines" = "escape-newlines",
): string {
  return text.replace(CONTROL_CHARACTERS, (c) => {
    if (c === "\n" && newlines === "keep-newlines") return c;
    return NAMED_ESCAPES[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`;
  });
}

/**
 * JSON and YAML escape C0 controls themselves but pass DEL and C1 through; both only occur inside
 * (double-quoted) strings there, where `\u009b` is the same character, escaped.
 */
function unicodeEscaped(text: string): string {
  return text.replace(/[\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * Columns padded to their widest cell; the last column is not padded, so long messages do not push
 * trailing spaces. `table(["ID", "NAME"], [["1", "a"]])` →
 *
 *   ID  NAME
 *   1   a
 */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const safe = rows.map((r) => r.map((cell) => terminalSafe(cell)));
  const widths = headers.map((h, i) => Math.max(h.length, ...safe.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...safe.map(line)].join("\n");
}

/** `Name:     value` lines, the labels aligned; pairs with an empty value are left out. */
export function fields(pairs: readonly (readonly [string, string])[]): string {
  const shown = pairs.filter(([, v]) => v !== "");
  const width = Math.max(...shown.map(([k]) => k.length)) + 1;
  return shown.map(([k, v]) => `${`${k}:`.padEnd(width)} ${terminalSafe(v)}`).join("\n");
}

/** `2026-11-20 08:00:03Z`: UTC to the second, short enough for a table. */
export function time(d: Date | undefined): string {
  if (d === undefined || Number.isNaN(d.getTime())) return "";
  return `${d.toISOString().slice(0, 19).replace("T", " ")}Z`;
}

export function indent(text: string, by = "  "): string {
  return text
    .split("\n")
    .map((l) => (l === "" ? l : by + l))
    .join("\n");
}

/** YAML for people: lists of plain values on one line (`percentage: [10, 30, 60]`). */
export function yamlText(value: unknown): string {
  const { Document, isScalar, isSeq, visit } = yaml();
  const doc = new Document(value);
  visit(doc, {
    Seq(_, node) {
      if (isSeq(node) && node.items.every((i) => isScalar(i))) node.flow = true;
    },
  });
  return doc.toString({ lineWidth: 0 }).trimEnd();
}
