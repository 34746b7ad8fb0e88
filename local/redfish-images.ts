/**
 * How the Redfish BMC emulator (local/redfish-emulator.ts) takes in an image, streamed, never held
 * whole: from a multipart push (local/multipart.ts), a raw push, or a pull of SimpleUpdate's
 * ImageURI. An image is valid when it starts with `FLOWFW <version>\n` (firmwareImageHeader): what
 * a real BMC reads from its package header, the emulator reads from there.
 */
import http from "node:http";
import https from "node:https";
import type { Readable } from "node:stream";
import { MultipartSplitter } from "./multipart.js";

const HEADER = "FLOWFW ";

/** The first bytes of an image the emulator accepts: `FLOWFW <version>\n`. */
export function firmwareImageHeader(version: string): Buffer {
  return Buffer.from(`${HEADER}${version}\n`);
}

/** An error answer of the emulator: an HTTP status and a Redfish message id (its handlers throw it). */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly messageId: string,
    message: string,
  ) {
    super(message);
  }
}

/** Counts an image's bytes and reads the version its header names; `add` says whether it is still within `cap`. */
export class ImageScan {
  size = 0;
  private head = Buffer.alloc(0);
  constructor(private readonly cap: number | undefined) {}
  add(chunk: Buffer): boolean {
    this.size += chunk.length;
    if (this.head.length < 256) this.head = Buffer.concat([this.head, chunk.subarray(0, 256)]);
    return this.cap === undefined || this.size <= this.cap;
  }
  result(): { size: number; version?: string } {
    const text = this.head.toString("latin1");
    const nl = text.indexOf("\n");
    if (!text.startsWith(HEADER) || nl < 0) return { size: this.size };
    return { size: this.size, version: text.slice(HEADER.length, nl) };
  }
}

export async function scan(
  stream: Readable,
  cap: number | undefined,
): Promise<{ size: number; version?: string }> {
  const image = new ImageScan(cap);
  for await (const chunk of stream) {
    if (!image.add(chunk as Buffer)) {
      stream.destroy();
      break;
    }
  }
  return image.result();
}

export async function pull(
  uri: string,
  cap: number | undefined,
): Promise<{ size: number; version?: string }> {
  const url = new URL(uri);
  const lib = url.protocol === "https:" ? https : http;
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    lib.get(url, { rejectUnauthorized: false }, resolve).on("error", reject);
  });
  if (res.statusCode !== 200) {
    res.resume();
    throw new HttpProblem(400, "Update.1.0.TransferFailed", `GET ImageURI answered ${res.statusCode}`);
  }
  return scan(res, cap);
}

export interface MultipartUpdate {
  parameters: { Targets?: string[]; "@Redfish.OperationApplyTime"?: string };
  image: { size: number; version?: string };
}

export async function readMultipart(
  req: http.IncomingMessage,
  cap: number | undefined,
): Promise<MultipartUpdate> {
  const type = req.headers["content-type"] ?? "";
  const boundary = /boundary=("?)([^";]+)\1/.exec(type)?.[2];
  if (!type.startsWith("multipart/form-data") || boundary === undefined) {
    throw new HttpProblem(
      415,
      "Base.1.8.UnsupportedMediaType",
      "expected multipart/form-data with a boundary",
    );
  }
  const image = new ImageScan(cap);
  const json: Buffer[] = [];
  let sawFile = false;
  const splitter = new MultipartSplitter(boundary, (name, chunk) => {
    if (name === "UpdateParameters") json.push(chunk);
    else if (name === "UpdateFile") {
      sawFile = true;
      image.add(chunk);
    }
  });
  for await (const chunk of req) splitter.push(chunk as Buffer);
  if (!sawFile) throw new HttpProblem(400, "Base.1.8.PropertyMissing", "the UpdateFile part is missing");
  let parameters: MultipartUpdate["parameters"] = {};
  if (json.length > 0) {
    try {
      parameters = JSON.parse(Buffer.concat(json).toString("utf8")) as MultipartUpdate["parameters"];
    } catch {
      throw new HttpProblem(400, "Base.1.8.MalformedJSON", "UpdateParameters is not valid JSON");
    }
  }
  return { parameters, image: image.result() };
}
