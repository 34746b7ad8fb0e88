/**
 * vitest globalSetup for the integration and e2e projects: one moto_server for the whole run
 * (unless AWS_ENDPOINT_URL names a running endpoint), its URL provided to tests:
 *
 *   import { inject } from "vitest";
 *   const endpoint = inject("awsEndpoint");
 *
 * Suites isolate themselves with freshTables() (test/support/moto.ts), not by resetting moto, so
 * test files can run in parallel against one server.
 */
import type { TestProject } from "vitest/node";
import { startMoto } from "./moto.js";

declare module "vitest" {
  export interface ProvidedContext {
    awsEndpoint: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Dummy credentials and a region for every SDK client the tests build (moto accepts any).
  process.env.AWS_ACCESS_KEY_ID ??= "test";
  process.env.AWS_SECRET_ACCESS_KEY ??= "test";
  process.env.AWS_REGION ??= "us-east-1";
  const given = process.env.AWS_ENDPOINT_URL;
  if (given !== undefined && given !== "") {
    project.provide("awsEndpoint", given);
    return async () => {};
  }
  const moto = await startMoto();
  project.provide("awsEndpoint", moto.endpoint);
  return () => moto.stop();
}
