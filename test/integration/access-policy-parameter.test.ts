/**
 * The Fargate front's access policy from an SSM parameter (src/adapters/ssm/access-policy-parameter.ts),
 * against moto's SSM: a good new version is the policy of the next decision, a bad one is refused
 * (one error line, AccessPolicyRejected) with the previous version in force, an unreadable
 * parameter stops the start and later keeps the policy (one warn line, AccessPolicyUnreadable per
 * failed read) until it can be read again. The poll runs on an injected timer, ticked by the test.
 */
import { DeleteParameterCommand, PutParameterCommand, SSMClient } from "@aws-sdk/client-ssm";
import { afterAll, describe, expect, it } from "vitest";
import { awsClientConfig } from "../../src/adapters/aws-config.js";
import { type Every, parameterPolicySource } from "../../src/adapters/ssm/access-policy-parameter.js";
import type { Principal } from "../../src/domain/access-policy.js";
import { decide } from "../../src/domain/authorization.js";
import { TEST_CREDENTIALS, TEST_REGION } from "../support/moto.js";
import { recordedObservability } from "../support/recorded-observability.js";
import { testEndpoint } from "../support/test-endpoint.js";

const ssm = new SSMClient(
  awsClientConfig({ endpoint: testEndpoint(), region: TEST_REGION, credentials: TEST_CREDENTIALS }),
);
afterAll(() => ssm.destroy());

const CANCEL = "/v1.Flow/CancelOperationRun";
const alice: Principal = { authenticated: true, subjectAltNames: [], commonName: "alice" };
const policy = (role: string) => `bindings:\n  - subjects: ["cn:alice"]\n    roles: [${role}]\n`;

let names = 0;
/** A parameter of its own per test (the worker's moto is shared by its files). */
const parameterName = () => `/flow-test-${process.pid}-${++names}/access-policy`;

async function put(name: string, value: string): Promise<number> {
  const out = await ssm.send(
    new PutParameterCommand({ Name: name, Value: value, Type: "String", Overwrite: true }),
  );
  return out.Version ?? 0;
}

/** The injected timer: what interval the source asked for, and one tick on demand. */
function manualTimer() {
  const timer = { ms: 0, stopped: false, poll: undefined as (() => Promise<void>) | undefined };
  const every: Every = (ms, poll) => {
    timer.ms = ms;
    timer.poll = poll;
    return () => {
      timer.stopped = true;
    };
  };
  const tick = (): Promise<void> => {
    if (timer.poll === undefined) throw new Error("the source did not start polling");
    return timer.poll();
  };
  return { timer, every, tick };
}

describe("access policy from an SSM parameter (moto)", () => {
  it("version 1 at start; a good version 2 decides the next call; a bad version 3 is refused once, version 2 staying", async () => {
    const name = parameterName();
    expect(await put(name, policy("viewer"))).toBe(1);
    const r = recordedObservability();
    const t = manualTimer();
    const source = await parameterPolicySource(ssm, name, {
      logger: r.logger,
      metrics: r.meter,
      pollMs: 30_000,
      every: t.every,
    });
    expect(t.timer.ms).toBe(30_000);
    expect(decide(source.current(), alice, CANCEL, false)).toMatchObject({
      allowed: false,
      code: "PERMISSION_DENIED",
      message: "alice may not operate operation run; roles with it: operator, admin",
    });

    // An unchanged version is not parsed again: nothing logged, nothing counted.
    await t.tick();
    expect(r.lines).toEqual([]);

    expect(await put(name, policy("operator"))).toBe(2);
    await t.tick();
    expect(decide(source.current(), alice, CANCEL, false)).toMatchObject({ allowed: true });
    expect(r.lines).toEqual([
      `info access policy reloaded ${JSON.stringify({ parameter: name, version: 2, bindings: 1 })}`,
    ]);
    expect(r.metrics).toEqual([]);

    expect(await put(name, `${policy("superuser")}  - subjects: [""]\n    roles: [viewer]\n`)).toBe(3);
    await t.tick();
    expect(decide(source.current(), alice, CANCEL, false)).toMatchObject({ allowed: true });
    expect(r.lines.slice(1)).toEqual([
      `error access policy reload refused; the previous policy stays in force ${JSON.stringify({
        parameter: name,
        version: 3,
        problems: [
          `${name} (version 3): bindings[0].roles[0]: unknown role "superuser" (roles: viewer, operator, approver, admin)`,
          `${name} (version 3): bindings[1].subjects[0]: must not be empty`,
        ].join("; "),
      })}`,
    ]);
    expect(r.metrics).toEqual(["AccessPolicyRejected=1"]);

    // Version 3 was judged: the next tick neither logs nor counts it again.
    await t.tick();
    expect(r.lines).toHaveLength(2);
    expect(r.metrics).toEqual(["AccessPolicyRejected=1"]);
    source.close();
    expect(t.timer.stopped).toBe(true);
  });

  it("a read that fails later keeps the policy: one warn line for the outage, AccessPolicyUnreadable per failed read, then the next version is taken", async () => {
    const name = parameterName();
    await put(name, policy("operator"));
    const r = recordedObservability();
    const t = manualTimer();
    const source = await parameterPolicySource(ssm, name, {
      logger: r.logger,
      metrics: r.meter,
      pollMs: 30_000,
      every: t.every,
    });
    await ssm.send(new DeleteParameterCommand({ Name: name }));
    await t.tick();
    await t.tick();
    expect(decide(source.current(), alice, CANCEL, false)).toMatchObject({ allowed: true });
    expect(r.metrics).toEqual(["AccessPolicyUnreadable=1", "AccessPolicyUnreadable=1"]);
    expect(r.lines).toEqual([
      `warn access policy parameter could not be read; the current policy stays in force ${JSON.stringify({
        parameter: name,
        version: 1,
        error: `Parameter ${name} not found.`,
      })}`,
    ]);

    // Made again: version 1 of a new parameter, a different document, taken on the next tick.
    await put(name, policy("viewer"));
    await t.tick();
    expect(decide(source.current(), alice, CANCEL, false)).toMatchObject({ allowed: false });
    expect(r.metrics).toHaveLength(2);
    expect(r.lines.slice(1)).toEqual([
      `info access policy reloaded ${JSON.stringify({ parameter: name, version: 1, bindings: 1 })}`,
    ]);
    source.close();
  });

  it("a parameter that cannot be read at start: rejected with one line naming it (the front does not start)", async () => {
    const name = parameterName();
    const r = recordedObservability();
    await expect(
      parameterPolicySource(ssm, name, { logger: r.logger, metrics: r.meter, pollMs: 30_000 }),
    ).rejects.toThrow(`access policy parameter ${name} cannot be read: Parameter ${name} not found.`);
    expect(r.lines).toEqual([]);
  });

  it("a bad policy at start: rejected naming the parameter, its version and every problem", async () => {
    const name = parameterName();
    await put(name, policy("root"));
    const r = recordedObservability();
    await expect(
      parameterPolicySource(ssm, name, { logger: r.logger, metrics: r.meter, pollMs: 0 }),
    ).rejects.toThrow(
      `${name} (version 1): bindings[0].roles[0]: unknown role "root" (roles: viewer, operator, approver, admin)`,
    );
  });
});
