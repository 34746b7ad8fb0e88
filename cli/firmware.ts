/**
 * The firmware image catalog's commands (docs/cli.md, docs/firmware-images.md):
 *
 *   flowctl firmware upload --type COMPUTE --version 1.3.0 [--sub-target bios] FILE
 *   flowctl firmware list [--type COMPUTE]
 *   flowctl firmware delete --type COMPUTE --version 1.3.0 [--sub-target bios]
 *
 * An upload streams the file once: every chunk read goes both into the sha256 and into the HTTP
 * PUT to the presigned URL the service handed out, so memory stays at a few read buffers however
 * large the image; then the service reads the stored bytes back, checks the size and the digest,
 * and registers the image (the same bytes again: nothing changes; other bytes: refused).
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { Command } from "commander";
import * as pb from "../src/gen/flow/v1/flow.js";
import * as admin from "../src/gen/flowadmin/v1/admin.js";
import type { Act } from "./command-args.js";
import { EXIT, UsageError } from "./errors.js";
import { componentTypes } from "./names.js";
import { fields, table, time } from "./output.js";

/** How much of the file is read (and so held) at a time. */
const READ_CHUNK_BYTES = 256 * 1024;

function componentTypeOption(value: string): pb.ComponentType {
  const type = componentTypes.parse(value);
  if (type === undefined || type === pb.ComponentType.COMPONENT_TYPE_UNKNOWN) {
    throw new UsageError(
      `--type: expected one of ${componentTypes.names.join(", ")} (got ${JSON.stringify(value)})`,
    );
  }
  return type;
}

/** `1.5 MiB`, `512 B`. */
export function sizeText(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/**
 * PUTs the file to `url` as one stream with its Content-Length (the URL signs it), hashing each
 * chunk on the way. Resolves to the sha256 once the store answered 200.
 *
 * node:http and node:https are imported here, when an upload runs: importing either into an ES
 * module loads the whole of Node's HTTP client, fetch's implementation included (about a tenth of
 * flowctl's start), which no other command needs.
 */
export async function streamUpload(file: string, size: number, url: string): Promise<string> {
  const target = new URL(url);
  const { request: send } =
    target.protocol === "https:" ? await import("node:https") : await import("node:http");
  const hash = createHash("sha256");
  return new Promise((resolve, reject) => {
    const req = send(target, { method: "PUT", headers: { "content-length": String(size) } }, (res) => {
      const body: Buffer[] = [];
      res.on("data", (chunk: Buffer) => {
        // An error document is short; a success has no body worth keeping.
        if (body.length < 64) body.push(chunk);
      });
      res.on("end", () => {
        if (res.statusCode === 200) resolve(hash.digest("hex"));
        else {
          const text = Buffer.concat(body).toString("utf8").slice(0, 500);
          reject(
            new UsageError(`uploading ${file}: the image store answered HTTP ${res.statusCode}: ${text}`),
          );
        }
      });
      res.on("error", reject);
    });
    req.on("error", (error) => reject(new UsageError(`uploading ${file}: ${error.message}`)));
    const read = createReadStream(file, { highWaterMark: READ_CHUNK_BYTES });
    read.on("data", (chunk) => hash.update(chunk));
    read.on("error", (error) => {
      req.destroy();
      reject(new UsageError(`reading ${file}: ${error.message}`));
    });
    read.pipe(req);
  });
}

function imageFields(image: admin.FirmwareImage): string {
  return fields([
    ["Type", componentTypes.name(image.componentType)],
    ["Version", image.version],
    ["Sub-target", image.subTarget === "" ? "(whole component)" : image.subTarget],
    ["Size", `${image.sizeBytes} bytes (${sizeText(image.sizeBytes)})`],
    ["SHA-256", image.sha256],
    ["Object", image.objectKey],
    [
      "Uploaded by",
      `${image.uploadedBy || "(anonymous)"}${image.uploadedByAuthenticated ? "" : " (unauthenticated)"}`,
    ],
    ["Uploaded at", time(image.uploadedAt)],
  ]);
}

export function registerFirmwareCommands(program: Command, act: Act): void {
  const firmware = program
    .command("firmware")
    .description("the firmware image catalog: nothing is flashed without its registered image");

  firmware
    .command("upload")
    .description("upload an image (streamed, its sha256 computed on the way) and register it")
    .requiredOption("--type <type>", "component type (COMPUTE, NVSWITCH, POWERSHELF, TORSWITCH, UMS, CDU)")
    .requiredOption("--version <version>", "the firmware version the image installs")
    .option("--sub-target <part>", "the image of one part only (e.g. bios); default the whole component")
    .argument("<file>", "the image file")
    .action(
      act(async (ctx, file: string, o: { type: string; version: string; subTarget?: string }) => {
        const componentType = componentTypeOption(o.type);
        let size: number;
        try {
          const info = await stat(file);
          if (!info.isFile()) throw new Error("not a regular file");
          size = info.size;
        } catch (error) {
          throw new UsageError(`${file}: ${(error as Error).message}`);
        }
        const key = { componentType, version: o.version, subTarget: o.subTarget ?? "" };
        const { admin: client } = ctx.conn();
        const begun = await client.beginFirmwareImageUpload({ ...key, sizeBytes: size });
        const sha256 = await streamUpload(file, size, begun.uploadUrl);
        const done = await client.completeFirmwareImageUpload({
          ...key,
          sizeBytes: size,
          uploadId: begun.uploadId,
          sha256,
        });
        const image = done.image as admin.FirmwareImage;
        ctx.print({
          data: admin.CompleteFirmwareImageUploadResponse.toJSON(done),
          table: () =>
            `${done.alreadyRegistered ? "already registered with the same bytes: nothing changed" : "registered"}\n${imageFields(image)}`,
        });
        return EXIT.OK;
      }),
    );

  firmware
    .command("delete")
    .description("remove an image nothing needs any more: its record and every version of its object")
    .requiredOption("--type <type>", "component type (COMPUTE, NVSWITCH, POWERSHELF, TORSWITCH, UMS, CDU)")
    .requiredOption("--version <version>", "the image's version")
    .option("--sub-target <part>", "the image of one part (e.g. bios); default the whole-component image")
    .action(
      act(async (ctx, o: { type: string; version: string; subTarget?: string }) => {
        const done = await ctx.conn().admin.deleteFirmwareImage({
          componentType: componentTypeOption(o.type),
          version: o.version,
          subTarget: o.subTarget ?? "",
        });
        const image = done.image as admin.FirmwareImage;
        ctx.print({
          data: admin.DeleteFirmwareImageResponse.toJSON(done),
          table: () =>
            `deleted\n${imageFields(image)}\n${
              done.objectVersionsDeleted === 0
                ? "the object is kept: another image has the same bytes"
                : `${done.objectVersionsDeleted} object version(s) deleted`
            }`,
        });
        return EXIT.OK;
      }),
    );

  firmware
    .command("list")
    .description("the registered images, by type, version and sub-target")
    .option("--type <type>", "only this component type")
    .action(
      act(async (ctx, o: { type?: string }) => {
        const resp = await ctx.conn().admin.listFirmwareImages({
          componentType:
            o.type === undefined ? pb.ComponentType.COMPONENT_TYPE_UNKNOWN : componentTypeOption(o.type),
          pagination: { offset: 0, limit: 1000 },
        });
        ctx.print({
          data: admin.ListFirmwareImagesResponse.toJSON(resp),
          table: () =>
            resp.images.length === 0
              ? "no firmware images"
              : table(
                  ["TYPE", "VERSION", "SUB-TARGET", "SIZE", "SHA256", "UPLOADED BY", "UPLOADED AT"],
                  resp.images.map((i) => [
                    componentTypes.name(i.componentType),
                    i.version,
                    i.subTarget || "-",
                    sizeText(i.sizeBytes),
                    `${i.sha256.slice(0, 12)}…`,
                    i.uploadedBy || "(anonymous)",
                    time(i.uploadedAt),
                  ]),
                ),
        });
        return EXIT.OK;
      }),
    );
}
