import { describe, expect, it } from "vitest";
import type { FirmwareImage } from "../../src/domain/firmware-images.js";
import { type ActiveRun, catalogOf, neighbourKeys, usesOfImage } from "../../src/domain/image-use.js";
import { imageRecord } from "../support/memory-images.js";

const WHOLE: FirmwareImage = imageRecord({ componentType: "COMPUTE", version: "1.3.0" });
const BIOS: FirmwareImage = imageRecord({ componentType: "COMPUTE", version: "1.3.0", subTarget: "bios" });
const BMC_PART: FirmwareImage = imageRecord({ componentType: "COMPUTE", version: "1.3.0", subTarget: "bmc" });
const none = { baselines: [], runs: [], tasks: [] };

const run = (overrides: Partial<ActiveRun>): ActiveRun => ({
  id: "run-1",
  status: "RUNNING",
  subTargets: [],
  targets: [{ componentsByType: [{ type: "COMPUTE", componentIds: ["c-1"] }] }],
  ...overrides,
});

describe("image use: baselines", () => {
  it("a baseline of the image's type and version uses it (whole or part); another version or type does not", () => {
    const baselines = [
      { componentType: "COMPUTE" as const, version: "1.3.0", model: "GB200" },
      { componentType: "COMPUTE" as const, version: "1.2.0" },
      { componentType: "NVSWITCH" as const, version: "1.3.0" },
    ];
    const users = { ...none, baselines };
    expect(usesOfImage(WHOLE, users, catalogOf([WHOLE]))).toEqual([
      "baseline COMPUTE 1.3.0 (model GB200, vendor *)",
    ]);
    expect(usesOfImage(BIOS, users, catalogOf([BIOS]))).toEqual([
      "baseline COMPUTE 1.3.0 (model GB200, vendor *)",
    ]);
    expect(usesOfImage(imageRecord({ componentType: "COMPUTE", version: "9.9" }), users, new Map())).toEqual(
      [],
    );
  });
});

describe("image use: runs that have not ended", () => {
  it("the run's target_version, or the version frozen on a target, for a component of the type", () => {
    expect(
      usesOfImage(WHOLE, { ...none, runs: [run({ targetVersion: "1.3.0" })] }, catalogOf([WHOLE])),
    ).toEqual(["run run-1 (RUNNING)"]);
    const frozen = run({
      status: "PAUSED",
      targets: [
        {
          componentsByType: [{ type: "COMPUTE", componentIds: ["c-1", "c-2"] }],
          versions: [
            { version: "1.2.0", componentIds: ["c-1"] },
            { version: "1.3.0", componentIds: ["c-2"] },
          ],
        },
      ],
    });
    expect(usesOfImage(WHOLE, { ...none, runs: [frozen] }, catalogOf([WHOLE]))).toEqual([
      "run run-1 (PAUSED)",
    ]);
    expect(
      usesOfImage(WHOLE, { ...none, runs: [run({ targetVersion: "1.2.0" })] }, catalogOf([WHOLE])),
    ).toEqual([]);
    // No target_version and nothing frozen for the component: it asks for no image.
    expect(usesOfImage(WHOLE, { ...none, runs: [run({})] }, catalogOf([WHOLE]))).toEqual([]);
    const otherType = run({
      targetVersion: "1.3.0",
      targets: [{ componentsByType: [{ type: "NVSWITCH", componentIds: ["n-1"] }] }],
    });
    expect(usesOfImage(WHOLE, { ...none, runs: [otherType] }, catalogOf([WHOLE]))).toEqual([]);
  });

  it("a one-part run takes the part's image when registered, else the whole one; a run of parts the type lacks flashes nothing", () => {
    const bios = run({ targetVersion: "1.3.0", subTargets: ["bios"] });
    expect(usesOfImage(WHOLE, { ...none, runs: [bios] }, catalogOf([WHOLE, BIOS]))).toEqual([]);
    expect(usesOfImage(BIOS, { ...none, runs: [bios] }, catalogOf([WHOLE, BIOS]))).toEqual([
      "run run-1 (RUNNING)",
    ]);
    expect(usesOfImage(WHOLE, { ...none, runs: [bios] }, catalogOf([WHOLE]))).toEqual([
      "run run-1 (RUNNING)",
    ]);
    const nvos = run({ targetVersion: "1.3.0", subTargets: ["nvos"] });
    expect(usesOfImage(WHOLE, { ...none, runs: [nvos] }, catalogOf([WHOLE]))).toEqual([]);
  });
});

describe("image use: tasks that have not ended", () => {
  it("components pending or updating to the version use it; done ones do not", () => {
    const task = (status: "PENDING" | "UPDATING" | "COMPLETED" | "FAILED") => ({
      id: "task-1",
      status: "RUNNING",
      components: [{ type: "COMPUTE" as const, status, targetVersion: "1.3.0" }],
    });
    for (const live of ["PENDING", "UPDATING"] as const)
      expect(usesOfImage(WHOLE, { ...none, tasks: [task(live)] }, catalogOf([WHOLE]))).toEqual([
        "task task-1 (RUNNING)",
      ]);
    for (const done of ["COMPLETED", "FAILED"] as const)
      expect(usesOfImage(WHOLE, { ...none, tasks: [task(done)] }, catalogOf([WHOLE]))).toEqual([]);
    const byReport = {
      id: "task-2",
      status: "WAITING",
      targetVersion: "1.3.0",
      components: [{ type: "COMPUTE" as const, status: "PENDING" as const }],
    };
    expect(usesOfImage(WHOLE, { ...none, tasks: [byReport] }, catalogOf([WHOLE]))).toEqual([
      "task task-2 (WAITING)",
    ]);
  });
});

describe("image use: the rest of what a task or baseline says", () => {
  it("a task's component narrowed to one part uses that part's image and the whole one (either may be frozen in its plan); one with no version anywhere needs none", () => {
    const parts = {
      id: "task-3",
      status: "RUNNING",
      components: [
        {
          type: "COMPUTE" as const,
          status: "PENDING" as const,
          targetVersion: "1.3.0",
          subTargets: ["bios"],
        },
      ],
    };
    expect(usesOfImage(BIOS, { ...none, tasks: [parts] }, catalogOf([WHOLE, BIOS]))).toEqual([
      "task task-3 (RUNNING)",
    ]);
    // Its preflight may have frozen the whole image before the part's was registered.
    expect(usesOfImage(WHOLE, { ...none, tasks: [parts] }, catalogOf([WHOLE, BIOS]))).toEqual([
      "task task-3 (RUNNING)",
    ]);
    // Another part's image, or another version's, it could never use.
    expect(usesOfImage(BMC_PART, { ...none, tasks: [parts] }, catalogOf([WHOLE, BIOS, BMC_PART]))).toEqual(
      [],
    );
    const unversioned = {
      id: "task-4",
      status: "RUNNING",
      components: [{ type: "COMPUTE" as const, status: "PENDING" as const }],
    };
    expect(usesOfImage(WHOLE, { ...none, tasks: [unversioned] }, catalogOf([WHOLE]))).toEqual([]);
  });

  it("a baseline narrowed to a vendor is named with it", () => {
    const baselines = [{ componentType: "COMPUTE" as const, version: "1.3.0", vendor: "acme" }];
    expect(usesOfImage(WHOLE, { ...none, baselines }, catalogOf([WHOLE]))).toEqual([
      "baseline COMPUTE 1.3.0 (model *, vendor acme)",
    ]);
  });
});

describe("image use: which other images decide", () => {
  it("a whole image's neighbours are its type's part images of the version; a part image has none", () => {
    expect(neighbourKeys(WHOLE).map((k) => k.subTarget)).toEqual(["bmc", "bios", "cpld", "gpu", "nic"]);
    expect(neighbourKeys(BIOS)).toEqual([]);
  });
});
