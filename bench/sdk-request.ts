/**
 * What one AWS request costs the client's CPU: the product's own clients, built by its factories
 * (src/adapters/aws-config.ts: `createDynamoDbClient` with the document client as the stores wrap
 * it, src/adapters/dynamodb; `createAwsClient(SFNClient)` as the task steps build it,
 * src/service/aws.ts), send the stores' kinds of request to a canned endpoint in another process
 * (bench/lib/canned-aws.ts), so only the client's work is measured: marshalling, middleware,
 * signing, HTTP, parsing.
 *
 * Both configurations are measured in the same run: `main` is the clients as built before the
 * request-CPU settings (`new DynamoDBClient(dynamoDbClientConfig(...))`, `new SFNClient(awsClientConfig(...))`),
 * `product` as the factories build them now. For every operation, repetitions alternate the two
 * (A/B/A/B) after a warm-up of both; a repetition is N requests one after another, timed with
 * process.cpuUsage (user + system), and the table prints each one's median in µs per request.
 * Two deployments: `local` (a fixed endpoint and static credentials: moto, the tests, the local
 * stack) and `aws` (no endpoint: the SDK resolves the regional one through its rule set, and the
 * credentials come from the environment, as in Lambda; a bench-only middleware sends the signed
 * request to the canned endpoint instead).
 *
 *   npm run bench:sdk [-- --quick] [--n 600] [--reps 7] [--cpu-prof FILE [--profile main|product]]
 *
 * `--cpu-prof FILE` writes a V8 CPU profile (node:inspector) of one configuration's requests
 * (worker profile, local deployment) after the tables.
 */
import { fork } from "node:child_process";
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { resolve } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SendTaskHeartbeatCommand, SFNClient } from "@aws-sdk/client-sfn";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import {
  BatchGetCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import {
  type AwsOptions,
  awsClientConfig,
  createAwsClient,
  createDynamoDbClient,
  type DynamoDbProfile,
  dynamoDbClientConfig,
} from "../src/adapters/aws-config.js";
import { createDynamoStores, tableNames } from "../src/adapters/dynamodb/index.js";
import { describeMachine, machineFacts } from "./lib/machine.js";
import { processCpuSeconds } from "./lib/request-counter.js";
import { median } from "./lib/stats.js";
import { fixed, printTable } from "./lib/table.js";

const argv = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = argv.indexOf(name);
  return i < 0 ? undefined : argv[i + 1];
};
const quick = argv.includes("--quick");
const N = Number(flag("--n") ?? (quick ? 300 : 600));
const REPS = Number(flag("--reps") ?? (quick ? 3 : 7));
const WARMUP = Math.min(N, 300);
/** Rounds of WARMUP requests of every operation on both configurations before any is timed: V8 is still optimizing the SDK's code after the first thousands of requests. */
const WARMUP_ROUNDS = quick ? 2 : 3;
const cpuProf = flag("--cpu-prof");
const profiled = (flag("--profile") ?? "product") as Configuration;

type Configuration = "main" | "product";
const CONFIGURATIONS: readonly Configuration[] = ["main", "product"];

interface Clients {
  doc: DynamoDBDocumentClient;
  sfn: SFNClient;
  destroy(): void;
}

type Deployment = "local" | "aws";
const DEPLOYMENTS: readonly Deployment[] = ["local", "aws"];
const AWS_ENVIRONMENT = {
  AWS_ACCESS_KEY_ID: "ASIAEXAMPLEEXAMPLE00",
  AWS_SECRET_ACCESS_KEY: "bench/secret/access/key/EXAMPLEEXAMPLEEXAMPL",
  AWS_SESSION_TOKEN: "IQoJb3JpZ2luX2VjEXAMPLE//////////wEaCXVzLWVhc3QtMSJHMEUCIQDbenchtoken",
};

/** The clients a worker (a Lambda, the local dispatcher and child tasks) or the gRPC front builds. */
function clients(
  configuration: Configuration,
  deployment: Deployment,
  endpoint: string,
  profile: DynamoDbProfile,
): Clients {
  const aws: AwsOptions =
    deployment === "local" ? { endpoint, region: "us-east-1" } : { region: "us-east-1" };
  const dynamo =
    configuration === "main"
      ? new DynamoDBClient(dynamoDbClientConfig(profile, aws))
      : createDynamoDbClient({ ...aws, profile });
  const sfn =
    configuration === "main" ? new SFNClient(awsClientConfig(aws)) : createAwsClient(SFNClient, aws);
  if (deployment === "aws") {
    redirect(dynamo, endpoint);
    redirect(sfn, endpoint);
  }
  const stores = createDynamoStores(dynamo, tableNames("bench"));
  return {
    doc: stores.doc,
    sfn,
    destroy() {
      dynamo.destroy();
      sfn.destroy();
    },
  };
}

/** Sends the request, signed for its regional endpoint, to the canned endpoint (innermost, after signing). */
function redirect(client: DynamoDBClient | SFNClient, endpoint: string): void {
  const to = new URL(endpoint);
  (client as DynamoDBClient).middlewareStack.add(
    (next) => (args) => {
      const request = args.request as { protocol: string; hostname: string; port?: number };
      request.protocol = to.protocol;
      request.hostname = to.hostname;
      request.port = Number(to.port);
      return next(args);
    },
    { step: "deserialize", priority: "low", name: "benchRedirect" },
  );
}

const TABLE = "bench-tasks";
const key = (i: number) => ({ pk: `RUN#run-${i % 97}`, sk: `TASK#rack-${String(i).padStart(5, "0")}` });

/** The stores' kinds of request, shaped as they send them. */
type Operation = (c: Clients, i: number) => Promise<unknown>;
const OPERATIONS: Record<string, Operation> = {
  GetItem: (c, i) => c.doc.send(new GetCommand({ TableName: TABLE, Key: key(i), ConsistentRead: true })),
  UpdateItem: (c, i) =>
    c.doc.send(
      new UpdateCommand({
        TableName: TABLE,
        Key: key(i),
        UpdateExpression:
          "SET #state = :state, #version = :next, updatedAt = :at, steps = list_append(steps, :step)",
        ConditionExpression: "#version = :version",
        ExpressionAttributeNames: { "#state": "state", "#version": "version" },
        ExpressionAttributeValues: {
          ":state": "SUCCEEDED",
          ":version": 17,
          ":next": 18,
          ":at": "2026-12-05T17:25:00.000Z",
          ":step": [{ name: "verify", state: "SUCCEEDED", at: 1796491500000 }],
        },
        ReturnValues: "ALL_NEW",
      }),
    ),
  PutItem: (c, i) =>
    c.doc.send(
      new PutCommand({
        TableName: TABLE,
        Item: { ...key(i), kind: "event", at: 1796491500000, detail: { from: "RUNNING", to: "SUCCEEDED" } },
        ConditionExpression: "attribute_not_exists(pk)",
      }),
    ),
  Query: (c, i) =>
    c.doc.send(
      new QueryCommand({
        TableName: TABLE,
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues: { ":pk": key(i).pk, ":prefix": "TASK#" },
        Limit: 10,
      }),
    ),
  BatchGetItem: (c, i) =>
    c.doc.send(
      new BatchGetCommand({
        RequestItems: { [TABLE]: { Keys: Array.from({ length: 10 }, (_, k) => key(i * 10 + k)) } },
      }),
    ),
  TransactWriteItems: (c, i) =>
    c.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: TABLE,
              Key: key(i),
              UpdateExpression: "SET #state = :state, #version = :next",
              ConditionExpression: "#version = :version",
              ExpressionAttributeNames: { "#state": "state", "#version": "version" },
              ExpressionAttributeValues: { ":state": "SUCCEEDED", ":version": 17, ":next": 18 },
            },
          },
          {
            Put: {
              TableName: TABLE,
              Item: { ...key(i + 1), kind: "event", at: 1796491500000 },
              ConditionExpression: "attribute_not_exists(pk)",
            },
          },
          {
            ConditionCheck: {
              TableName: TABLE,
              Key: key(i + 2),
              ConditionExpression: "attribute_exists(pk)",
            },
          },
        ],
      }),
    ),
  SendTaskHeartbeat: (c, i) =>
    c.sfn.send(
      new SendTaskHeartbeatCommand({ taskToken: `AQCEAAAAKgAAAAMAAAAAAAAAAbG1pQ0eZ3mV3pVwPqkN7dF${i}` }),
    ),
};

/** CPU µs per request over `n` requests one after another. */
async function run(c: Clients, op: Operation, n: number): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < n; i += 1) await op(c, i);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / n;
}

async function connections(endpoint: string): Promise<number> {
  const response = await fetch(`${endpoint}/connections`, { headers: { connection: "close" } });
  return ((await response.json()) as { connections: number }).connections;
}

const machine = machineFacts();
const server = fork(resolve(import.meta.dirname, "lib/canned-aws.ts"), ["--serve-canned"], {
  execArgv: process.execArgv,
  stdio: ["ignore", "pipe", "inherit", "ipc"],
});
const port = await new Promise<number>((done, fail) => {
  server.stdout?.on("data", (chunk: Buffer) => {
    const match = /listening (\d+)/.exec(String(chunk));
    if (match) done(Number(match[1]));
  });
  server.on("exit", (code) => fail(new Error(`canned endpoint exited (${code})`)));
});
const endpoint = `http://127.0.0.1:${port}`;

console.log(describeMachine(machine).join("\n"));
console.log(
  `requests  ${N} per repetition, ${REPS} repetitions, one at a time, after ${WARMUP_ROUNDS} x ${WARMUP} of each to warm up\n`,
);

Object.assign(process.env, AWS_ENVIRONMENT);
for (const deployment of DEPLOYMENTS) {
  for (const profile of ["worker", "front"] as const) {
    await measure(deployment, profile);
  }
}

async function measure(deployment: Deployment, profile: DynamoDbProfile): Promise<void> {
  const built = Object.fromEntries(
    CONFIGURATIONS.map((c) => [c, clients(c, deployment, endpoint, profile)]),
  ) as Record<Configuration, Clients>;
  const samples = new Map<string, number[]>();
  const opened: Record<Configuration, number> = { main: 0, product: 0 };
  const timed = async (configuration: Configuration, op: Operation, n: number): Promise<number> => {
    const before = await connections(endpoint);
    const us = await run(built[configuration], op, n);
    // Less the one the count's own request opened.
    opened[configuration] += (await connections(endpoint)) - before - 1;
    return us;
  };
  for (let round = 0; round < WARMUP_ROUNDS; round += 1)
    for (const op of Object.values(OPERATIONS)) for (const c of CONFIGURATIONS) await timed(c, op, WARMUP);
  for (const [name, op] of Object.entries(OPERATIONS)) {
    for (let rep = 0; rep < REPS; rep += 1) {
      const order = rep % 2 === 0 ? CONFIGURATIONS : [...CONFIGURATIONS].reverse();
      for (const configuration of order) {
        const us = await timed(configuration, op, N);
        const k = `${name} ${configuration}`;
        samples.set(k, [...(samples.get(k) ?? []), us]);
      }
    }
  }
  const rows: string[][] = [];
  const totals: Record<Configuration, number> = { main: 0, product: 0 };
  for (const name of Object.keys(OPERATIONS)) {
    const m = median(samples.get(`${name} main`) ?? []);
    const p = median(samples.get(`${name} product`) ?? []);
    totals.main += m;
    totals.product += p;
    rows.push([name, fixed(m), fixed(p), fixed(p / m, 2)]);
  }
  const count = Object.keys(OPERATIONS).length;
  rows.push([
    "mean of the operations",
    fixed(totals.main / count),
    fixed(totals.product / count),
    fixed(totals.product / totals.main, 2),
  ]);
  console.log(`${deployment} deployment, ${profile} profile: client CPU µs per request (median of ${REPS})`);
  printTable(["request", "main", "product", "product/main"], rows);
  const requests = (WARMUP * WARMUP_ROUNDS + N * REPS) * count;
  console.log(
    `TCP connections opened: main ${opened.main}, product ${opened.product} (each over ${requests} requests)\n`,
  );
  for (const c of Object.values(built)) c.destroy();
}

if (cpuProf !== undefined) {
  const c = clients(profiled, "local", endpoint, "worker");
  for (const op of Object.values(OPERATIONS)) await run(c, op, WARMUP);
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 100 });
  await session.post("Profiler.start");
  for (const op of Object.values(OPERATIONS)) await run(c, op, N);
  const { profile } = await session.post("Profiler.stop");
  writeFileSync(cpuProf, JSON.stringify(profile));
  console.log(`CPU profile of the ${profiled} configuration's requests: ${cpuProf}`);
  c.destroy();
}

const serverCpu = processCpuSeconds(server.pid ?? 0);
console.log(`canned endpoint's CPU: ${fixed(serverCpu ?? Number.NaN, 2)} s`);
server.kill();
