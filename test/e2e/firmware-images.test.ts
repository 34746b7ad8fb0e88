/**
 * The firmware image catalog end to end: the real local stack (moto's DynamoDB and S3, the
 * simulated fleet downloading each image once and checking it) driven over gRPC and by flowctl:
 * in a child process where its peak memory is measured, in this process elsewhere (the same
 * command line, output and exit code, without a process start each: test/support/flowctl.ts).
 *
 *   - `flowctl firmware upload` streams a 64 MiB file (its peak RSS grows far less than the
 *     file), registers it uploaded by the caller; the same bytes again change nothing; other bytes
 *     are refused; `flowctl firmware list` shows it;
 *   - the admin RPCs validate every field, naming it;
 *   - a run, a task or a baseline naming a version with no image is refused, naming the type and
 *     version; once the image is uploaded, the run flashes and every BMC got a presigned GET it
 *     downloaded, whose bytes matched the command's sha256 and size.
 */
import { createHash } from "node:crypto";
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ComponentType, OperationRunStatus } from "../../src/gen/flow/v1/flow.js";
import { FAST_SUCCESS, rackGroup } from "../support/fixtures-inventory.js";
import { type FlowctlResult, flowctlInProcess } from "../support/flowctl.js";
import { type ProcessResult, runProcess } from "../support/run-process.js";
import {
  createRun,
  failure,
  racksSpec,
  runRequest,
  startTestStack,
  stateOf,
  type TestStack,
  waitForTerminal,
} from "../support/stack.js";

const ROOT = join(import.meta.dirname, "..", "..");
const FLOWCTL = join(ROOT, "cli", "bin", "flowctl.js");
const BIG = 64 * 1024 * 1024;
const RACKS = rackGroup(80, { name: "images", count: 2, types: ["COMPUTE", "NVSWITCH"] });

let s: TestStack;
let dir: string;

beforeAll(async () => {
  s = await startTestStack({ label: "images", groups: [RACKS], defaults: FAST_SUCCESS, tickMs: 150 });
  dir = mkdtempSync(join(tmpdir(), "flow-images-"));
});
afterAll(async () => {
  await s?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Run extends ProcessResult {
  /** Peak resident set of the flowctl process, KiB (GNU time). */
  maxRssKiB: number;
}

/** flowctl in this process, against the stack. */
function flowctl(args: string[]): Promise<FlowctlResult> {
  return flowctlInProcess(args, { FLOW_ENDPOINT: s.address });
}

/** flowctl in its own process under GNU time, so its peak RSS is measured. */
async function flowctlMeasured(args: string[]): Promise<Run> {
  const r = await runProcess("/usr/bin/time", ["-f", "maxrss=%M", process.execPath, FLOWCTL, ...args], {
    cwd: ROOT,
    env: { ...process.env, FLOW_ENDPOINT: s.address, NO_COLOR: "1" },
  });
  const rss = /maxrss=(\d+)\s*$/.exec(r.stderr);
  return {
    code: r.code,
    stdout: r.stdout,
    stderr: r.stderr.replace(/maxrss=\d+\s*$/, ""),
    maxRssKiB: Number(rss?.[1] ?? Number.NaN),
  };
}

/** A file of `size` bytes of a repeated text, written in 1 MiB pieces; returns its sha256. */
async function writeImage(path: string, size: number, text: string): Promise<string> {
  const hash = createHash("sha256");
  const out = createWriteStream(path);
  const piece = Buffer.alloc(1024 * 1024, text);
  for (let written = 0; written < size; written += piece.length) {
    const part = piece.subarray(0, Math.min(piece.length, size - written));
    hash.update(part);
    if (!out.write(part)) await new Promise((resolve) => out.once("drain", () => resolve(null)));
  }
  await new Promise((resolve, reject) =>
    out.end((err?: Error | null) => (err ? reject(err) : resolve(null))),
  );
  return hash.digest("hex");
}

const sha = (text: string) => createHash("sha256").update(text).digest("hex");

describe("flowctl firmware upload and list", () => {
  it("streams a 64 MiB image (peak RSS grows far less than the file), registers it by the caller, lists it", async () => {
    const file = join(dir, "compute-6.0.0.bin");
    const sha256 = await writeImage(file, BIG, "compute 6.0.0 ");
    const idle = await flowctlMeasured(["firmware", "list", "--type", "CDU"]);
    expect(idle.code, idle.stderr).toBe(0);
    const up = await flowctlMeasured(["firmware", "upload", "--type", "COMPUTE", "--version", "6.0.0", file]);
    expect(up.code, up.stderr).toBe(0);
    expect(up.stdout).toContain("registered\n");
    expect(up.stdout).toContain(`SHA-256:     ${sha256}`);
    expect(up.stdout).toContain(`Size:        ${BIG} bytes (64.0 MiB)`);
    expect(up.stdout).toContain(`Uploaded by: ${userInfo().username} (unauthenticated)`);
    // The file never sits in memory: the upload's peak exceeds a call that sends nothing by less
    // than the file (a buffered file would add all of it and more). Measured on this machine:
    // about +28 MiB for 16, 64 and 160 MiB alike (read buffers and the garbage they leave until
    // the next collection), i.e. bounded, not proportional to the file.
    expect(
      up.maxRssKiB - idle.maxRssKiB,
      `upload ${up.maxRssKiB} KiB, list ${idle.maxRssKiB} KiB`,
    ).toBeLessThan(BIG / 1024);

    const list = await flowctl(["firmware", "list", "--type", "COMPUTE"]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(
      new RegExp(
        `^COMPUTE\\s+6\\.0\\.0\\s+-\\s+64\\.0 MiB\\s+${sha256.slice(0, 12)}…\\s+${userInfo().username}\\s`,
        "m",
      ),
    );
    const json = await flowctl(["-o", "json", "firmware", "list", "--type", "COMPUTE"]);
    const images = JSON.parse(json.stdout).images as { version: string; sha256: string; objectKey: string }[];
    expect(images.find((i) => i.version === "6.0.0")).toMatchObject({
      sha256,
      objectKey: `images/COMPUTE/${sha256}`,
    });
  });

  it("the same bytes again change nothing; other bytes for the type and version are refused (FAILED_PRECONDITION)", async () => {
    const file = join(dir, "cdu-6.1.0.bin");
    writeFileSync(file, "cdu firmware 6.1.0");
    const first = await flowctl(["firmware", "upload", "--type", "CDU", "--version", "6.1.0", file]);
    expect(first.code, first.stderr).toBe(0);
    const again = await flowctl(["firmware", "upload", "--type", "CDU", "--version", "6.1.0", file]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain("already registered with the same bytes: nothing changed");
    const other = join(dir, "cdu-6.1.0-other.bin");
    writeFileSync(other, "CDU FIRMWARE 6.1.0");
    const refused = await flowctl(["firmware", "upload", "--type", "CDU", "--version", "6.1.0", other]);
    expect(refused.code).toBe(19);
    expect(refused.stderr).toContain(
      `firmware image CDU 6.1.0 is already registered with other bytes (sha256 ${sha("cdu firmware 6.1.0")}); an image never changes: upload it under a new version`,
    );
  });

  it("a bad type or a missing file is a usage error before anything is sent", async () => {
    const bad = await flowctl(["firmware", "upload", "--type", "GPU", "--version", "1", join(dir, "x")]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("--type: expected one of");
    const missing = await flowctl([
      "firmware",
      "upload",
      "--type",
      "UMS",
      "--version",
      "1",
      join(dir, "nope.bin"),
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("nope.bin: ENOENT");
  });
});

describe("flowctl firmware delete", () => {
  it("refused (exit 19) naming the baseline that resolves to it; deleted once it is gone; then NOT_FOUND (exit 15)", async () => {
    const file = join(dir, "cdu-6.2.0.bin");
    writeFileSync(file, "cdu firmware 6.2.0");
    const up = await flowctl(["firmware", "upload", "--type", "CDU", "--version", "6.2.0", file]);
    expect(up.code, up.stderr).toBe(0);
    const set = await flowctl(["baseline", "set", "CDU", "6.2.0", "--model", "delete-test"]);
    expect(set.code, set.stderr).toBe(0);
    const refused = await flowctl(["firmware", "delete", "--type", "CDU", "--version", "6.2.0"]);
    expect(refused.code).toBe(19);
    expect(refused.stderr).toContain(
      "firmware image CDU 6.2.0 is in use: baseline CDU 6.2.0 (model delete-test, vendor *); change the baseline or let the runs and tasks end first",
    );
    const unset = await flowctl(["baseline", "delete", "CDU", "--model", "delete-test"]);
    expect(unset.code, unset.stderr).toBe(0);
    const deleted = await flowctl(["firmware", "delete", "--type", "CDU", "--version", "6.2.0"]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toMatch(
      /^deleted\n[\s\S]*Version: +6\.2\.0[\s\S]*\n1 object version\(s\) deleted\n$/,
    );
    const list = await flowctl(["firmware", "list", "--type", "CDU"]);
    expect(list.stdout).not.toContain("6.2.0");
    const again = await flowctl(["firmware", "delete", "--type", "CDU", "--version", "6.2.0"]);
    expect(again.code).toBe(15);
    expect(again.stderr).toContain("no firmware image is registered for CDU 6.2.0");
  });
});

describe("the admin RPCs validate every field", () => {
  it("BeginFirmwareImageUpload: type, version, sub-target, size", async () => {
    const f = await failure(
      s.admin.beginFirmwareImageUpload({
        componentType: ComponentType.COMPONENT_TYPE_NVSWITCH,
        version: "",
        subTarget: "bios",
        sizeBytes: 6 * 1024 ** 3,
      }),
    );
    expect(f).toEqual({
      code: "INVALID_ARGUMENT",
      details:
        'version: must not be empty; sub_target: NVSWITCH has no sub-target "bios"; allowed: bmc, nvos, cpld (or empty for the whole component); size_bytes: must be an integer from 1 to 5368709120 bytes (5 GiB, one S3 PUT) (got 6442450944)',
    });
  });

  it("CompleteFirmwareImageUpload: the upload id and the sha256", async () => {
    const f = await failure(
      s.admin.completeFirmwareImageUpload({
        uploadId: "../etc",
        componentType: ComponentType.COMPONENT_TYPE_UMS,
        version: "1.0",
        subTarget: "",
        sizeBytes: 1,
        sha256: "abc",
      }),
    );
    expect(f).toEqual({
      code: "INVALID_ARGUMENT",
      details:
        "upload_id: must be the upload id BeginFirmwareImageUpload returned; sha256: must be 64 hex digits",
    });
  });
});

describe("nothing is flashed without its image", () => {
  const rackIds = RACKS.racks.map((r) => r.id);
  const missing =
    "no firmware image is registered for COMPUTE 7.7.7, NVSWITCH 7.7.7; upload one with flowctl firmware upload";

  it("create, dry run, UpgradeFirmware and a baseline naming a version with no image are refused, naming the types and version", async () => {
    const request = runRequest({ rackIds, firmware: { targetVersion: "7.7.7" } });
    const before = await s.countItems();
    expect(await failure(s.flow.createOperationRun(request))).toEqual({
      code: "INVALID_ARGUMENT",
      details: `configuration.operation.upgrade_firmware.target_version: ${missing}`,
    });
    expect(await failure(s.flow.planOperationRun(request))).toEqual({
      code: "INVALID_ARGUMENT",
      details: `configuration.operation.upgrade_firmware.target_version: ${missing}`,
    });
    expect(await s.countItems()).toEqual(before);
    expect(
      await failure(
        s.flow.upgradeFirmware({
          targetSpec: racksSpec(rackIds),
          targetVersion: "7.7.7",
          description: "",
          subTargets: ["bios"],
          overrideReadinessCheck: false,
          overrideVersionCheck: false,
          authenticationData: undefined,
        }),
      ),
    ).toEqual({
      code: "INVALID_ARGUMENT",
      details:
        "target_version: no firmware image is registered for COMPUTE 7.7.7 (bios, or the whole component); upload one with flowctl firmware upload",
    });
    expect(
      await failure(
        s.admin.setFirmwareBaselines({
          baselines: [
            { componentType: ComponentType.COMPONENT_TYPE_CDU, model: "", vendor: "", version: "7.7.7" },
          ],
        }),
      ),
    ).toEqual({
      code: "INVALID_ARGUMENT",
      details:
        "baselines: no firmware image is registered for CDU 7.7.7; upload one with flowctl firmware upload",
    });
  });

  it("with the images uploaded, the run flashes: every BMC fetched its image by the command's URL and found the sha256 and size", async () => {
    for (const type of ["COMPUTE", "NVSWITCH"]) {
      const file = join(dir, `${type}-7.7.7.bin`);
      writeFileSync(file, Buffer.alloc(200_000, `${type} 7.7.7 `));
      const up = await flowctl(["firmware", "upload", "--type", type, "--version", "7.7.7", file]);
      expect(up.code, up.stderr).toBe(0);
    }
    const fleet = s.local.fleet;
    if (fleet === undefined) throw new Error("the test stack runs a simulated fleet");
    const before = fleet.stats();
    const id = await createRun(s.flow, runRequest({ rackIds, firmware: { targetVersion: "7.7.7" } }));
    const run = await waitForTerminal(s.flow, id);
    expect(stateOf(run).status).toBe(OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED);
    const after = fleet.stats();
    expect(after.flashes - before.flashes).toBe(4);
    expect(after.imageRejections).toBe(before.imageRejections);
    // One download per image (the fleet caches by digest, as a rack's agent would).
    expect(after.imageDownloads - before.imageDownloads).toBe(2);
  });
});
