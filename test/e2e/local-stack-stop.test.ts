/**
 * A local stack's stop, in order: the dispatcher's ticker stops first, then the gRPC server drains,
 * then the rest. A pass run during the drain would start tasks that the rest of the stop abandons;
 * a resume or an advance answered during the drain asks for a pass that is not run (the next life's
 * first pass finds the run).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rackGroup } from "../support/fixtures-inventory.js";
import { startTestStack, type TestStack } from "../support/stack.js";

const GROUP = rackGroup(190, { name: "stop", count: 1, types: ["COMPUTE"] });

describe("local stack e2e: stop", () => {
  let s: TestStack;
  beforeAll(async () => {
    s = await startTestStack({ label: "stop", groups: [GROUP] });
  });
  afterAll(() => s?.stop());

  it("stops the dispatcher's ticker before the gRPC server starts to drain, and logs it once", async () => {
    await s.stop();
    const ticker = s.logs.filter((l) => l.startsWith("ticker: stopped: "));
    const server = s.logs.filter((l) => l.includes("gRPC server shutting down"));
    expect(ticker).toHaveLength(1);
    expect(ticker[0]).toMatch(
      /^ticker: stopped: \d+ tick\(s\) run, \d+ skipped behind a running pass, 0 failed$/,
    );
    expect(server).toHaveLength(1);
    expect(s.logs.indexOf(ticker[0] as string)).toBeLessThan(s.logs.indexOf(server[0] as string));
  });
});
