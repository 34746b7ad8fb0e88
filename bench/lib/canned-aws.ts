/**
 * A stand-in AWS endpoint that answers every request at once with a canned, valid response: the
 * DynamoDB operations the stores send (GetItem, UpdateItem, Query, BatchGetItem,
 * TransactWriteItems, PutItem) and Step Functions' SendTaskHeartbeat, chosen by the JSON
 * protocols' X-Amz-Target. It does no work per request beyond reading the body, so a benchmark in
 * another process measures its client's CPU alone. Run as a process of its own (bench/sdk-request.ts
 * forks it): it prints `listening <port>` and serves until killed.
 *
 * It keeps connections alive (HTTP/1.1, as DynamoDB does) and counts the TCP connections it
 * accepted, which `GET /connections` answers: a client that opens one per request shows it.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { crc32 } from "node:zlib";

/** A task item as the stores keep it: keys, strings, numbers, a map and a list (about 0.6 KB). */
export function cannedItem(i: number): Record<string, unknown> {
  return {
    pk: { S: `RUN#run-${i % 97}` },
    sk: { S: `TASK#rack-${String(i).padStart(5, "0")}` },
    kind: { S: "task" },
    state: { S: "RUNNING" },
    rackId: { S: `rack-${String(i).padStart(5, "0")}` },
    wave: { N: String(i % 8) },
    attempt: { N: "1" },
    version: { N: String(17 + (i % 5)) },
    updatedAt: { S: "2026-12-05T17:25:00.000Z" },
    leaseUntil: { N: "1796491500000" },
    steps: {
      L: [
        { M: { name: { S: "precheck" }, state: { S: "SUCCEEDED" }, at: { N: "1796491400000" } } },
        { M: { name: { S: "update" }, state: { S: "RUNNING" }, at: { N: "1796491450000" } } },
      ],
    },
    firmware: {
      M: {
        bmc: { S: "1.14.2" },
        bios: { S: "2.3.0" },
        gpu: { S: "96.00.A5.00.01" },
        nic: { S: "28.41.1000" },
      },
    },
    labels: { SS: ["pool-a", "row-12"] },
    token: { S: "AQCEAAAAKgAAAAMAAAAAAAAAAbG1pQ0eZ3mV3pVwPqkN7dFJ8b3e2d1c0b9a8f7e6d5c4b3a2" },
  };
}

function body(target: string): { status: number; json: unknown } {
  switch (target) {
    case "DynamoDB_20120810.GetItem":
      return { status: 200, json: { Item: cannedItem(1) } };
    case "DynamoDB_20120810.UpdateItem":
      return { status: 200, json: { Attributes: cannedItem(2) } };
    case "DynamoDB_20120810.PutItem":
      return { status: 200, json: {} };
    case "DynamoDB_20120810.Query": {
      const items = Array.from({ length: 10 }, (_, i) => cannedItem(i));
      return { status: 200, json: { Items: items, Count: items.length, ScannedCount: items.length } };
    }
    case "DynamoDB_20120810.BatchGetItem":
      return {
        status: 200,
        json: {
          Responses: { "bench-tasks": Array.from({ length: 10 }, (_, i) => cannedItem(i)) },
          UnprocessedKeys: {},
        },
      };
    case "DynamoDB_20120810.TransactWriteItems":
      return { status: 200, json: {} };
    case "AWSStepFunctions.SendTaskHeartbeat":
      return { status: 200, json: {} };
    default:
      return {
        status: 400,
        json: {
          __type: "com.amazon.coral.service#UnknownOperationException",
          message: `no canned answer for ${target}`,
        },
      };
  }
}

/** The canned answers, encoded once: the server's own CPU per request is a lookup and a write. */
const encoded = new Map<string, { status: number; payload: Buffer; crc: string }>();
function answer(target: string): { status: number; payload: Buffer; crc: string } {
  let found = encoded.get(target);
  if (found === undefined) {
    const { status, json } = body(target);
    const payload = Buffer.from(JSON.stringify(json));
    found = { status, payload, crc: String(crc32(payload)) };
    encoded.set(target, found);
  }
  return found;
}

export async function serveCanned(): Promise<number> {
  let connections = 0;
  let requests = 0;
  const server = createServer((request, response) => {
    request.on("data", () => {});
    request.on("end", () => {
      if (request.method === "GET" && request.url === "/connections") {
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify({ connections, requests }));
        return;
      }
      requests += 1;
      const target = String(request.headers["x-amz-target"] ?? "");
      const { status, payload, crc } = answer(target);
      response.writeHead(status, {
        "content-type": "application/x-amz-json-1.0",
        "content-length": payload.length,
        "x-amzn-requestid": "CANNEDREQUESTID0000000000000000000000000000000000",
        "x-amz-crc32": crc,
      });
      response.end(payload);
    });
  });
  server.on("connection", () => {
    connections += 1;
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

if (process.argv.includes("--serve-canned")) {
  const port = await serveCanned();
  console.log(`listening ${port}`);
}
