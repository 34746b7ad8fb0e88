/**
 * The moto fork server (local/moto-forkserver.py, local/moto-fork.ts): a forked launcher behaves to
 * local/moto.ts as a spawned one. It is the server's child with a real pid; it exits at once when
 * the process that asked for it dies (its connection is its lifeline), and the server reaps it;
 * SIGTERM makes its final snapshot and exit 0; its output and exit come back; it dies with the
 * server; (a second one on a data dir in use exits 1 naming the owner: moto-durability.test.ts,
 * forked in the suite); and when the server cannot be used (no server, a dead one, an environment moto was not
 * imported with), the launcher is spawned with one line said. (Its answers are a spawned
 * launcher's: test/integration/moto-launcher-wire.test.ts runs on both paths.)
 * Each test has a fork server and data dirs of its own; every wait is for an event, with a deadline.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateTableCommand, GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, type LocalMoto, startLocalMoto } from "../../local/moto.js";
import {
  type ForkedMoto,
  forkMoto,
  type MotoForkServer,
  startMotoForkServer,
} from "../../local/moto-fork.js";
import { parentOf, processGone, testClient } from "../support/moto.js";
import { until } from "../support/poll.js";

const ROOT = join(import.meta.dirname, "..", "..");
const PYTHON = process.env.MOTO_PYTHON ?? "python3";
const root = mkdtempSync(join(tmpdir(), "moto-forkserver-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// The tests run at once (each has its own server, ports and data dirs): their waits overlap.
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function server(): Promise<MotoForkServer> {
  const s = await startMotoForkServer(PYTHON);
  cleanups.push(() => s.stop());
  return s;
}

async function moto(options: Parameters<typeof startLocalMoto>[0]): Promise<LocalMoto> {
  const m = await startLocalMoto(options);
  cleanups.push(() => m.stop());
  return m;
}

const table = {
  TableName: "t",
  KeySchema: [{ AttributeName: "id", KeyType: "HASH" as const }],
  AttributeDefinitions: [{ AttributeName: "id", AttributeType: "S" as const }],
  BillingMode: "PAY_PER_REQUEST" as const,
};

describe.concurrent("a launcher forked by the moto fork server", () => {
  it("is the server's child with a real pid; when the process that asked for it is SIGKILLed it exits at once, is reaped, and frees its data dir", async () => {
    const s = await server();
    const dataDir = join(root, "lifeline");
    const asker: ChildProcess = spawn(
      process.execPath,
      ["--import", "tsx", join(ROOT, "test", "fixtures", "moto-asker.ts"), dataDir],
      {
        cwd: ROOT,
        env: { ...process.env, FLOW_MOTO_FORKSERVER: s.socketPath },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    cleanups.push(() => {
      if (asker.exitCode === null && asker.signalCode === null) asker.kill("SIGKILL");
    });
    let output = "";
    asker.stdout?.on("data", (d: Buffer) => {
      output += d.toString();
    });
    asker.stderr?.on("data", (d: Buffer) => {
      output += d.toString();
    });
    const [, pid] = await until("the asker's moto", () => /^moto (\d+) /m.exec(output) ?? undefined, 60_000);
    const motoPid = Number(pid);
    expect(parentOf(motoPid)).toBe(s.pid);

    asker.kill("SIGKILL");
    // Gone, not a zombie: the server reaped it.
    await until("the moto to exit and be reaped", () => processGone(motoPid), 20_000);
    // Its LOCK is free: a moto on the same data dir starts (a second one would wait, then refuse).
    const again = await moto({ dataDir, env: { FLOW_MOTO_FORKSERVER: s.socketPath } });
    expect(parentOf(again.pid()!)).toBe(s.pid);
  }, 90_000);

  it("SIGTERM: its final snapshot, exit 0 reported, and a start restores what it acknowledged", async () => {
    const s = await server();
    const dataDir = join(root, "sigterm");
    const port = await freePort();
    const forked: ForkedMoto = await forkMoto(
      s.socketPath,
      ["127.0.0.1", String(port), dataDir, "5000"],
      process.env,
      ROOT,
    );
    const out: string[] = [];
    forked.stdout.on("data", (d: Buffer) => out.push(d.toString()));
    const exit = new Promise<[number | null, string | null]>((resolve) =>
      forked.once("exit", (code, signal) => resolve([code, signal])),
    );
    cleanups.push(() => {
      forked.kill("SIGKILL");
    });
    const endpoint = `http://127.0.0.1:${port}`;
    const client = testClient(endpoint, 1);
    cleanups.push(() => client.destroy());
    await until(
      "the forked moto to answer",
      () =>
        fetch(`${endpoint}/moto-api/`).then(
          (r) => r.ok,
          () => false,
        ),
      30_000,
      100,
    );
    await client.send(new CreateTableCommand(table));
    await client.send(new PutItemCommand({ TableName: "t", Item: { id: { S: "kept" } } }));

    expect(forked.kill("SIGTERM")).toBe(true);
    expect(await exit).toEqual([0, null]);
    expect(out.join("")).toMatch(/^flow-moto: restored 0 items and replayed 0 logged writes from /);
    const files = readdirSync(dataDir).sort();
    const snapshot = files.find((f) => f.startsWith("snapshot-"));
    expect(snapshot, files.join(", ")).toBeDefined();
    expect(readFileSync(join(dataDir, snapshot!), "utf8")).toContain('"kept"');
    const log = files.filter((f) => f.startsWith("wal-"));
    expect(log.map((f) => readFileSync(join(dataDir, f), "utf8"))).toEqual([""]);

    const lines: string[] = [];
    const again = await moto({
      dataDir,
      port,
      env: { FLOW_MOTO_FORKSERVER: s.socketPath },
      log: (line) => lines.push(line),
    });
    expect(parentOf(again.pid()!)).toBe(s.pid);
    expect(lines.join("\n")).toMatch(/flow-moto: restored 1 items and replayed 0 logged writes/);
    const got = await client.send(new GetItemCommand({ TableName: "t", Key: { id: { S: "kept" } } }));
    expect(got.Item).toEqual({ id: { S: "kept" } });
  }, 90_000);

  it("its output and exit reach the supervisor: SIGKILL by its pid is an unexpected exit, restart() brings it back on the same port", async () => {
    const s = await server();
    const why: string[] = [];
    const m = await moto({
      dataDir: join(root, "sigkill"),
      env: { FLOW_MOTO_FORKSERVER: s.socketPath },
      onUnexpectedExit: (w) => why.push(w),
    });
    const first = m.pid()!;
    expect(parentOf(first)).toBe(s.pid);
    process.kill(first, "SIGKILL");
    await until("the unexpected exit", () => why.length > 0);
    expect(why).toEqual(["signal SIGKILL"]);
    await m.restart();
    expect(m.pid()).not.toBe(first);
    expect(parentOf(m.pid()!)).toBe(s.pid);
    const listed = await fetch(`${m.endpoint}/moto-api/`);
    expect(listed.status).toBe(200);
  }, 90_000);

  it("dies with the server: a server that ends takes its motos (SIGKILL), and the next start spawns, with one line", async () => {
    const s = await startMotoForkServer(PYTHON);
    const why: string[] = [];
    const lines: string[] = [];
    const m = await moto({
      env: { FLOW_MOTO_FORKSERVER: s.socketPath },
      onUnexpectedExit: (w) => why.push(w),
      log: (line) => lines.push(line),
    });
    expect(parentOf(m.pid()!)).toBe(s.pid);
    await s.stop();
    await until("the moto's exit", () => why.length > 0);
    expect(why).toEqual(["signal SIGKILL"]);
    await m.restart();
    expect(parentOf(m.pid()!)).toBe(process.pid);
    expect(lines).toEqual([
      `moto fork server ${s.socketPath} not used (connect ENOENT ${s.socketPath}): spawning moto`,
    ]);
  }, 90_000);
});

describe.concurrent("when the fork server cannot be used, the launcher is spawned, with one line", () => {
  it("no server on the socket: one line for the first start, none for the next", async () => {
    const socketPath = join(root, "nobody");
    const lines: string[] = [];
    const env = { FLOW_MOTO_FORKSERVER: socketPath };
    const a = await moto({ env, log: (line) => lines.push(line) });
    const b = await moto({ env, log: (line) => lines.push(line) });
    expect([parentOf(a.pid()!), parentOf(b.pid()!)]).toEqual([process.pid, process.pid]);
    expect(lines).toEqual([
      `moto fork server ${socketPath} not used (connect ENOENT ${socketPath}): spawning moto`,
    ]);
  }, 90_000);

  it("an environment moto was not imported with (a MOTO_ setting it reads at import): refused, spawned", async () => {
    const s = await server();
    const lines: string[] = [];
    const m = await moto({
      env: { FLOW_MOTO_FORKSERVER: s.socketPath, MOTO_S3_DEFAULT_MAX_KEYS: "7" },
      log: (line) => lines.push(line),
    });
    expect(parentOf(m.pid()!)).toBe(process.pid);
    expect(lines).toEqual([
      `moto fork server ${s.socketPath} not used (moto was imported with another MOTO_S3_DEFAULT_MAX_KEYS): spawning moto`,
    ]);
    // MOTO_ACCOUNT_ID is read per request: forked, and it answers as that account.
    const account = await moto({
      env: { FLOW_MOTO_FORKSERVER: s.socketPath, MOTO_ACCOUNT_ID: "000000000000" },
    });
    expect(parentOf(account.pid()!)).toBe(s.pid);
    const client = testClient(account.endpoint, 1);
    const created = await client.send(new CreateTableCommand(table));
    client.destroy();
    expect(created.TableDescription?.TableArn).toBe("arn:aws:dynamodb:us-east-1:000000000000:table/t");
  }, 90_000);
});
