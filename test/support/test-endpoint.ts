/**
 * The AWS endpoint (a moto) a test talks to: the integration and e2e projects' globalSetup
 * (test/support/global-setup.ts) starts one moto per worker of the run, and a test file uses its
 * worker's, so files running at once never queue behind each other on one moto (which serves one
 * request at a time), while the files a worker runs one after another reuse it (each on tables of
 * its own, under a unique prefix: freshTables in test/support/moto.ts).
 */
import { inject } from "vitest";

export function testEndpoint(): string {
  const endpoints = inject("awsEndpoints");
  // VITEST_POOL_ID: this worker's number, 1 to maxWorkers.
  const worker = Number(process.env.VITEST_POOL_ID ?? "1");
  const endpoint = endpoints[(worker - 1) % endpoints.length];
  if (endpoint === undefined)
    throw new Error("no AWS endpoint: the project has no globalSetup that starts one");
  return endpoint;
}
