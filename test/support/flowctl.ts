/**
 * flowctl in this process, as a test runs it: the command line, what it printed on standard output
 * and standard error, and its exit code. `flowctlAs` adds the endpoint and a client certificate
 * the test made (mutual TLS against a stack that verifies them).
 */
import { runCli } from "../../cli/program.js";
import type { Certificates } from "./certificates.js";

export interface FlowctlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function flowctlInProcess(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
): Promise<FlowctlResult> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli([...args], {
    stdout: { write: (t: string) => out.push(t) },
    stderr: { write: (t: string) => err.push(t) },
    env: { NO_COLOR: "1", ...env },
    interrupted: new Promise(() => {}),
  });
  return { code, stdout: out.join(""), stderr: err.join("") };
}

/** flowctl against `127.0.0.1:port` as the client `who` of `certs` (its `who.crt` and `who.key`). */
export function flowctlAs(
  port: number,
  certs: Certificates,
  who: string,
  ...args: string[]
): Promise<FlowctlResult> {
  return flowctlInProcess([
    "--endpoint",
    `127.0.0.1:${port}`,
    "--ca",
    certs.file("ca.crt"),
    "--cert",
    certs.file(`${who}.crt`),
    "--key",
    certs.file(`${who}.key`),
    ...args,
  ]);
}
