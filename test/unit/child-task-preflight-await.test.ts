/**
 * AwaitPreflight (src/app/child-task/preflight.ts `awaitQueries`): AcquireLock's result names the
 * components it asked and how long the wait lasts; the wait stores its task token on the query
 * set with their entries, and wakes the execution itself when every answer is in already. And the
 * preflight's round trips: AcquireLock asks beside the RUNNING write, CheckPreflight reads the
 * rack's readiness beside the task. Memory stores typed from the ports.
 */
import { describe, expect, it } from "vitest";
import type { StepDeps } from "../../src/app/child-task/deps.js";
import { acquireLockAndAsk, awaitQueries, checkQueries } from "../../src/app/child-task/preflight.js";
import { DEFAULT_CHILD_TASK_SETTINGS, type PreflightState } from "../../src/app/child-task/settings.js";
import { silentLogger } from "../../src/app/observability.js";
import type { BmcAddress } from "../../src/domain/bmc-topics.js";
import { entryKey, queryAddress } from "../../src/domain/command-sets.js";
import { initialReport, serializeReport } from "../../src/domain/task-report.js";
import { runningTask } from "../support/domain-fixtures.js";
import {
  memoryCommandSetStore,
  memoryLockStore,
  memoryTaskStore,
  recordingOpens,
} from "../support/memory-child-task.js";
import { everyImage } from "../support/memory-images.js";

const report = initialReport(
  [
    { id: "c1", type: "COMPUTE" },
    { id: "p1", type: "POWERSHELF" },
  ],
  "2.0.0",
  false,
);
const task = runningTask({
  status: "PENDING",
  componentIds: ["c1", "p1"],
  updatedAt: 1_000,
  report: serializeReport(report),
});
const settings = DEFAULT_CHILD_TASK_SETTINGS;
const q = queryAddress(task.id, 0);
const keys = [entryKey(q, "c1"), entryKey(q, "p1")];

async function harness(
  tasks = memoryTaskStore(),
  onPublish: () => void = () => {},
  ask?: "wait",
  failPublish?: { componentId: string; times: number },
) {
  await tasks.createTask(task);
  const commands = memoryCommandSetStore();
  const woken: string[] = [];
  const published: string[] = [];
  const deps = {
    tasks,
    commands,
    locks: memoryLockStore(),
    clock: () => 2_000,
    logger: silentLogger,
    images: everyImage,
    publisher: {
      publish: async ({ componentId }: BmcAddress) => {
        if (failPublish?.componentId === componentId && failPublish.times > 0) {
          failPublish.times -= 1;
          throw Object.assign(new Error(`publish to ${componentId} throttled`), { name: "BmcPublishError" });
        }
        published.push(componentId);
        onPublish();
      },
    },
    waveWaker: { wake: async (token: string) => void woken.push(token) },
  } as unknown as StepDeps;
  const preflight = (await acquireLockAndAsk(deps, {
    step: "acquireLock",
    taskId: task.id,
    rackId: task.rackId,
    settings,
    ...(ask === undefined ? {} : { ask }),
  })) as PreflightState & { status: string };
  const wait = (token: string, d: StepDeps = deps, p: PreflightState = preflight, rackId?: string) =>
    awaitQueries(d, {
      step: "awaitQueries",
      taskId: task.id,
      token,
      preflight: p,
      ...(rackId === undefined ? {} : { rackId }),
    });
  const answer = (id: string) =>
    commands.record(task.id, "q", { [entryKey(q, id)]: { status: { version: "1.0.0" } } });
  return { deps, commands, woken, published, preflight, wait, answer };
}

describe("AwaitPreflight: the preflight waits for its answers, woken when they are in", () => {
  it("AcquireLock's result names every component asked, and the wait lasts until the preflight's deadline at most", async () => {
    const h = await harness();
    expect(h.preflight).toMatchObject({
      status: "acquired",
      done: false,
      polls: 0,
      deadline: 2_000 + settings.preflightTimeoutSeconds * 1000,
      // The first poll's wait: what WaitForPreflight waited before AwaitPreflight, whatever the BMCs did.
      waitSeconds: settings.pollSeconds,
      asked: ["c1", "p1"],
      // Five of the longest polls (300 s) would pass the 60 s deadline: the deadline.
      awaitSeconds: settings.preflightTimeoutSeconds,
    });
    expect(h.published.sort()).toEqual(["c1", "p1"]);
  });

  it("stores its token with the asked components' entries and waits; the receiver's last answer is what wakes it", async () => {
    const h = await harness();
    await h.answer("c1");
    expect(await h.wait("tk-a")).toEqual({ woken: false });
    expect(h.woken).toEqual([]);
    expect((await h.commands.get(task.id, "q"))?.wake).toEqual({ token: "tk-a", keys });
  });

  it("every answer in before the token was stored (fast BMCs): it wakes the execution itself", async () => {
    const h = await harness();
    await h.answer("c1");
    await h.answer("p1");
    expect(await h.wait("tk-b")).toEqual({ woken: true });
    expect(h.woken).toEqual(["tk-b"]);
  });

  it("without a waker, or with nothing named as asked (a poll state from before AwaitPreflight), nothing is stored: the timeout runs the check", async () => {
    const h = await harness();
    const { waveWaker: _, ...bare } = h.deps;
    expect(await h.wait("tk-c", bare as StepDeps)).toEqual({ woken: false });
    const { asked: __, ...before } = h.preflight;
    expect(await h.wait("tk-d", h.deps, before)).toEqual({ woken: false });
    expect((await h.commands.get(task.id, "q"))?.wake).toBeUndefined();
    expect(h.woken).toEqual([]);
  });
});

describe("the preflight's queries and AwaitPreflight's token in one write (AcquireLock's ask \"wait\")", () => {
  const check = (h: Awaited<ReturnType<typeof harness>>, preflight: PreflightState) =>
    checkQueries({ ...h.deps, readiness: { rackComponents: async () => [] } } as unknown as StepDeps, {
      step: "checkQueries",
      taskId: task.id,
      rackId: task.rackId,
      settings,
      preflight,
    });

  it("AcquireLock makes the first ask and sends nothing; AwaitPreflight writes its queries with its token in one write, then publishes them", async () => {
    const h = await harness(memoryTaskStore(), () => {}, "wait");
    expect(h.preflight).toMatchObject({
      status: "acquired",
      deadline: 2_000 + settings.preflightTimeoutSeconds * 1000,
      asked: ["c1", "p1"],
      awaitSeconds: settings.preflightTimeoutSeconds,
      unsent: true,
    });
    expect(h.published).toEqual([]);
    expect(await h.commands.get(task.id, "q")).toBeUndefined();
    const { commands, opened } = recordingOpens(h.commands);
    const counted = {
      ...h.deps,
      commands: {
        ...commands,
        awaitAnswers: async () => {
          throw new Error("no token-only write");
        },
      },
    } as unknown as StepDeps;
    expect(await h.wait("tk-1", counted, h.preflight, task.rackId)).toEqual({ woken: false });
    expect(opened).toEqual([{ token: "tk-1", keys }]);
    expect(h.published.sort()).toEqual(["c1", "p1"]);
    const set = await h.commands.get(task.id, "q");
    expect(set?.wake).toEqual({ token: "tk-1", keys });
    expect(set?.entries[keys[0] as string]).toEqual({
      sentAt: 2_000,
      deadline: 2_000 + settings.preflightTimeoutSeconds * 1000,
    });
  });

  it("a publish that failed: BmcPublishError; the retried wait (a new token) publishes only the rest; one whose answers are all in wakes itself", async () => {
    const h = await harness(memoryTaskStore(), () => {}, "wait", { componentId: "p1", times: 1 });
    await expect(h.wait("tk-1", h.deps, h.preflight, task.rackId)).rejects.toMatchObject({
      name: "BmcPublishError",
      message: "publish to p1 throttled",
    });
    expect(h.published).toEqual(["c1"]);
    expect(await h.wait("tk-2", h.deps, h.preflight, task.rackId)).toEqual({ woken: false });
    expect(h.published).toEqual(["c1", "p1"]);
    expect((await h.commands.get(task.id, "q"))?.wake?.token).toBe("tk-2");
    await h.answer("c1");
    await h.answer("p1");
    expect(await h.wait("tk-3", h.deps, h.preflight, task.rackId)).toEqual({ woken: true });
    expect(h.woken).toEqual(["tk-3"]);
    expect(h.published).toEqual(["c1", "p1"]);
  });

  it("CheckPreflight after a wait that failed: never sent (no entry) → it asks the BMCs itself, from a fresh deadline, and polls; sent → it goes on as after any wait", async () => {
    const never = await harness(memoryTaskStore(), () => {}, "wait");
    const polled = await check(never, never.preflight);
    expect(never.published.sort()).toEqual(["c1", "p1"]);
    expect(polled).toMatchObject({
      done: false,
      polls: 1,
      deadline: 2_000 + settings.preflightTimeoutSeconds * 1000,
    });
    expect(polled).not.toHaveProperty("unsent");
    const sent = await harness(memoryTaskStore(), () => {}, "wait");
    await sent.wait("tk-1", sent.deps, sent.preflight, task.rackId);
    sent.published.length = 0;
    await sent.answer("c1");
    await sent.answer("p1");
    const done = await check(sent, sent.preflight);
    expect(done).toMatchObject({ done: true });
    expect(done).not.toHaveProperty("unsent");
    expect(sent.published).toEqual([]);
  });

  it("an AwaitPreflight of the definition before (no rack in its Payload) sends nothing, even for a poll state made unsent: its token alone, on no set here", async () => {
    const h = await harness(memoryTaskStore(), () => {}, "wait");
    expect(await h.wait("tk-1")).toEqual({ woken: false });
    expect(h.published).toEqual([]);
    expect(await h.commands.get(task.id, "q")).toBeUndefined();
  });
});

describe("the preflight's round trips", () => {
  it("AcquireLock publishes the queries while the RUNNING write is in flight, not after it", async () => {
    const inner = memoryTaskStore();
    let publishedOne!: () => void;
    const firstPublish = new Promise<void>((resolve) => {
      publishedOne = resolve;
    });
    // The RUNNING write completes only once a query went out: made in turn, the step would fail.
    const tasks: typeof inner = {
      ...inner,
      saveTask: async (...args) => {
        let timer: NodeJS.Timeout | undefined;
        const stuck = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error("the queries waited for the RUNNING write")), 2_000);
        });
        await Promise.race([firstPublish, stuck]).finally(() => clearTimeout(timer));
        return inner.saveTask(...args);
      },
    };
    const h = await harness(tasks, () => publishedOne());
    expect(h.preflight.status).toBe("acquired");
    expect(h.published.sort()).toEqual(["c1", "p1"]);
    expect((await inner.getTasks([task.id]))[0]?.status).toBe("RUNNING");
  });

  it("CheckPreflight reads the rack's readiness once every answer is in, from the task's rack whatever rack the state names; a poll that finds some missing reads no rack", async () => {
    const h = await harness();
    const asked: string[] = [];
    const readiness = {
      rackComponents: async (rackId: string) => {
        asked.push(rackId);
        // The named rack says c1 is in maintenance; the task's rack says nothing.
        return rackId === task.rackId
          ? []
          : [{ id: "c1", type: "COMPUTE", readiness: { state: "MAINTENANCE", reason: "in maintenance" } }];
      },
    };
    const check = (rackId: string) =>
      checkQueries({ ...h.deps, readiness } as unknown as StepDeps, {
        step: "checkQueries",
        taskId: task.id,
        rackId,
        settings,
        preflight: h.preflight,
      });
    await h.answer("c1");
    expect((await check(task.rackId)).done).toBe(false);
    expect(asked).toEqual([]);
    await h.answer("p1");
    expect((await check(task.rackId)).done).toBe(true);
    expect(asked).toEqual([task.rackId]);
    asked.length = 0;
    expect((await check("r-elsewhere")).done).toBe(true);
    expect(asked).toEqual([task.rackId]);
  });
});
