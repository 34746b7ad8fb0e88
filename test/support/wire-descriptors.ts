/**
 * The compiled descriptors of proto/, from `buf build` run here, so a test sees exactly what
 * codegen sees; nothing is cached in the repository. Built once per test worker.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createFileRegistry, type FileRegistry, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
let built: FileRegistry | undefined;

export function compiledDescriptors(): FileRegistry {
  if (built !== undefined) return built;
  const tmp = mkdtempSync(join(tmpdir(), "wire-contract-"));
  try {
    const out = join(tmp, "flow.binpb");
    execFileSync(
      join(ROOT, "node_modules/.bin/buf"),
      ["build", "proto", "--as-file-descriptor-set", "-o", out],
      {
        cwd: ROOT,
      },
    );
    built = createFileRegistry(fromBinary(FileDescriptorSetSchema, readFileSync(out)));
    return built;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
