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
 */
import { execFileSync } from "node:child_process";
import type { TestProject } from "vitest/node";
import { startMoto } from "./moto.js";

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
  const given = process.env.AWS_ENDPOINT_URL;
  if (given !== undefined && given !== "") {
    project.provide("awsEndpoints", [given]);
    return async () => {};
  }
  const workers = Number(project.config.maxWorkers ?? project.vitest.config.maxWorkers ?? 1);
  const motos = await Promise.all(Array.from({ length: Math.max(1, workers) }, () => startMoto()));
  project.provide(
    "awsEndpoints",
    motos.map((m) => m.endpoint),
  );
  return async () => {
    await Promise.all(motos.map((m) => m.stop()));
  };
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
