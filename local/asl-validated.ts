/**
 * Which child-task definitions aws-local-stepfunctions has accepted, remembered across processes.
 * The library validates a definition on every construction of a state machine by compiling its
 * ASL JSON schema afresh (0.2-0.6 s of CPU on a 2-core machine), and every local stack is a
 * process of its own: the restart tests alone start sixteen, each on the same definition.
 *
 * A definition the library accepted is recorded as an empty file named by the SHA-256 of the
 * library's version and the definition's text, in node_modules/.cache/flow-asl-validated/ (where
 * the project keeps other build caches; `npm ci` clears it); a later process that finds that file
 * does not validate the same text again. A definition the library refused is never recorded, so
 * it fails every construction in every process. A cache that cannot be written (a read-only
 * checkout) only means validating again.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface ValidatedDefinitions {
  /** True when the library accepted this exact text, in this process or an earlier one. */
  has(text: string): boolean;
  /** Records that the library accepted this text (call only after it did). */
  add(text: string): void;
}

const ROOT = join(import.meta.dirname, "..");

/** The cache of this checkout; tests give a directory of their own. */
export const DEFAULT_VALIDATED_DIR = join(ROOT, "node_modules", ".cache", "flow-asl-validated");

/** The library's version: a new version may judge a definition otherwise. */
function libraryVersion(): string {
  try {
    const file = join(ROOT, "node_modules", "aws-local-stepfunctions", "package.json");
    return (JSON.parse(readFileSync(file, "utf8")) as { version?: string }).version ?? "unknown";
  } catch {
    return "unknown";
  }
}

export function validatedDefinitions(
  dir: string = DEFAULT_VALIDATED_DIR,
  version: string = libraryVersion(),
): ValidatedDefinitions {
  const known = new Set<string>();
  const file = (text: string) => join(dir, createHash("sha256").update(`${version}\n${text}`).digest("hex"));
  return {
    has(text) {
      if (known.has(text)) return true;
      if (!existsSync(file(text))) return false;
      known.add(text);
      return true;
    },
    add(text) {
      if (known.has(text)) return;
      known.add(text);
      try {
        mkdirSync(dir, { recursive: true });
        writeFileSync(file(text), "");
      } catch {
        // Not remembered across processes: the next one validates again.
      }
    },
  };
}
