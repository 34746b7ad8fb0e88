/**
 * `flowctl run create` against a scripted gRPC server on a loopback socket: one client request id
 * per invocation, the same on every retry; RESOURCE_EXHAUSTED and UNAVAILABLE retried with jittered
 * backoff (seeded here; the waits are recorded, not slept), bounded; an answer that may have been
 * lost tells the operator how to find the run. And nothing the service says reaches the terminal
 * with its control characters.
 */
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Io } from "../../cli/context.js";
import { runCli } from "../../cli/program.js";
import { backoffMs, DEFAULT_RETRY, withRetries } from "../../cli/retry.js";
import { CONTROL_CHARACTERS } from "../../src/domain/text.js";
import {
  type CreateOperationRunRequest,
  FlowService,
  ListOperationRunsResponse,
} from "../../src/gen/flow/v1/flow.js";
import { seededRandom, testRandom } from "../support/seeded-random.js";

const RUN_FILE = join(import.meta.dirname, "..", "..", "examples", "quickstart.yaml");
const RUN_ID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";

/** What the server answers each CreateOperationRun, in order; then OK. */
let script: { code: grpc.status; details: string }[] = [];
const received: CreateOperationRunRequest[] = [];
let listing: ListOperationRunsResponse = { operationRuns: [], total: 0 };
let server: grpc.Server;
let endpoint: string;

beforeAll(async () => {
  server = new grpc.Server();
  server.addService(FlowService, {
    createOperationRun: (
      call: grpc.ServerUnaryCall<CreateOperationRunRequest, unknown>,
      callback: grpc.sendUnaryData<unknown>,
    ) => {
      received.push(call.request);
      const next = script.shift();
      if (next !== undefined) callback({ code: next.code, details: next.details });
      else callback(null, { id: { id: RUN_ID } });
    },
    listOperationRuns: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback(null, listing),
  } as unknown as grpc.UntypedServiceImplementation);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  endpoint = `127.0.0.1:${port}`;
});
afterAll(() => server.forceShutdown());
afterEach(() => {
  script = [];
  received.length = 0;
});

async function flowctl(args: string[], io: Partial<Io> = {}) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(["--endpoint", endpoint, ...args], {
    stdout: {
      write: (t: string) => {
        stdout += t;
      },
    },
    stderr: {
      write: (t: string) => {
        stderr += t;
      },
    },
    env: {},
    interrupted: new Promise(() => {}),
    ...io,
  });
  return { code, stdout, stderr };
}

const busy = {
  code: grpc.status.RESOURCE_EXHAUSTED,
  details:
    "server busy: 8 calls that create or plan runs in progress, the most it admits at once; the call was not started and may be retried with backoff",
};

describe("flowctl run create: the client request id and retries", () => {
  it("RESOURCE_EXHAUSTED twice, then created: three attempts with one id, waits drawn with jitter", async () => {
    const random = testRandom();
    const expected = seededRandom(random.seed);
    const waits: number[] = [];
    script = [busy, { code: grpc.status.UNAVAILABLE, details: "store unreachable" }];
    const out = await flowctl(["run", "create", "-f", RUN_FILE], {
      random: () => random.next(),
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    expect(out.code).toBe(0);
    expect(out.stdout).toBe(`created run ${RUN_ID}\nwatch it: flowctl run watch ${RUN_ID}\n`);
    expect(received).toHaveLength(3);
    const ids = new Set(received.map((r) => r.clientRequestId));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const policy = { ...DEFAULT_RETRY, random: () => expected.next() };
    expect(waits).toEqual([backoffMs(policy, 1), backoffMs(policy, 2)]);
    expect(out.stderr).toBe(
      [
        `flowctl: the service answered RESOURCE_EXHAUSTED; retrying in ${(waits[0]! / 1000).toFixed(1)} s (attempt 2 of 6)`,
        `flowctl: the service answered UNAVAILABLE; retrying in ${(waits[1]! / 1000).toFixed(1)} s (attempt 3 of 6)`,
        "",
      ].join("\n"),
    );
  });

  it("every invocation has its own id; --request-id sends the one given", async () => {
    let n = 0;
    const newRequestId = () => `id-${++n}`;
    await flowctl(["run", "create", "-f", RUN_FILE], { newRequestId });
    await flowctl(["run", "create", "-f", RUN_FILE], { newRequestId });
    await flowctl(["run", "create", "-f", RUN_FILE, "--request-id", "from-earlier"], { newRequestId });
    expect(received.map((r) => r.clientRequestId)).toEqual(["id-1", "id-2", "from-earlier"]);
  });

  it("a malformed --request-id is a usage error; nothing is sent", async () => {
    const out = await flowctl(["run", "create", "-f", RUN_FILE, "--request-id", "has space"]);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain(
      "option '--request-id <id>' argument 'has space' is invalid. must be 1 to 64 printable ASCII characters without spaces, e.g. a UUID (got 9 characters)",
    );
    expect(received).toEqual([]);
  });

  it("still busy after 6 attempts: the last error, exit 10 + RESOURCE_EXHAUSTED, retries bounded", async () => {
    script = Array.from({ length: 10 }, () => busy);
    const out = await flowctl(["run", "create", "-f", RUN_FILE], {
      random: () => 0.5,
      sleep: async () => {},
    });
    expect(received).toHaveLength(6);
    expect(out.code).toBe(10 + grpc.status.RESOURCE_EXHAUSTED);
    expect(out.stderr.split("\n").slice(-3)).toEqual([
      `error: ${busy.details} (RESOURCE_EXHAUSTED)`,
      "  the service is busy and did not start the call; try again in a moment",
      "",
    ]);
  });

  it("an answer lost to the deadline is not retried, and says how to find the run", async () => {
    script = [{ code: grpc.status.DEADLINE_EXCEEDED, details: "Deadline exceeded" }];
    const out = await flowctl(["run", "create", "-f", RUN_FILE], { newRequestId: () => "req-lost" });
    expect(received).toHaveLength(1);
    expect(out.code).toBe(10 + grpc.status.DEADLINE_EXCEEDED);
    expect(out.stderr).toContain(
      `  the run may have been created: \`flowctl run create -f ${RUN_FILE} --request-id req-lost\` answers its id if so, and creates it if not`,
    );
  });

  it("other refusals are not retried", async () => {
    script = [{ code: grpc.status.INVALID_ARGUMENT, details: "name: name is required" }];
    const out = await flowctl(["run", "create", "-f", RUN_FILE], {
      sleep: () => Promise.reject(new Error("slept")),
    });
    expect(received).toHaveLength(1);
    expect(out.code).toBe(10 + grpc.status.INVALID_ARGUMENT);
  });

  it("withRetries passes anything that is not a gRPC error straight through", async () => {
    const policy = { ...DEFAULT_RETRY, random: () => 0, sleep: async () => {} };
    await expect(withRetries(() => Promise.reject(new Error("boom")), policy)).rejects.toThrow("boom");
  });
});

/** Control characters other than the line breaks flowctl lays out with. */
const rawControls = (text: string) => text.replaceAll("\n", "").match(CONTROL_CHARACTERS) ?? [];

describe("flowctl prints no control character the service sent", () => {
  const evil = {
    id: { id: RUN_ID },
    name: "\x1b[2Jevil\u009b31m",
    description: "",
    state: { status: 2, reason: 0 },
    statusMessage: "line 1\nline 2\x07",
    currentPhaseIndex: 0,
    totalPhases: 1,
    phaseSizes: [1],
  };

  it("tables: every cell escaped", async () => {
    listing = ListOperationRunsResponse.fromPartial({ operationRuns: [evil], total: 1 });
    const out = await flowctl(["run", "list"]);
    expect(out.code).toBe(0);
    expect(rawControls(out.stdout)).toEqual([]);
    expect(out.stdout).toContain("\\x1b[2Jevil\\x9b31m");
    expect(out.stdout).toContain("line 1\\nline 2\\x07");
  });

  it.each(["json", "yaml"])(
    "%s: DEL and C1 as \\u escapes, C0 as the format escapes them",
    async (format) => {
      listing = ListOperationRunsResponse.fromPartial({ operationRuns: [evil], total: 1 });
      const out = await flowctl(["--output", format, "run", "list"]);
      expect(out.code).toBe(0);
      expect(rawControls(out.stdout)).toEqual([]);
      expect(out.stdout).toContain("\\u009b");
    },
  );

  it("errors: the service's details escaped", async () => {
    script = [{ code: grpc.status.FAILED_PRECONDITION, details: "rack \x1b]0;pwned\x07 busy" }];
    const out = await flowctl(["run", "create", "-f", RUN_FILE]);
    expect(out.stderr).toContain("error: rack \\x1b]0;pwned\\x07 busy (FAILED_PRECONDITION)");
    expect(rawControls(out.stderr)).toEqual([]);
  });
});
