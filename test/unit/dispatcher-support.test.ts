import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FLOW_METRICS } from "../../infra/constructs/observability.js";
import { startTicker } from "../../local/ticker.js";
import { powertoolsObservability } from "../../src/adapters/observability/powertools.js";
import { createDispatcher, forEachLimited } from "../../src/app/dispatcher.js";
import { lineLogger } from "../../src/app/observability.js";
import type { ChildTaskSubmitter, RunStore } from "../../src/app/ports.js";
import { type CapturedOutput, captureOutput } from "../support/captured-output.js";
import { clockOf } from "../support/clock.js";
import { until } from "../support/poll.js";

/** A RunStore whose every method fails the test unless `methods` gives it. */
function runStoreWith(methods: Partial<RunStore>): RunStore {
  const unexpected = (name: string) => () => Promise.reject(new Error(`RunStore.${name} was not expected`));
  return {
    createRun: unexpected("createRun"),
    getClientRequest: unexpected("getClientRequest"),
    getRun: unexpected("getRun"),
    getRunSecrets: unexpected("getRunSecrets"),
    listRuns: unexpected("listRuns"),
    listTargets: unexpected("listTargets"),
    getTarget: unexpected("getTarget"),
    listActiveRunIds: unexpected("listActiveRunIds"),
    getRunForDispatch: unexpected("getRunForDispatch"),
    listDueRuns: unexpected("listDueRuns"),
    deferRun: unexpected("deferRun"),
    saveRun: unexpected("saveRun"),
    listRunEvents: unexpected("listRunEvents"),
    appendRunEvent: unexpected("appendRunEvent"),
    listQueuedTargets: unexpected("listQueuedTargets"),
    claimTarget: unexpected("claimTarget"),
    claimTargets: unexpected("claimTargets"),
    recordSubmitted: unexpected("recordSubmitted"),
    recordBlocked: unexpected("recordBlocked"),
    recordOutcome: unexpected("recordOutcome"),
    skipTargets: unexpected("skipTargets"),
    restartConflictClock: unexpected("restartConflictClock"),
    recordPriorVersions: unexpected("recordPriorVersions"),
    recordLateFailure: unexpected("recordLateFailure"),
    ...methods,
  };
}

const noSubmissions: ChildTaskSubmitter = {
  submit: () => Promise.reject(new Error("submit was not expected")),
  cancel: () => Promise.reject(new Error("cancel was not expected")),
};

describe("dispatcher tick: TickOverrunMs, the metric the TickOverrun alarm watches", () => {
  /** A dispatcher over two active runs whose passes take 4 s each on the test clock. */
  function twoSlowRuns() {
    let now = 1_000_000;
    // The dispatcher Lambda's own metrics, as its root builds them.
    const { metrics } = powertoolsObservability("dispatcher");
    const runs = runStoreWith({
      listActiveRunIds: async () => {
        now += 100;
        return ["run-a", "run-b"];
      },
      // run-a is gone by the time its pass reads it; reading run-b fails: both cost 4 s.
      getRunForDispatch: async (runId) => {
        now += 4_000;
        if (runId === "run-b") throw new Error("ProvisionedThroughputExceededException");
        return undefined;
      },
    });
    const dispatcher = createDispatcher({
      runs,
      submitter: noSubmissions,
      clock: clockOf(() => now),
      metrics,
    });
    return { dispatcher, lines: () => output.json() };
  }
  let output: CapturedOutput;
  beforeEach(() => {
    output = captureOutput();
  });
  afterEach(() => output.restore());

  it("a tick emits the whole pass over every active run, failed passes included, in its own EMF line", async () => {
    const { dispatcher, lines } = twoSlowRuns();
    expect(await dispatcher.tick()).toEqual({ runs: 2, failed: 1, submitted: 0 });
    // One line per run's pass (its latency), then the tick's.
    expect(lines().map((l) => Object.keys(l).filter((k) => k !== "_aws" && k !== "Service"))).toEqual([
      ["DispatchLatencyMs"],
      ["DispatchLatencyMs"],
      ["TickOverrunMs"],
    ]);
    expect(lines().at(-1)).toEqual({
      _aws: {
        Timestamp: expect.any(Number),
        CloudWatchMetrics: [
          {
            Namespace: "Flow",
            Dimensions: [["Service"]],
            Metrics: [{ Name: FLOW_METRICS.tickOverrunMs, Unit: "Milliseconds" }],
          },
        ],
      },
      Service: "dispatcher",
      TickOverrunMs: 8_100,
    });
  });

  it("a wake-up pass for one run (dispatchRun) is not a tick and emits no TickOverrunMs", async () => {
    const { dispatcher, lines } = twoSlowRuns();
    expect((await dispatcher.dispatchRun("run-a")).decision).toBe("not-found");
    expect(lines().flatMap((l) => Object.keys(l))).not.toContain("TickOverrunMs");
    expect(lines()).toHaveLength(1);
  });
});

describe("dispatcher helpers", () => {
  it("forEachLimited never runs more than the limit at once and still visits every item", async () => {
    let active = 0;
    let peak = 0;
    const seen: number[] = [];
    await forEachLimited([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
      active++;
      peak = Math.max(peak, active);
      await new Promise((r) => setTimeout(r, 5));
      seen.push(n);
      active--;
    });
    expect(peak).toBe(3);
    expect(seen.sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it("forEachLimited rejects with the first error after every item ran", async () => {
    const seen: number[] = [];
    await expect(
      forEachLimited([1, 2, 3], 1, async (n) => {
        seen.push(n);
        if (n === 2) throw new Error("two");
      }),
    ).rejects.toThrow("two");
    expect(seen).toEqual([1, 2, 3]);
  });

  it("lineLogger writes level, message and fields on one line", () => {
    const lines: string[] = [];
    lineLogger((l) => lines.push(l)).warn("dispatch pass failed", { runId: "r1", n: 2 });
    expect(lines).toEqual(["warn dispatch pass failed runId=r1 n=2"]);
  });
});

describe("local ticker", () => {
  it("never overlaps passes: the ticks a running pass skips are logged as one streak", async () => {
    const log: string[] = [];
    let running = 0;
    let peak = 0;
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const ticker = startTicker({
      intervalMs: 10,
      log: (l) => log.push(l),
      tick: async () => {
        running++;
        peak = Math.max(peak, running);
        // The first pass runs until the test releases it; later ones end at once.
        await held;
        running--;
      },
    });
    await until("three ticks skipped behind the held pass", () => ticker.stats.skipped >= 3);
    expect(ticker.stats.ticks).toBe(1);
    // However many ticks the pass skips, one line while it runs...
    expect(log).toHaveLength(1);
    expect(log[0]).toMatch(/^ticker: previous pass still running after \d+ ms; tick skipped$/);
    release();
    await until("a second pass", () => ticker.stats.ticks >= 2);
    await ticker.stop();
    // ...and one when it ends, counting the rest.
    const skipped = ticker.stats.skipped;
    expect(log).toHaveLength(3);
    expect(log[1]).toMatch(
      new RegExp(
        `^ticker: previous pass still running after \\d+ ms; tick skipped: repeated ${skipped - 1} more times over \\d+ ms$`,
      ),
    );
    expect(log[2]).toBe(
      `ticker: stopped: ${ticker.stats.ticks} tick(s) run, ${skipped} skipped behind a running pass, 0 failed`,
    );
    expect(peak).toBe(1);
  });

  it("once stopped it starts no pass: stop waits for the running one, and a pass asked for after it runs none", async () => {
    const log: string[] = [];
    let passes = 0;
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const ticker = startTicker({
      intervalMs: 60_000,
      log: (l) => log.push(l),
      tick: async () => {
        passes++;
        await held;
      },
    });
    const running = ticker.runNow();
    expect(passes).toBe(1);
    let stopped = false;
    const stopping = ticker.stop().then(() => {
      stopped = true;
    });
    // Asked while stopping: the running pass's promise, no second pass.
    expect(ticker.runNow()).toBe(running);
    // The stop waits for the held pass (it has not logged its line yet).
    expect(log).toEqual([]);
    release();
    await stopping;
    expect(stopped).toBe(true);
    await ticker.runNow();
    await ticker.stop();
    expect(passes).toBe(1);
    expect(ticker.stats.ticks).toBe(1);
    expect(log).toEqual(["ticker: stopped: 1 tick(s) run, 0 skipped behind a running pass, 0 failed"]);
  });

  it("failing passes: one line when they start failing, ticks back off, one line when a pass succeeds again", async () => {
    const log: string[] = [];
    let calls = 0;
    /** The pass that logged the recovery (the ticker goes on ticking until it is stopped). */
    let recoveredAt = 0;
    // The ticker's clock, moved by the test: while it stands still, a backoff never ends.
    let clock = 0;
    const ticker = startTicker({
      intervalMs: 5,
      maxBackoffMs: 40,
      now: () => clock,
      log: (l) => {
        log.push(l);
        if (l.includes("succeed again")) recoveredAt = calls;
      },
      tick: async () => {
        calls++;
        if (calls <= 2) throw new Error("moto is down");
      },
    });
    for (const failures of [1, 2]) {
      await until(`failed pass ${failures}`, () => ticker.stats.failed === failures);
      const backedOff = ticker.stats.backedOff;
      await until("ticks left out while backing off", () => ticker.stats.backedOff >= backedOff + 2);
      expect(calls).toBe(failures);
      clock += 1_000;
    }
    await until("a pass that succeeds", () => log.length >= 2);
    await ticker.stop();
    expect(recoveredAt).toBe(3);
    expect(log).toEqual([
      "ticker: dispatch pass failed: moto is down; backing off (up to 40 ms between passes) until one succeeds",
      "ticker: dispatch passes succeed again after 2 failed pass(es)",
      `ticker: stopped: ${ticker.stats.ticks} tick(s) run, ${ticker.stats.skipped} skipped behind a running pass, 2 failed`,
    ]);
  });
});
