/** Reading a run file: the file's text, YAML 1.2 (so JSON too), checked against the schema (schema.ts). */

import { readFile } from "node:fs/promises";
import type * as pb from "../../src/gen/flow/v1/flow.js";
import { yaml } from "../output.js";
import { type FileProblem, Reader } from "./reader.js";
import { readRequest } from "./schema.js";

/** A run file that cannot be used. Its message lists every problem, one per line. */
export class RunFileError extends Error {
  constructor(
    readonly file: string,
    readonly problems: readonly FileProblem[],
  ) {
    super(problems.map((p) => `${file}: ${p.path}: ${p.rule}`).join("\n"));
    this.name = "RunFileError";
  }
}

export async function loadRunFile(path: string): Promise<pb.CreateOperationRunRequest> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === "ENOENT" ? "file not found" : code === "EISDIR" ? "is a directory" : (err as Error).message;
    throw new RunFileError(path, [{ path: "(root)", rule: `cannot be read: ${why}` }]);
  }
  return parseRunFile(text, path);
}

/** Parses a run file's text (YAML 1.2, so JSON too); `file` is only used in messages. */
export function parseRunFile(text: string, file: string): pb.CreateOperationRunRequest {
  const { isDocument, parseDocument } = yaml();
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (!isDocument(doc) || doc.errors.length > 0) {
    const problems = doc.errors.map((e) => ({
      path: "(root)",
      rule: `not valid YAML or JSON: ${oneLine(e.message)}`,
    }));
    throw new RunFileError(file, problems);
  }
  const r = new Reader();
  const request = readRequest(r, doc.toJS({ maxAliasCount: 100 }) as unknown);
  if (r.problems.length > 0) throw new RunFileError(file, r.problems);
  return request!;
}

/** The first line of a YAML error, without the code excerpt it introduces: `… at line 2, column 1`. */
function oneLine(message: string): string {
  return message.split("\n")[0]!.trim().replace(/:$/, "");
}
