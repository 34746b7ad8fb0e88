/**
 * The access policy from an SSM parameter (what the CDK app deploys for the Fargate front): read
 * once at start, then polled. Each poll asks for the parameter and parses it only when its
 * Version (or its text) changed; the new document goes through the same holder as a policy file's reload
 * (src/adapters/grpc/access-policy-source.ts), so a good version is in force at once (one info
 * line) and a bad one is refused (one error line naming every problem, AccessPolicyRejected),
 * the previous policy staying. Each version is judged once: a refused one is not logged again.
 *
 * At start a parameter that cannot be read, or whose policy is bad, rejects (the front does not
 * start). Later, a read that fails keeps the policy in force: one warn line when reads start
 * failing, AccessPolicyUnreadable per failed read, and the next poll tries again.
 */
import { GetParameterCommand, type SSMClient } from "@aws-sdk/client-ssm";
import type { Logger, Metrics } from "../../app/observability.js";
import type { AccessPolicy } from "../../domain/access-policy.js";
import { parseAccessPolicy, policyHolder } from "../grpc/access-policy-source.js";

/** Starts calling `poll` every `ms`; returns how to stop. Injected in tests (a poll never rejects). */
export type Every = (ms: number, poll: () => Promise<void>) => () => void;

const everyInterval: Every = (ms, poll) => {
  const timer = setInterval(() => void poll(), ms);
  timer.unref();
  return () => clearInterval(timer);
};

export interface ParameterPolicySource {
  readonly parameter: string;
  /** The policy in force. */
  current(): AccessPolicy;
  /** One poll: reads the parameter, and parses and offers it when its version changed. */
  poll(): Promise<void>;
  /** Stops polling. */
  close(): void;
}

/** The parameter's text and version; throws what the SDK throws. */
async function readParameter(ssm: SSMClient, name: string): Promise<{ text: string; version: number }> {
  const out = await ssm.send(new GetParameterCommand({ Name: name }));
  return { text: out.Parameter?.Value ?? "", version: out.Parameter?.Version ?? 0 };
}

/**
 * The policy of parameter `name`, polled every `pollMs` (0: never). Rejects with one line naming
 * the parameter when it cannot be read or holds a bad policy.
 */
export async function parameterPolicySource(
  ssm: SSMClient,
  name: string,
  deps: { logger: Logger; metrics: Metrics; pollMs: number; every?: Every },
): Promise<ParameterPolicySource> {
  let first: { text: string; version: number };
  try {
    first = await readParameter(ssm, name);
  } catch (err) {
    throw new Error(`access policy parameter ${name} cannot be read: ${(err as Error).message}`);
  }
  const label = `${name} (version ${first.version})`;
  const held = policyHolder(parseAccessPolicy(label, first.text), deps);
  let seen = first;
  let failing = false;
  let inFlight: Promise<void> | undefined;

  const check = async (): Promise<void> => {
    let read: { text: string; version: number };
    try {
      read = await readParameter(ssm, name);
    } catch (err) {
      if (!failing) {
        deps.logger.warn("access policy parameter could not be read; the current policy stays in force", {
          parameter: name,
          version: seen.version,
          error: (err as Error).message,
        });
      }
      failing = true;
      deps.metrics.add("AccessPolicyUnreadable", 1);
      deps.metrics.flush();
      return;
    }
    failing = false;
    // The version says a change; the text too, for a parameter deleted and made again (version 1).
    if (read.version === seen.version && read.text === seen.text) return;
    seen = read;
    held.offer({ parameter: name, version: read.version }, () =>
      parseAccessPolicy(`${name} (version ${read.version})`, read.text),
    );
  };
  // One read at a time: a slow read is not overtaken by the next tick.
  const poll = (): Promise<void> => {
    inFlight ??= check().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
  const stop = deps.pollMs > 0 ? (deps.every ?? everyInterval)(deps.pollMs, poll) : () => {};
  return { parameter: name, current: held.current, poll, close: stop };
}
