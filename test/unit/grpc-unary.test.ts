/**
 * The one unary wrapper, driven with a fake grpc-js call: deadlines, admission, decode failures
 * (strict UTF-8, control characters), error mapping, and the "callback exactly once, never after
 * cancellation" rule.
 */
import { type ServerUnaryCall, type sendUnaryData, status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { createAdmission } from "../../src/adapters/grpc/admission.js";
import type { CallContext } from "../../src/adapters/grpc/handlers.js";
import { type GrpcLogger, unaryHandler } from "../../src/adapters/grpc/server.js";
import { NotFoundError } from "../../src/domain/errors.js";
import {
  CreateOperationRunRequest,
  FlowService,
  GetOperationRunRequest,
  GetOperationRunResponse,
} from "../../src/gen/flow/v1/flow.js";

const NOW = 1_800_000_000_000;
const RUN_ID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";

const silent: GrpcLogger = { info: () => {}, warn: () => {}, error: () => {} };

interface Answer {
  error: { code?: number; details?: string } | null;
  value?: Buffer | null;
}

/** A call as grpc-js hands it to a unary handler, and a callback that records every answer. */
function fakeCall(request: Uint8Array, deadline: Date | number = Number.POSITIVE_INFINITY) {
  const call = { request: Buffer.from(request), cancelled: false, getDeadline: () => deadline };
  const answers: Answer[] = [];
  const callback: sendUnaryData<Buffer> = (error, value) => {
    answers.push({ error: error as Answer["error"], value });
  };
  return { call, answers, callback, asCall: call as unknown as ServerUnaryCall<Buffer, Buffer> };
}

const requestBytes = GetOperationRunRequest.encode({ id: { id: RUN_ID }, includeStats: true }).finish();

/** A logger whose `dropped` resolves with the fields of the wrapper's "answer dropped" line. */
function droppedAnswers(): { logger: GrpcLogger; dropped: Promise<Record<string, unknown>> } {
  let seen: (fields: Record<string, unknown>) => void = () => {};
  const dropped = new Promise<Record<string, unknown>>((resolve) => {
    seen = resolve;
  });
  return {
    logger: {
      ...silent,
      info: (message: string, fields?: Record<string, unknown>) => {
        if (message === "gRPC call cancelled before its answer") seen(fields ?? {});
      },
    },
    dropped,
  };
}

/** Resolves once pending promise callbacks have run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("grpc unary wrapper", () => {
  it("decodes, calls the handler once and answers with the encoded response", async () => {
    const seen: GetOperationRunRequest[] = [];
    const handler = unaryHandler(
      FlowService.getOperationRun,
      async (req) => {
        seen.push(req);
        return { operationRun: undefined };
      },
      { logger: silent, now: () => NOW },
    );
    const { asCall, callback, answers } = fakeCall(requestBytes);
    handler(asCall, callback);
    await settle();
    expect(seen).toEqual([{ id: { id: RUN_ID }, includeStats: true }]);
    expect(answers).toHaveLength(1);
    expect(answers[0]?.error).toBeNull();
    expect(GetOperationRunResponse.decode(answers[0]?.value as Buffer)).toEqual({ operationRun: undefined });
  });

  it.each([
    ["epoch ms", NOW - 1],
    ["Date", new Date(NOW)],
  ])(
    "a deadline already passed (%s) → DEADLINE_EXCEEDED without calling the handler",
    async (_label, deadline) => {
      let calls = 0;
      const handler = unaryHandler(
        FlowService.getOperationRun,
        async () => {
          calls++;
          return { operationRun: undefined };
        },
        { logger: silent, now: () => NOW },
      );
      const { asCall, callback, answers } = fakeCall(requestBytes, deadline);
      handler(asCall, callback);
      await settle();
      expect(calls).toBe(0);
      expect(answers).toEqual([
        {
          error: { code: status.DEADLINE_EXCEEDED, details: "deadline exceeded before the call was handled" },
          value: undefined,
        },
      ]);
    },
  );

  it("a deadline still ahead lets the call through", async () => {
    const handler = unaryHandler(FlowService.getOperationRun, async () => ({ operationRun: undefined }), {
      logger: silent,
      now: () => NOW,
    });
    const { asCall, callback, answers } = fakeCall(requestBytes, new Date(NOW + 1));
    handler(asCall, callback);
    await settle();
    expect(answers[0]?.error).toBeNull();
  });

  it.each([
    ["a wire type protobuf does not have", [0x0f], "malformed request: cant skip wire type 7"],
    ["a length running past the end", [0x0a, 0x05, 0x01], "malformed request: premature EOF"],
  ])("undecodable bytes (%s) → INVALID_ARGUMENT, handler not called", async (_label, bytes, details) => {
    let calls = 0;
    const handler = unaryHandler(
      FlowService.getOperationRun,
      async () => {
        calls++;
        return { operationRun: undefined };
      },
      { logger: silent, now: () => NOW },
    );
    const { asCall, callback, answers } = fakeCall(Uint8Array.from(bytes));
    handler(asCall, callback);
    await settle();
    expect(calls).toBe(0);
    expect(answers).toEqual([{ error: { code: status.INVALID_ARGUMENT, details }, value: undefined }]);
  });

  it("a FlowError from the handler → its status and message, answered once", async () => {
    const handler = unaryHandler(
      FlowService.getOperationRun,
      async () => {
        throw new NotFoundError(`operation run ${RUN_ID} not found`);
      },
      { logger: silent, now: () => NOW },
    );
    const { asCall, callback, answers } = fakeCall(requestBytes);
    handler(asCall, callback);
    await settle();
    expect(answers).toEqual([
      { error: { code: status.NOT_FOUND, details: `operation run ${RUN_ID} not found` }, value: undefined },
    ]);
  });

  it("a handler that throws synchronously, or returns something unencodable → INTERNAL 'internal error', logged", async () => {
    const logged: string[] = [];
    const logger: GrpcLogger = { ...silent, error: (_m, fields) => logged.push(String(fields?.method)) };
    const throwing = unaryHandler(
      FlowService.getOperationRun,
      (() => {
        throw new Error("sync boom");
      }) as never,
      { logger, now: () => NOW },
    );
    const first = fakeCall(requestBytes);
    throwing(first.asCall, first.callback);

    const unencodable = unaryHandler(
      FlowService.getOperationRun,
      async () => ({ operationRun: { summary: { id: { id: 42 } } } }) as never,
      { logger, now: () => NOW },
    );
    const second = fakeCall(requestBytes);
    unencodable(second.asCall, second.callback);
    await settle();
    for (const { answers } of [first, second]) {
      expect(answers).toEqual([
        { error: { code: status.INTERNAL, details: "internal error" }, value: undefined },
      ]);
    }
    expect(logged).toEqual(["/v1.Flow/GetOperationRun", "/v1.Flow/GetOperationRun"]);
  });

  it("a call already cancelled when it reaches the wrapper is neither started nor answered", async () => {
    let calls = 0;
    const { logger, dropped } = droppedAnswers();
    const handler = unaryHandler(
      FlowService.getOperationRun,
      async () => {
        calls++;
        return { operationRun: undefined };
      },
      { logger, now: () => NOW },
    );
    const { call, asCall, callback, answers } = fakeCall(requestBytes);
    call.cancelled = true;
    handler(asCall, callback);
    // The wrapper's answer, dropped: the one thing it does for a cancelled call.
    expect(await dropped).toEqual({ method: "/v1.Flow/GetOperationRun" });
    expect(calls).toBe(0);
    expect(answers).toEqual([]);
  });

  it("a call cancelled while the handler runs is not answered at all", async () => {
    let running: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      running = resolve;
    });
    let respond: () => void = () => {};
    const { logger, dropped } = droppedAnswers();
    const handler = unaryHandler(
      FlowService.getOperationRun,
      () =>
        new Promise((resolve) => {
          respond = () => resolve({ operationRun: undefined });
          running();
        }),
      { logger, now: () => NOW },
    );
    const { call, asCall, callback, answers } = fakeCall(requestBytes);
    handler(asCall, callback);
    await started;
    call.cancelled = true;
    respond();
    // The handler's answer reached the wrapper, which dropped it instead of calling back.
    expect(await dropped).toEqual({ method: "/v1.Flow/GetOperationRun" });
    expect(answers).toEqual([]);
  });
});

describe("grpc unary wrapper: admission (overload is shed, not absorbed)", () => {
  const createBytes = CreateOperationRunRequest.encode(
    CreateOperationRunRequest.fromPartial({ name: "r", clientRequestId: "" }),
  ).finish();

  /** A handler whose calls stay in progress until released, in order. */
  function parked<Res>(response: Res) {
    const waiting: (() => void)[] = [];
    return {
      handle: () => new Promise<Res>((resolve) => waiting.push(() => resolve(response))),
      releaseOne: () => waiting.shift()?.(),
      get parked() {
        return waiting.length;
      },
    };
  }

  it("at the creates limit a create is RESOURCE_EXHAUSTED at once while reads still pass; at the calls limit everything is; a finished call frees its slot", async () => {
    const logged: string[] = [];
    const logger: GrpcLogger = {
      info: (m, f) => logged.push(`info ${m} ${JSON.stringify(f)}`),
      warn: (m) => logged.push(`warn ${m}`),
      error: () => {},
    };
    const admission = createAdmission({ maxInFlightCalls: 3, maxConcurrentCreates: 1 }, logger);
    const deps = { logger, now: () => NOW, admission };
    const creates = parked({ id: { id: RUN_ID } });
    const reads = parked({ operationRun: undefined });
    const create = unaryHandler(FlowService.createOperationRun, creates.handle, deps);
    const get = unaryHandler(FlowService.getOperationRun, reads.handle, deps);

    const first = fakeCall(createBytes);
    create(first.asCall, first.callback);
    const second = fakeCall(createBytes);
    create(second.asCall, second.callback);
    await settle();
    expect(creates.parked).toBe(1);
    expect(second.answers).toEqual([
      {
        error: {
          code: status.RESOURCE_EXHAUSTED,
          details:
            "server busy: 1 calls that create or plan runs in progress, the most it admits at once; the call was not started and may be retried with backoff",
        },
        value: undefined,
      },
    ]);

    const readCalls = [fakeCall(requestBytes), fakeCall(requestBytes), fakeCall(requestBytes)];
    for (const c of readCalls) get(c.asCall, c.callback);
    await settle();
    expect(reads.parked).toBe(2);
    expect(readCalls[2]?.answers).toEqual([
      {
        error: {
          code: status.RESOURCE_EXHAUSTED,
          details:
            "server busy: 3 calls in progress, the most it admits at once; the call was not started and may be retried with backoff",
        },
        value: undefined,
      },
    ]);
    expect(admission.inProgress()).toEqual({ calls: 3, creates: 1 });

    // The create finishes: its slot is free for the next create.
    creates.releaseOne();
    reads.releaseOne();
    reads.releaseOne();
    await settle();
    expect(first.answers[0]?.error).toBeNull();
    expect(admission.inProgress()).toEqual({ calls: 0, creates: 0 });
    const third = fakeCall(createBytes);
    create(third.asCall, third.callback);
    await settle();
    expect(creates.parked).toBe(1);
    creates.releaseOne();
    await settle();
    expect(third.answers[0]?.error).toBeNull();
    // One line when shedding starts, one when calls are admitted again: not one per refused call
    // (the creates that ran also have their audit lines, audit.ts).
    expect(logged.filter((l) => l.includes("gRPC admission"))).toEqual([
      "warn gRPC admission: busy, refusing calls until load drops",
      'info gRPC admission: admitting again {"refused":2}',
    ]);
  });

  it("a call whose handler fails, or whose request is refused at decode, frees its slot too", async () => {
    const admission = createAdmission({ maxInFlightCalls: 1, maxConcurrentCreates: 1 }, silent);
    const deps = { logger: silent, now: () => NOW, admission };
    const failing = unaryHandler(
      FlowService.getOperationRun,
      async () => {
        throw new NotFoundError("nope");
      },
      deps,
    );
    const a = fakeCall(requestBytes);
    failing(a.asCall, a.callback);
    await settle();
    const b = fakeCall(Uint8Array.from([0x0f]));
    failing(b.asCall, b.callback);
    await settle();
    expect(a.answers[0]?.error?.code).toBe(status.NOT_FOUND);
    expect(b.answers[0]?.error?.code).toBe(status.INVALID_ARGUMENT);
    expect(admission.inProgress()).toEqual({ calls: 0, creates: 0 });
  });

  it("the handler sees the deadline, and `abandoned` once the deadline passes or the client cancels", async () => {
    let now = NOW;
    const contexts: CallContext[] = [];
    const handler = unaryHandler(
      FlowService.getOperationRun,
      async (_req, call) => {
        contexts.push(call);
        return { operationRun: undefined };
      },
      { logger: silent, now: () => now },
    );
    const timed = fakeCall(requestBytes, NOW + 1_000);
    handler(timed.asCall, timed.callback);
    const cancelled = fakeCall(requestBytes);
    handler(cancelled.asCall, cancelled.callback);
    await settle();
    const [withDeadline, without] = contexts as [CallContext, CallContext];
    expect(withDeadline.deadline).toBe(NOW + 1_000);
    expect(without.deadline).toBe(Number.POSITIVE_INFINITY);
    expect([withDeadline.abandoned(), without.abandoned()]).toEqual([false, false]);
    now = NOW + 1_000;
    cancelled.call.cancelled = true;
    expect([withDeadline.abandoned(), without.abandoned()]).toEqual([true, true]);
  });
});

describe("grpc unary wrapper: request text (strict UTF-8, no control characters)", () => {
  /** `bytes` with every occurrence of the UTF-8 of `marker` replaced by `replacement` (same length). */
  function patched(bytes: Uint8Array, marker: string, replacement: number[]): Uint8Array {
    const needle = Buffer.from(marker, "utf8");
    expect(replacement).toHaveLength(needle.length);
    const out = Buffer.from(bytes);
    let at = out.indexOf(needle);
    expect(at).toBeGreaterThanOrEqual(0);
    while (at >= 0) {
      out.set(replacement, at);
      at = out.indexOf(needle, at + 1);
    }
    return out;
  }

  const request = (name: string, rackName: string, seed = "s", secret = "pw") =>
    CreateOperationRunRequest.encode(
      CreateOperationRunRequest.fromPartial({
        name,
        configuration: {
          selector: { selector: { $case: "percentage", value: { percentage: 10, seed } } },
          operation: {
            operation: {
              $case: "upgradeFirmware",
              value: {
                targetSpec: {
                  targets: {
                    $case: "racks",
                    value: {
                      targets: [
                        { identifier: { $case: "name", value: "fine" }, componentTypes: [] },
                        { identifier: { $case: "name", value: rackName }, componentTypes: [] },
                      ],
                    },
                  },
                },
                authenticationData: { value: { $case: "shared", value: secret } },
              },
            },
          },
        },
      }),
    ).finish();

  async function answerTo(bytes: Uint8Array) {
    let calls = 0;
    const handler = unaryHandler(
      FlowService.createOperationRun,
      async () => {
        calls++;
        return { id: { id: RUN_ID } };
      },
      { logger: silent, now: () => NOW },
    );
    const { asCall, callback, answers } = fakeCall(bytes);
    handler(asCall, callback);
    await settle();
    return { calls, answers };
  }

  it("malformed UTF-8 in any string field → INVALID_ARGUMENT naming each field, handler not called", async () => {
    const bytes = patched(request("n@@e", "r@@k"), "@@", [0xc3, 0x28]);
    expect(await answerTo(bytes)).toEqual({
      calls: 0,
      answers: [
        {
          error: {
            code: status.INVALID_ARGUMENT,
            details:
              "name: must be valid UTF-8; configuration.operation.upgrade_firmware.target_spec.racks.targets[1].name: must be valid UTF-8",
          },
          value: undefined,
        },
      ],
    });
  });

  it("a truncated multi-byte character and a lone continuation byte are malformed too", async () => {
    for (const bad of [
      [0xe2, 0x82],
      [0x80, 0x80],
    ]) {
      const { answers } = await answerTo(patched(request("ok", "r##k"), "##", bad));
      expect(answers[0]?.error).toEqual({
        code: status.INVALID_ARGUMENT,
        details:
          "configuration.operation.upgrade_firmware.target_spec.racks.targets[1].name: must be valid UTF-8",
      });
    }
  });

  it("control characters (C0 but tab, DEL, C1) → INVALID_ARGUMENT with the field and the character", async () => {
    const { calls, answers } = await answerTo(request("\x1b[2Jrun", "rack\u009b", "seed\u007f"));
    expect(calls).toBe(0);
    expect(answers[0]?.error).toEqual({
      code: status.INVALID_ARGUMENT,
      details:
        "name: must not contain control characters (U+001B at character 0); configuration.selector.percentage.seed: must not contain control characters (U+007F at character 4); configuration.operation.upgrade_firmware.target_spec.racks.targets[1].name: must not contain control characters (U+009B at character 4)",
    });
  });

  it("valid UTF-8, tabs, and credentials with control characters pass to the handler", async () => {
    expect(await answerTo(request("über\trun ✓", "räck", "s", "\x1b\u0000"))).toMatchObject({ calls: 1 });
  });

  it("credentials must be UTF-8 like any string field (the field is named, never the value)", async () => {
    const { calls, answers } = await answerTo(patched(request("ok", "rack"), "pw", [0xff, 0xfe]));
    expect(calls).toBe(0);
    expect(answers[0]?.error).toEqual({
      code: status.INVALID_ARGUMENT,
      details: "configuration.operation.upgrade_firmware.authentication_data.shared: must be valid UTF-8",
    });
  });
});
