/**
 * What the process writes to stdout and stderr while `capture` is on, line by line: where Powertools'
 * logger and metrics write (a Console of their own on process.stdout/stderr, as in Lambda), so a
 * test reads exactly what CloudWatch Logs would receive.
 */
import { vi } from "vitest";

export interface CapturedOutput {
  /** Every complete line written so far, stdout and stderr interleaved in write order. */
  lines(): string[];
  /** The lines that parse as JSON objects. */
  json(): Record<string, unknown>[];
  restore(): void;
}

export function captureOutput(): CapturedOutput {
  const written: string[] = [];
  const spies = [process.stdout, process.stderr].map((stream) =>
    vi.spyOn(stream, "write").mockImplementation((chunk: string | Uint8Array) => {
      written.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"));
      return true;
    }),
  );
  const lines = () =>
    written
      .join("")
      .split("\n")
      .filter((l) => l !== "");
  return {
    lines,
    json: () =>
      lines().flatMap((l) => {
        try {
          const parsed: unknown = JSON.parse(l);
          return typeof parsed === "object" && parsed !== null ? [parsed as Record<string, unknown>] : [];
        } catch {
          return [];
        }
      }),
    restore: () => {
      for (const spy of spies) spy.mockRestore();
    },
  };
}
