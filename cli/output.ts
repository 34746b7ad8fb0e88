/**
 * What commands print: human-readable tables by default, or the service's messages as JSON or YAML
 * (`--output json|yaml`: proto3 JSON field names, enum names, RFC 3339 timestamps) for scripts.
 */
import { Document, isScalar, isSeq, stringify, visit } from "yaml";

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
      return `${JSON.stringify(result.data, null, 2)}\n`;
    case "yaml":
      return stringify(result.data, { lineWidth: 0 });
    case "table": {
      const text = result.table();
      return text.endsWith("\n") || text === "" ? text : `${text}\n`;
    }
  }
}

/**
 * Columns padded to their widest cell; the last column is not padded, so long messages do not push
 * trailing spaces. `table(["ID", "NAME"], [["1", "a"]])` →
 *
 *   ID  NAME
 *   1   a
 */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n");
}

/** `Name:     value` lines, the labels aligned; pairs with an empty value are left out. */
export function fields(pairs: readonly (readonly [string, string])[]): string {
  const shown = pairs.filter(([, v]) => v !== "");
  const width = Math.max(...shown.map(([k]) => k.length)) + 1;
  return shown.map(([k, v]) => `${`${k}:`.padEnd(width)} ${v}`).join("\n");
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
  const doc = new Document(value);
  visit(doc, {
    Seq(_, node) {
      if (isSeq(node) && node.items.every((i) => isScalar(i))) node.flow = true;
    },
  });
  return doc.toString({ lineWidth: 0 }).trimEnd();
}
