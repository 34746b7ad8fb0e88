/**
 * The emulator's streaming multipart reader (local/multipart.ts): the same parts whatever the
 * chunking of the body, including cuts inside a delimiter; seeded, the seed printed on failure.
 */
import { describe, expect, it } from "vitest";
import { MultipartSplitter } from "../../local/multipart.js";
import { testRandom } from "../support/seeded-random.js";

const BOUNDARY = "flow-0123456789abcdef";

function body(file: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="UpdateParameters"\r\nContent-Type: application/json\r\n\r\n` +
        `{"Targets":["/redfish/v1/UpdateService/FirmwareInventory/BIOS"]}\r\n` +
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="UpdateFile"; filename="image.bin"\r\n` +
        "Content-Type: application/octet-stream\r\n\r\n",
    ),
    file,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
}

function split(whole: Buffer, cuts: number[]): Record<string, Buffer> {
  const parts: Record<string, Buffer[]> = {};
  const splitter = new MultipartSplitter(BOUNDARY, (name, chunk) => {
    const list = parts[name] ?? [];
    list.push(Buffer.from(chunk));
    parts[name] = list;
  });
  let at = 0;
  for (const cut of [...cuts, whole.length]) {
    splitter.push(whole.subarray(at, cut));
    at = cut;
  }
  return Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, Buffer.concat(v)]));
}

describe("multipart splitter", () => {
  // A file that contains CRLFs and dashes, as binary images do.
  const file = Buffer.from(`FLOWFW 1.3.0\n\r\n--not-the-boundary\r\n${"x".repeat(3000)}\r\n-`);
  const whole = body(file);
  const expected = {
    UpdateParameters: Buffer.from('{"Targets":["/redfish/v1/UpdateService/FirmwareInventory/BIOS"]}'),
    UpdateFile: file,
  };

  it("in one chunk", () => {
    expect(split(whole, [])).toEqual(expected);
  });

  it("one byte at a time", () => {
    expect(
      split(
        whole,
        Array.from({ length: whole.length - 1 }, (_, i) => i + 1),
      ),
    ).toEqual(expected);
  });

  it("50 random chunkings give the same parts", () => {
    const random = testRandom();
    for (let round = 0; round < 50; round += 1) {
      const cuts = Array.from({ length: 1 + random.int(20) }, () => 1 + random.int(whole.length - 1)).sort(
        (a, b) => a - b,
      );
      expect(split(whole, cuts)).toEqual(expected);
    }
  });
});
