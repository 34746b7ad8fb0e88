/**
 * vitest globalSetup for the integration and e2e projects: one moto_server per worker of the run
 * (unless AWS_ENDPOINT_URL names a running endpoint, which every worker then shares), their URLs
 * provided to tests; a test takes its worker's with testEndpoint() (test/support/test-endpoint.ts):
 *
 *   import { testEndpoint } from "../support/test-endpoint.js";
 *   const endpoint = testEndpoint();
 *
 * Suites isolate themselves with freshTables() (test/support/moto.ts), not by resetting moto, so
 * the files a worker runs one after another share its moto.
 *
 * The projects that use this setup share one set of motos, started by the first and stopped by the
 * last: vitest runs them in one group (sequence.groupOrder) whose workers take their numbers
 * (VITEST_POOL_ID) from one pool of 1 to maxWorkers, so two files running at once never have the
 * same number, whichever project each is in, and never share a moto. A set per project started
 * twice as many (each a second of Python's CPU), half of them idle at any time.
 *
 * Every other moto of the run (the restart lives', local-main's, the durability and store-outage
 * tests', the deploy rehearsal's) is forked by one moto fork server (local/moto-forkserver.py),
 * started here before them and named in FLOW_MOTO_FORKSERVER, which every process the tests start
 * inherits: a fork costs a tenth of a spawned launcher's second of Python imports. A run with
 * FLOW_MOTO_FORKSERVER set already (to "" for none) keeps that one; if the server cannot start,
 * every moto is spawned, as before.
 */
import { execFileSync } from "node:child_process";
import type { TestProject } from "vitest/node";
import { type MotoForkServer, startMotoForkServer } from "../../local/moto-fork.js";
import { type MotoServer, startMoto } from "./moto.js";

/** The run's motos, in the vitest process: each project loads this module anew, so on globalThis. */
interface SharedMotos {
  motos: Promise<MotoServer>[];
  /** The run's moto fork server, when this setup started one. */
  forkServer?: Promise<MotoForkServer | undefined>;
  /** Projects set up and not yet torn down. */
  users: number;
}
const SHARED = Symbol.for("flow.test.sharedMotos");
const holder = globalThis as { [SHARED]?: SharedMotos };

declare module "vitest" {
  export interface ProvidedContext {
    /** One endpoint per worker (VITEST_POOL_ID - 1), or the one AWS_ENDPOINT_URL names. */
    awsEndpoints: string[];
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Dummy credentials and a region for every SDK client the tests build (moto accepts any).
  process.env.AWS_ACCESS_KEY_ID ??= "test";
  process.env.AWS_SECRET_ACCESS_KEY ??= "test";
  process.env.AWS_REGION ??= "us-east-1";
  // The interpreter every moto of the run starts with (this run's, the stacks' and the spawned
  // ones', which inherit the environment), found once: a version manager's `python3` shim (pyenv)
  // costs a third of a second of CPU at each of the run's few dozen moto starts.
  process.env.MOTO_PYTHON ??= pythonExecutable();
  const shared = holder[SHARED] ?? { motos: [], users: 0 };
  holder[SHARED] = shared;
  shared.users += 1;
  if (shared.forkServer === undefined && process.env.FLOW_MOTO_FORKSERVER === undefined) {
    shared.forkServer = startMotoForkServer(process.env.MOTO_PYTHON).then(
      (server) => {
        process.env.FLOW_MOTO_FORKSERVER = server.socketPath;
        return server;
      },
      (error: Error) => {
        console.error(`${error.message}: every moto of this run is spawned`);
        return undefined;
      },
    );
  }
  await shared.forkServer;
  const teardown = async () => {
    shared.users -= 1;
    if (shared.users > 0) return;
    delete holder[SHARED];
    await Promise.all(shared.motos.map(async (m) => (await m).stop()));
    const server = await shared.forkServer;
    if (server !== undefined) {
      delete process.env.FLOW_MOTO_FORKSERVER;
      await server.stop();
    }
  };
  const given = process.env.AWS_ENDPOINT_URL;
  if (given !== undefined && given !== "") {
    project.provide("awsEndpoints", [given]);
    return teardown;
  }
  const workers = Math.max(1, Number(project.config.maxWorkers ?? project.vitest.config.maxWorkers ?? 1));
  while (shared.motos.length < workers) shared.motos.push(startMoto());
  const motos = await Promise.all(shared.motos.slice(0, workers));
  project.provide(
    "awsEndpoints",
    motos.map((m) => m.endpoint),
  );
  return teardown;
}

/** The path of the python3 on PATH, through any shim; plain `python3` if it cannot say. */
function pythonExecutable(): string {
  try {
    return (
      execFileSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" }).trim() ||
      "python3"
    );
  } catch {
    return "python3";
  }
}
