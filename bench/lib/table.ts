/**
 * Plain-text tables for benchmark output: the first column left-aligned, the others right-aligned
 * (they are numbers), columns as wide as their widest cell.
 *
 *   printTable(["call", "ms"], [["Get", "1.2"], ["List", "10.5"]])
 *   call    ms
 *   ----  ----
 *   Get    1.2
 *   List  10.5
 */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(headers), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

export function printTable(headers: readonly string[], rows: readonly (readonly string[])[]): void {
  console.log(formatTable(headers, rows));
}

/** A number with `digits` decimals, or "-" when it is not a number. */
export function fixed(value: number, digits = 1): string {
  return Number.isFinite(value) ? value.toFixed(digits) : "-";
}
