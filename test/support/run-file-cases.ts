/**
 * Run files for the CLI's run-file tests (cli/run-file/): a minimal file, one with its options
 * replaced, and the problems a refused file reports, as `path: rule` lines.
 */
import { expect } from "vitest";
import { parseRunFile, RunFileError } from "../../cli/run-file/load.js";

export const MINIMAL = `
name: fw
selector: { percentage: 30 }
options:
  maxConcurrentTargets: 2
  gates: [{ failureCount: 1 }]
operation:
  upgradeFirmware: {}
`;

/** The problems of a file that must fail, as `path: rule` lines. */
export function problems(text: string): string[] {
  try {
    parseRunFile(text, "run.yaml");
  } catch (err) {
    expect(err).toBeInstanceOf(RunFileError);
    return (err as RunFileError).problems.map((p) => `${p.path}: ${p.rule}`);
  }
  throw new Error("expected the file to be rejected");
}

/** MINIMAL with `options` lines replaced. */
export function withOptions(lines: string): string {
  return `name: fw\nselector: { percentage: 30 }\noptions:\n${lines}\noperation:\n  upgradeFirmware: {}\n`;
}
