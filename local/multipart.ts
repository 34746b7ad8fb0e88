/**
 * A streaming multipart/form-data reader (RFC 7578) for the Redfish emulator's
 * MultipartHttpPushUri: hands each part's bytes to `onData(partName, chunk)` as they arrive, and
 * holds back only as many bytes as a delimiter is long, so a 512 MB image part is never in memory.
 *
 *   --B\r\n headers \r\n\r\n body \r\n--B\r\n headers \r\n\r\n body \r\n--B--
 */
export class MultipartSplitter {
  private buffer: Buffer = Buffer.alloc(0);
  private state: "preamble" | "headers" | "body" | "done" = "preamble";
  private part = "";
  private readonly first: Buffer;
  private readonly delimiter: Buffer;

  constructor(
    boundary: string,
    private readonly onData: (part: string, chunk: Buffer) => void,
  ) {
    this.first = Buffer.from(`--${boundary}\r\n`);
    this.delimiter = Buffer.from(`\r\n--${boundary}`);
  }

  push(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    for (;;) {
      if (this.state === "done") {
        this.buffer = Buffer.alloc(0);
        return;
      }
      if (this.state === "preamble") {
        const at = this.buffer.indexOf(this.first);
        if (at < 0) return;
        this.buffer = this.buffer.subarray(at + this.first.length);
        this.state = "headers";
      } else if (this.state === "headers") {
        const at = this.buffer.indexOf("\r\n\r\n");
        if (at < 0) return;
        const headers = this.buffer.subarray(0, at).toString("latin1");
        this.part = /name="([^"]*)"/i.exec(headers)?.[1] ?? "";
        this.buffer = this.buffer.subarray(at + 4);
        this.state = "body";
      } else {
        const at = this.buffer.indexOf(this.delimiter);
        if (at < 0) {
          const keep = this.delimiter.length + 2;
          if (this.buffer.length > keep) {
            this.onData(this.part, this.buffer.subarray(0, this.buffer.length - keep));
            this.buffer = Buffer.from(this.buffer.subarray(this.buffer.length - keep));
          }
          return;
        }
        if (at > 0) this.onData(this.part, this.buffer.subarray(0, at));
        const rest = this.buffer.subarray(at + this.delimiter.length);
        if (rest.length < 2) {
          // Wait for the two bytes that say whether another part follows.
          this.buffer = Buffer.from(this.buffer.subarray(at));
          return;
        }
        this.buffer = rest.subarray(2);
        this.state = rest.subarray(0, 2).toString("latin1") === "--" ? "done" : "headers";
      }
    }
  }
}
