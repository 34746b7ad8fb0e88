/**
 * The ts-proto codec checked against a reflective codec built from the compiled descriptors
 * (test/support/wire-descriptors.ts): each sample (test/support/wire-samples.ts) survives a
 * reflective decode and re-encode unchanged.
 */
import { create, type DescMessage, type FileRegistry, fromBinary, toBinary } from "@bufbuild/protobuf";
import { beforeAll, describe, expect, it } from "vitest";
import {
  AdvanceOperationRunPhaseRequest,
  ComponentType,
  CreateOperationRunRequest,
  ListTasksRequest,
  OperationRunSafetyGateScope,
  OperationRunTarget,
  OperationRunTargetStatus,
} from "../../src/gen/flow/v1/flow.js";
import { compiledDescriptors } from "../support/wire-descriptors.js";
import { AT, SAMPLES, UUID_A, UUID_B } from "../support/wire-samples.js";

let registry: FileRegistry;

beforeAll(() => {
  registry = compiledDescriptors();
});

function schema(type: string): DescMessage {
  const desc = registry.getMessage(type);
  if (!desc) throw new Error(`no descriptor for ${type}`);
  return desc;
}

describe("wire contract: generated codec ≡ reflective codec", () => {
  it.each(SAMPLES.map((s, i) => [`${s.type} #${i}`, s] as const))(
    "%s: ts-proto bytes survive a reflective decode (unknown fields dropped) and re-encode unchanged",
    (_label, sample) => {
      const bytes = sample.codec.encode(sample.message as never).finish();
      // Unknown fields are dropped, so a field the descriptor does not know (or knows with another
      // wire type) would be lost on the way back. Field order may legitimately differ between the
      // two encoders (RackTarget declares external_id = 4 before component_types = 3), so the
      // reflective bytes are compared after one more pass through the generated codec.
      const desc = schema(sample.type);
      const reflected = fromBinary(desc, bytes, { readUnknownFields: false });
      const back = sample.codec.encode(sample.codec.decode(toBinary(desc, reflected)) as never).finish();
      expect(Buffer.from(back).toString("hex")).toBe(Buffer.from(bytes).toString("hex"));
      expect(sample.codec.decode(toBinary(desc, reflected))).toEqual(sample.message);
    },
  );

  it("reflectively built messages decode with ts-proto to the values that were set", () => {
    const request = create(schema("v1.ListTasksRequest"), {
      rackId: { id: UUID_A.id },
      activeOnly: false,
      pagination: { offset: 0, limit: 25 },
      withReport: true,
    } as never);
    const decoded = ListTasksRequest.decode(toBinary(schema("v1.ListTasksRequest"), request));
    expect(decoded).toEqual({
      rackId: UUID_A,
      activeOnly: false,
      pagination: { offset: 0, limit: 25 },
      componentId: undefined,
      withReport: true,
    });

    const target = create(schema("v1.OperationRunTarget"), {
      rackId: { id: UUID_B.id },
      status: 8,
      componentsByType: { groups: [{ type: 6, componentIds: [{ id: UUID_A.id }] }] },
      createdAt: { seconds: BigInt(Math.floor(AT.getTime() / 1000)), nanos: 456_000_000 },
      rackExternalId: "ext",
    } as never);
    const t = OperationRunTarget.decode(toBinary(schema("v1.OperationRunTarget"), target));
    expect(t.status).toBe(OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_CLAIMED);
    expect(t.componentsByType).toEqual({
      groups: [{ type: ComponentType.COMPONENT_TYPE_CDU, componentIds: [UUID_A] }],
    });
    expect(t.createdAt).toEqual(AT);
    expect(t.rackId).toEqual(UUID_B);
    expect(t.rackExternalId).toBe("ext");
  });

  it("a oneof branch and a zero-valued optional built reflectively survive ts-proto decode and re-encode", () => {
    const desc = schema("v1.AdvanceOperationRunPhaseRequest");
    const bytes = toBinary(desc, create(desc, { id: UUID_A, expectedPhaseIndex: 0 } as never));
    const decoded = AdvanceOperationRunPhaseRequest.decode(bytes);
    expect(decoded).toEqual({ id: UUID_A, expectedPhaseIndex: 0 });
    expect(Buffer.from(AdvanceOperationRunPhaseRequest.encode(decoded).finish())).toEqual(Buffer.from(bytes));

    const gateDesc = schema("v1.OperationRunSafetyGate");
    const gate = create(gateDesc, {
      gate: { case: "failureCount", value: { scope: 2, failureThresholdCount: 5 } },
    } as never);
    const gateBytes = toBinary(gateDesc, gate);
    const fromTsProto = CreateOperationRunRequest.decode(
      CreateOperationRunRequest.encode(
        CreateOperationRunRequest.fromPartial({
          configuration: {
            options: {
              safetyPolicy: {
                gates: [{ gate: { $case: "failureCount", value: { scope: 2, failureThresholdCount: 5 } } }],
              },
            },
          },
        }),
      ).finish(),
    );
    const reflectedGate = fromBinary(gateDesc, gateBytes);
    expect(fromTsProto.configuration?.options?.safetyPolicy?.gates[0]?.gate).toEqual({
      $case: "failureCount",
      value: {
        scope: OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN,
        failureThresholdCount: 5,
      },
    });
    expect((reflectedGate as unknown as { gate: { case: string } }).gate.case).toBe("failureCount");
  });
});
