/**
 * The firmware image catalog's pure rules (src/domain/firmware-images.ts) and the one check every
 * create path and baseline change makes (requireImages), on in-memory fakes: which image serves a
 * flash, what a plan flashes, what the admin service accepts, and the exact refusal.
 */

import { describe, expect, it } from "vitest";
import { requireImages } from "../../src/app/firmware-images.js";
import { createRunService } from "../../src/app/runs.js";
import type { CreateRunInput } from "../../src/domain/create-run-input.js";
import { type FieldViolation, ValidationError } from "../../src/domain/errors.js";
import {
  candidateKeys,
  checkImageSize,
  describeImageKey,
  flashNeeds,
  type ImageNeed,
  imageFor,
  imageKeyId,
  imageObjectKey,
  MAX_IMAGE_BYTES,
  missingImagesRule,
  sameImageKey,
  stagingObjectKey,
  validateBeginUpload,
  validateCompleteUpload,
} from "../../src/domain/firmware-images.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import { clockOf } from "../support/clock.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import { imageRecord, MemoryFirmwareImageStore } from "../support/memory-images.js";
import { MemoryInventoryStore, MemoryRunStore } from "../support/memory-stores.js";

const WHOLE = imageRecord({ componentType: "COMPUTE", version: "2.0.0" });
const BIOS = imageRecord({ componentType: "COMPUTE", version: "2.0.0", subTarget: "bios" });
const NVOS = imageRecord({ componentType: "NVSWITCH", version: "2.0.0", subTarget: "nvos" });
const catalog = (...images: (typeof WHOLE)[]) => new Map(images.map((i) => [imageKeyId(i), i] as const));
const need = (componentType: ImageNeed["componentType"], version: string, subTargets: string[] = []) => ({
  componentType,
  version,
  subTargets,
});

describe("keys", () => {
  it("names, ids and object keys", () => {
    expect(describeImageKey(WHOLE)).toBe("COMPUTE 2.0.0");
    expect(describeImageKey(BIOS)).toBe("COMPUTE 2.0.0 (bios)");
    expect(imageKeyId(WHOLE)).toBe("COMPUTE#2.0.0#");
    expect(imageKeyId(BIOS)).toBe("COMPUTE#2.0.0#bios");
    expect(sameImageKey(WHOLE, { componentType: "COMPUTE", version: "2.0.0" })).toBe(true);
    expect(sameImageKey(WHOLE, BIOS)).toBe(false);
    expect(imageObjectKey("CDU", "ab")).toBe("images/CDU/ab");
    expect(stagingObjectKey("u-1")).toBe("uploads/u-1");
  });
});

describe("which image serves a flash", () => {
  it.each([
    ["the whole component: the whole image", need("COMPUTE", "2.0.0"), catalog(WHOLE, BIOS), WHOLE],
    [
      "one part with its own image: that image",
      need("COMPUTE", "2.0.0", ["bios"]),
      catalog(WHOLE, BIOS),
      BIOS,
    ],
    [
      "one part without its own image: the whole image",
      need("COMPUTE", "2.0.0", ["gpu"]),
      catalog(WHOLE),
      WHOLE,
    ],
    [
      "two parts: the whole image, even with a part's",
      need("COMPUTE", "2.0.0", ["bios", "bmc"]),
      catalog(BIOS),
      undefined,
    ],
    ["the whole component never takes a part's image", need("NVSWITCH", "2.0.0"), catalog(NVOS), undefined],
    ["another version: nothing", need("COMPUTE", "2.0.1"), catalog(WHOLE), undefined],
  ])("%s", (_, wanted, images, served) => {
    expect(imageFor(wanted, images)).toEqual(served);
  });

  it("candidate keys, best first", () => {
    expect(candidateKeys(need("UMS", "1", ["nos"]))).toEqual([
      { componentType: "UMS", version: "1", subTarget: "nos" },
      { componentType: "UMS", version: "1" },
    ]);
    expect(candidateKeys(need("UMS", "1", ["nos", "x"]))).toEqual([{ componentType: "UMS", version: "1" }]);
  });

  it("the refusal names each missing type and version once, in order; none when all are served", () => {
    expect(missingImagesRule([need("COMPUTE", "2.0.0")], catalog(WHOLE))).toBeUndefined();
    expect(
      missingImagesRule(
        [
          need("NVSWITCH", "3.0"),
          need("COMPUTE", "2.0.0"),
          need("NVSWITCH", "3.0"),
          need("CDU", "1", ["controller"]),
        ],
        catalog(WHOLE),
      ),
    ).toBe(
      "no firmware image is registered for NVSWITCH 3.0, CDU 1 (controller, or the whole component); upload one with flowctl firmware upload",
    );
  });
});

describe("what a plan flashes", () => {
  const rows = [
    {
      rackId: "r1",
      components: [
        { id: "c1", type: "COMPUTE" as const },
        { id: "c2", type: "NVSWITCH" as const },
        { id: "c3", type: "CDU" as const },
      ],
    },
    { rackId: "r2", components: [{ id: "c4", type: "COMPUTE" as const }] },
  ];

  it("the request's target version for every component, each type once", () => {
    expect(flashNeeds(rows, { targetVersion: "2.0.0", subTargets: [] })).toEqual([
      need("COMPUTE", "2.0.0"),
      need("NVSWITCH", "2.0.0"),
      need("CDU", "2.0.0"),
    ]);
  });

  it("without one, each component's frozen version; a component with none asks for nothing", () => {
    const versions = new Map([
      ["r1", [{ version: "1.0", componentIds: ["c1", "c2"] }]],
      ["r2", [{ version: "1.1", componentIds: ["c4"] }]],
    ]);
    expect(flashNeeds(rows, { subTargets: [] }, versions)).toEqual([
      need("COMPUTE", "1.0"),
      need("NVSWITCH", "1.0"),
      need("COMPUTE", "1.1"),
    ]);
    expect(flashNeeds(rows, { subTargets: [] })).toEqual([]);
  });

  it("sub-targets narrow each type to its parts; a type with none of them is not flashed", () => {
    expect(flashNeeds(rows, { targetVersion: "2", subTargets: ["bios", "nvos"] })).toEqual([
      need("COMPUTE", "2", ["bios"]),
      need("NVSWITCH", "2", ["nvos"]),
    ]);
  });
});

describe("what the admin service accepts", () => {
  const key = { componentType: "COMPUTE", version: "1.3.0", subTarget: "" };
  const id = "0b0b0b0b-0000-4000-8000-000000000001";
  const digest = "a".repeat(64);

  it("a valid begin and complete; a sub-target in any case is stored lowercase, a digest too", () => {
    expect(validateBeginUpload({ ...key, subTarget: "BIOS", sizeBytes: 1 })).toEqual({
      ok: true,
      value: { key: { componentType: "COMPUTE", version: "1.3.0", subTarget: "bios" }, sizeBytes: 1 },
    });
    expect(
      validateCompleteUpload({
        ...key,
        sizeBytes: MAX_IMAGE_BYTES,
        uploadId: id,
        sha256: digest.toUpperCase(),
      }),
    ).toEqual({
      ok: true,
      value: {
        key: { componentType: "COMPUTE", version: "1.3.0" },
        sizeBytes: MAX_IMAGE_BYTES,
        uploadId: id,
        sha256: digest,
      },
    });
  });

  it.each<[string, Parameters<typeof validateBeginUpload>[0], FieldViolation[]]>([
    [
      "an unknown type (its sub-target is not judged)",
      { componentType: "GPU", version: "1", subTarget: "x", sizeBytes: 1 },
      [{ field: "component_type", rule: "must be a known component type (got GPU)" }],
    ],
    [
      "an empty version",
      { ...key, version: "", sizeBytes: 1 },
      [{ field: "version", rule: "must not be empty" }],
    ],
    [
      "a version with spaces around it",
      { ...key, version: "1.0 ", sizeBytes: 1 },
      [
        {
          field: "version",
          rule: `must be letters, digits, '.', '_', '+' and '-', starting with a letter or digit (got "1.0 ")`,
        },
      ],
    ],
    [
      "a version that is a path: the image key would leave its folder",
      { ...key, version: "../../NVSWITCH/2.0", sizeBytes: 1 },
      [
        {
          field: "version",
          rule: `must be letters, digits, '.', '_', '+' and '-', starting with a letter or digit (got "../../NVSWITCH/2.0")`,
        },
      ],
    ],
    [
      "a version too long",
      { ...key, version: "v".repeat(129), sizeBytes: 1 },
      [{ field: "version", rule: "must be at most 128 characters (got 129)" }],
    ],
    [
      "a part the type does not have",
      { ...key, subTarget: "psu", sizeBytes: 1 },
      [
        {
          field: "sub_target",
          rule: 'COMPUTE has no sub-target "psu"; allowed: bmc, bios, cpld, gpu, nic (or empty for the whole component)',
        },
      ],
    ],
    [
      "a size beyond one PUT",
      { ...key, sizeBytes: MAX_IMAGE_BYTES + 1 },
      [
        {
          field: "size_bytes",
          rule: "must be an integer from 1 to 5368709120 bytes (5 GiB, one S3 PUT) (got 5368709121)",
        },
      ],
    ],
  ])("begin refuses %s", (_, input, violations) => {
    expect(validateBeginUpload(input)).toEqual({ ok: false, violations });
  });

  it("complete refuses a malformed upload id, a non-hex digest and a fractional size, all at once", () => {
    expect(validateCompleteUpload({ ...key, sizeBytes: 1.5, uploadId: "x", sha256: "g".repeat(64) })).toEqual(
      {
        ok: false,
        violations: [
          { field: "upload_id", rule: "must be the upload id BeginFirmwareImageUpload returned" },
          {
            field: "size_bytes",
            rule: "must be an integer from 1 to 5368709120 bytes (5 GiB, one S3 PUT) (got 1.5)",
          },
          { field: "sha256", rule: "must be 64 hex digits" },
        ],
      },
    );
    const violations: FieldViolation[] = [];
    checkImageSize(0, "size", violations);
    expect(violations.map((v) => v.field)).toEqual(["size"]);
  });
});

describe("requireImages: nothing is flashed without its image", () => {
  it("returns the images that serve every need, read in one batch of candidate keys", async () => {
    const store = new MemoryFirmwareImageStore([WHOLE, BIOS]);
    const found = await requireImages(
      store,
      [need("COMPUTE", "2.0.0"), need("COMPUTE", "2.0.0", ["bios"])],
      "f",
    );
    expect([...found.keys()].sort()).toEqual(["COMPUTE#2.0.0#", "COMPUTE#2.0.0#bios"]);
    expect(store.getCalls).toBe(1);
    expect(await requireImages(store, [], "f")).toEqual(new Map());
    expect(store.getCalls).toBe(1);
  });

  it("refuses with InvalidArgument at the field, naming every missing type and version", async () => {
    await expect(
      requireImages(new MemoryFirmwareImageStore([WHOLE]), [need("CDU", "9")], "baselines"),
    ).rejects.toThrow(
      new ValidationError([
        {
          field: "baselines",
          rule: "no firmware image is registered for CDU 9; upload one with flowctl firmware upload",
        },
      ]),
    );
  });

  it("a create names the run's field and writes nothing; with the images it creates", async () => {
    const racks: InventoryRack[] = [1, 2].map((n) => ({
      id: uuid(n, "aaaa0000"),
      name: `rack-${n}`,
      components: [
        { id: uuid(n * 10, "c7c00000"), type: "COMPUTE" },
        { id: uuid(n * 10 + 1, "c8c00000"), type: "NVSWITCH" },
      ],
    }));
    const images = new MemoryFirmwareImageStore([WHOLE]);
    const runs = new MemoryRunStore();
    let ids = 0;
    const service = createRunService({
      runs,
      inventory: new MemoryInventoryStore(racks),
      images,
      clock: clockOf(() => 1_700_000_000_000),
      newId: () => uuid(++ids, "1d000000"),
    });
    const input: CreateRunInput = {
      name: "fw",
      description: "",
      configuration: {
        selector: { kind: "percentage", percentage: 100, seed: "s" },
        options: {
          maxConcurrentTargets: 1,
          safetyPolicy: { gates: [{ kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 }] },
        },
        operation: {
          upgradeFirmware: {
            description: "",
            targetVersion: "2.0.0",
            subTargets: [],
            overrideReadinessCheck: false,
            overrideVersionCheck: false,
            targetSpec: {
              kind: "racks",
              racks: racks.map((r) => ({ ref: { by: "id", id: r.id }, componentTypes: [] })),
            },
          },
        },
      },
    };
    await expect(service.createRun(input)).rejects.toThrow(
      "configuration.operation.upgrade_firmware.target_version: no firmware image is registered for NVSWITCH 2.0.0; upload one with flowctl firmware upload",
    );
    expect(await runs.listRuns(() => true, { offset: 0, limit: 10 })).toMatchObject({ total: 0 });
    await images.registerImage(imageRecord({ componentType: "NVSWITCH", version: "2.0.0" }));
    const { id } = await service.createRun(input);
    expect((await runs.getRun(id))?.name).toBe("fw");
  });
});
