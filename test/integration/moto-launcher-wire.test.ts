/**
 * The moto launcher's answers are plain moto's, byte for byte, on the wire (local/moto-launcher.py,
 * point 3: the serializer's member lookup, the request id's draw, the request log line): the same
 * raw requests (DynamoDB and DynamoDB Streams JSON, as the SDKs and the stream poller send them) go
 * to the launcher and to a plain `moto_server`, and each answer's status, header names and body
 * must be the same text (but the Connection header: the launcher keeps connections open), after
 * the values that differ between any two motos (a creation time, a
 * stream label, a shard iterator's random id, an event id, a stream record's size, which counts
 * the creation time's digits) are replaced by a placeholder. A body that is the same before that
 * replacement must carry the same checksum header too. A request id must be 52 letters and
 * digits, as moto draws it, and the very id plain moto draws when both are seeded alike.
 * All of it twice: with the launcher spawned, and forked by the moto fork server
 * (local/moto-forkserver.py), each against a plain moto of its own.
 */
import { once } from "node:events";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalMoto, startLocalMoto } from "../../local/moto.js";
import { type MotoForkServer, startMotoForkServer } from "../../local/moto-fork.js";
import { parentOf } from "../support/moto.js";

let forkServer: MotoForkServer;
let launcher: string;
let plain: string;

beforeAll(async () => {
  forkServer = await startMotoForkServer(process.env.MOTO_PYTHON ?? "python3");
});

afterAll(async () => {
  await forkServer.stop();
});

interface Raw {
  status: number;
  headers: Record<string, string>;
  body: string;
}

async function send(endpoint: string, target: string, body: unknown): Promise<Raw> {
  const response = await fetch(endpoint, {
    method: "POST",
    headers: {
      "content-type": "application/x-amz-json-1.0",
      "x-amz-target": target,
      authorization:
        "AWS4-HMAC-SHA256 Credential=test/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=x",
    },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    headers: Object.fromEntries(response.headers),
    body: await response.text(),
  };
}

const TIMES =
  /("(?:CreationDateTime|CreationRequestDateTime|ApproximateCreationDateTime|LastUpdateToPayPerRequestDateTime|LastIncreaseDateTime|LastDecreaseDateTime)": ?)[0-9.eE+-]+/g;
const LABELS = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?/g;
const RANDOM = /("(?:ShardIterator|NextShardIterator|eventID)": ?)"[^"]*"/g;
// moto counts a stream record's size over its JSON, creation time included, whose digits vary.
const SIZES = /("SizeBytes": ?)\d+/g;

/** The answer with the values that differ between any two motos replaced by placeholders. */
function comparable(raw: Raw): { status: number; headers: string[]; body: string } {
  return {
    status: raw.status,
    headers: Object.keys(raw.headers)
      .filter((h) => h !== "date" && h !== "connection")
      .sort(),
    body: raw.body.replace(TIMES, "$1T").replace(LABELS, "L").replace(RANDOM, '$1"R"').replace(SIZES, "$1S"),
  };
}

/** Sends one request to both; returns the launcher's answer after checking it is plain moto's. */
async function both(target: string, body: unknown): Promise<Raw> {
  const ours = await send(launcher, target, body);
  const theirs = await send(plain, target, body);
  expect(comparable(ours), target).toEqual(comparable(theirs));
  if (ours.body === theirs.body) expect(ours.headers["x-amz-crc32"]).toBe(theirs.headers["x-amz-crc32"]);
  const id = ours.headers["x-amzn-requestid"];
  if (id !== undefined) expect(id).toMatch(/^[A-Za-z0-9]{52}$/);
  return ours;
}

/**
 * POSTs `body` over a socket of its own with the header lines as given (latin-1), after the
 * signing and content headers and `Connection: close` (a malformed line ends the headers for
 * both servers alike); returns the answer read to the end.
 */
async function rawPost(endpoint: string, lines: string[], body: string): Promise<Raw> {
  const url = new URL(endpoint);
  const head = [
    "POST / HTTP/1.1",
    `Host: ${url.host}`,
    "Content-Type: application/x-amz-json-1.0",
    "Authorization: AWS4-HMAC-SHA256 Credential=test/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=x",
    `Content-Length: ${Buffer.byteLength(body)}`,
    "Connection: close",
    ...lines,
  ];
  const socket = connect(Number(url.port), url.hostname);
  const chunks: Buffer[] = [];
  socket.on("data", (chunk) => chunks.push(chunk));
  socket.write(Buffer.from(`${head.join("\r\n")}\r\n\r\n`, "latin1"));
  socket.write(body);
  await once(socket, "close");
  const text = Buffer.concat(chunks).toString("utf8");
  const split = text.indexOf("\r\n\r\n");
  const [status, ...headerLines] = text.slice(0, split).split("\r\n");
  const headers = Object.fromEntries(
    headerLines.map((line) => [
      line.slice(0, line.indexOf(":")).toLowerCase(),
      line.slice(line.indexOf(":") + 1).trim(),
    ]),
  );
  return { status: Number(status?.split(" ")[1]), headers, body: text.slice(split + 4) };
}

/**
 * Sends one request to each, with a body of its own (an ARN or iterator holds each moto's
 * creation time or random id); checks the answers are the same; returns both, ours first.
 */
async function pair(target: string, body: (server: 0 | 1) => unknown): Promise<[Raw, Raw]> {
  const ours = await send(launcher, target, body(0));
  const theirs = await send(plain, target, body(1));
  expect(comparable(ours), target).toEqual(comparable(theirs));
  return [ours, theirs];
}

async function eachOwn(target: string, body: (server: 0 | 1) => unknown): Promise<Raw> {
  return (await pair(target, body))[0];
}

async function eachOwnField(
  target: string,
  field: string,
  body: (server: 0 | 1) => unknown,
): Promise<string[]> {
  return (await pair(target, body)).map((raw) => JSON.parse(raw.body)[field] as string);
}

const DDB = (op: string) => `DynamoDB_20120810.${op}`;
const STREAMS = (op: string) => `DynamoDBStreams_20120810.${op}`;
const TABLE = "wire-vs-moto";

const item = (pk: string, sk: string, extra: Record<string, unknown> = {}) => ({
  pk: { S: pk },
  sk: { S: sk },
  g: { S: `g-${pk}` },
  n: { N: "1.50" },
  b: { B: "AAEC" },
  flag: { BOOL: true },
  none: { NULL: true },
  ss: { SS: ["x", "y"] },
  ns: { NS: ["1", "2.5"] },
  bs: { BS: ["AA==", "AQ=="] },
  l: { L: [{ S: "a" }, { N: "3" }, { M: { deep: { L: [{ BOOL: false }] } } }] },
  m: { M: { x: { N: "0" }, s: { S: "ü" }, empty: { M: {} } } },
  ...extra,
});

describe.each(["spawned", "forked"])(
  "the moto launcher's answers on the wire are plain moto's, %s",
  (how) => {
    const servers: LocalMoto[] = [];
    beforeAll(async () => {
      const FLOW_MOTO_FORKSERVER = how === "forked" ? forkServer.socketPath : "";
      const [a, b] = await Promise.all([
        startLocalMoto({ env: { FLOW_MOTO_FORKSERVER } }),
        startLocalMoto({ serialized: false }),
      ]);
      servers.push(a, b);
      expect([a.serialized, b.serialized]).toEqual([true, false]);
      expect(parentOf(a.pid()!)).toBe(how === "forked" ? forkServer.pid : process.pid);
      launcher = a.endpoint;
      plain = b.endpoint;
    });

    afterAll(async () => {
      for (const server of servers) await server.stop();
    });

    it("tables: create with an index and a stream, describe, list, time to live, errors", async () => {
      await both(DDB("CreateTable"), {
        TableName: TABLE,
        KeySchema: [
          { AttributeName: "pk", KeyType: "HASH" },
          { AttributeName: "sk", KeyType: "RANGE" },
        ],
        AttributeDefinitions: [
          { AttributeName: "pk", AttributeType: "S" },
          { AttributeName: "sk", AttributeType: "S" },
          { AttributeName: "g", AttributeType: "S" },
        ],
        GlobalSecondaryIndexes: [
          {
            IndexName: "byG",
            KeySchema: [{ AttributeName: "g", KeyType: "HASH" }],
            Projection: { ProjectionType: "ALL" },
          },
          {
            IndexName: "byGKeys",
            KeySchema: [
              { AttributeName: "g", KeyType: "HASH" },
              { AttributeName: "sk", KeyType: "RANGE" },
            ],
            Projection: { ProjectionType: "INCLUDE", NonKeyAttributes: ["n"] },
          },
        ],
        StreamSpecification: { StreamEnabled: true, StreamViewType: "NEW_AND_OLD_IMAGES" },
        BillingMode: "PAY_PER_REQUEST",
        Tags: [{ Key: "k", Value: "v" }],
      });
      const described = await both(DDB("DescribeTable"), { TableName: TABLE });
      expect(JSON.parse(described.body).Table.GlobalSecondaryIndexes).toHaveLength(2);
      await both(DDB("ListTables"), {});
      await both(DDB("UpdateTimeToLive"), {
        TableName: TABLE,
        TimeToLiveSpecification: { Enabled: true, AttributeName: "ttl" },
      });
      await both(DDB("DescribeTimeToLive"), { TableName: TABLE });
      await both(DDB("ListTagsOfResource"), { ResourceArn: JSON.parse(described.body).Table.TableArn });
      expect((await both(DDB("DescribeTable"), { TableName: "no-such-table" })).status).toBe(400);
      await both(DDB("CreateTable"), { TableName: TABLE });
    });

    it("items: every type, gets, batches, queries and scans with projections, updates, deletes, transactions, refusals", async () => {
      for (const pk of ["a", "b", "c"]) {
        for (const sk of ["1", "2"]) await both(DDB("PutItem"), { TableName: TABLE, Item: item(pk, sk) });
      }
      await both(DDB("PutItem"), {
        TableName: TABLE,
        Item: item("a", "1", { n: { N: "2" } }),
        ReturnValues: "ALL_OLD",
      });
      await both(DDB("GetItem"), { TableName: TABLE, Key: { pk: { S: "a" }, sk: { S: "1" } } });
      await both(DDB("GetItem"), { TableName: TABLE, Key: { pk: { S: "z" }, sk: { S: "1" } } });
      await both(DDB("GetItem"), {
        TableName: TABLE,
        Key: { pk: { S: "a" }, sk: { S: "1" } },
        ProjectionExpression: "l[2].deep, m.s, #n",
        ExpressionAttributeNames: { "#n": "n" },
        ReturnConsumedCapacity: "TOTAL",
      });
      await both(DDB("BatchGetItem"), {
        RequestItems: {
          [TABLE]: {
            Keys: [
              { pk: { S: "a" }, sk: { S: "1" } },
              { pk: { S: "b" }, sk: { S: "2" } },
              { pk: { S: "q" }, sk: { S: "2" } },
            ],
            ProjectionExpression: "pk, sk, ns",
          },
        },
        ReturnConsumedCapacity: "INDEXES",
      });
      await both(DDB("Query"), {
        TableName: TABLE,
        KeyConditionExpression: "pk = :p",
        ExpressionAttributeValues: { ":p": { S: "a" } },
        ScanIndexForward: false,
        Limit: 1,
      });
      await both(DDB("Query"), {
        TableName: TABLE,
        IndexName: "byGKeys",
        KeyConditionExpression: "g = :g AND sk > :s",
        ExpressionAttributeValues: { ":g": { S: "g-b" }, ":s": { S: "0" } },
        Select: "COUNT",
      });
      await both(DDB("Query"), {
        TableName: TABLE,
        IndexName: "byG",
        KeyConditionExpression: "g = :g",
        FilterExpression: "flag = :t",
        ProjectionExpression: "sk, m",
        ExpressionAttributeValues: { ":g": { S: "g-c" }, ":t": { BOOL: true } },
      });
      await both(DDB("Scan"), { TableName: TABLE, Limit: 4 });
      await both(DDB("UpdateItem"), {
        TableName: TABLE,
        Key: { pk: { S: "b" }, sk: { S: "1" } },
        UpdateExpression: "SET m.x = m.x + :one, l = list_append(l, :more) REMOVE none ADD ss :ss",
        ExpressionAttributeValues: {
          ":one": { N: "1" },
          ":more": { L: [{ NULL: true }] },
          ":ss": { SS: ["z"] },
        },
        ReturnValues: "UPDATED_NEW",
      });
      await both(DDB("UpdateItem"), {
        TableName: TABLE,
        Key: { pk: { S: "b" }, sk: { S: "1" } },
        UpdateExpression: "SET n = :n",
        ConditionExpression: "n > :n",
        ExpressionAttributeValues: { ":n": { N: "9" } },
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      });
      await both(DDB("UpdateItem"), {
        TableName: TABLE,
        Key: { pk: { S: "b" }, sk: { S: "1" } },
        UpdateExpression: "SET a = :a, a = :a",
        ExpressionAttributeValues: { ":a": { S: "x" } },
      });
      await both(DDB("TransactWriteItems"), {
        TransactItems: [
          { Put: { TableName: TABLE, Item: item("t", "1") } },
          {
            Update: {
              TableName: TABLE,
              Key: { pk: { S: "c" }, sk: { S: "2" } },
              UpdateExpression: "SET n = :n",
              ExpressionAttributeValues: { ":n": { N: "7" } },
            },
          },
        ],
      });
      await both(DDB("TransactWriteItems"), {
        TransactItems: [
          {
            ConditionCheck: {
              TableName: TABLE,
              Key: { pk: { S: "c" }, sk: { S: "2" } },
              ConditionExpression: "attribute_not_exists(pk)",
              ReturnValuesOnConditionCheckFailure: "ALL_OLD",
            },
          },
          { Delete: { TableName: TABLE, Key: { pk: { S: "a" }, sk: { S: "2" } } } },
        ],
      });
      await both(DDB("DeleteItem"), {
        TableName: TABLE,
        Key: { pk: { S: "c" }, sk: { S: "1" } },
        ReturnValues: "ALL_OLD",
      });
      await both(DDB("BatchWriteItem"), {
        RequestItems: {
          [TABLE]: [
            { PutRequest: { Item: item("w", "1") } },
            { DeleteRequest: { Key: { pk: { S: "t" }, sk: { S: "1" } } } },
          ],
        },
      });
      await both(DDB("PutItem"), { TableName: TABLE, Item: { pk: { S: "no sort key" } } });
    });

    it("streams: list, describe, iterators and records from the start and after the last", async () => {
      const arns = await Promise.all(
        [launcher, plain].map(
          async (endpoint) =>
            JSON.parse((await send(endpoint, DDB("DescribeTable"), { TableName: TABLE })).body).Table
              .LatestStreamArn as string,
        ),
      );
      await both(STREAMS("ListStreams"), { TableName: TABLE });
      const described = await eachOwn(STREAMS("DescribeStream"), (i) => ({ StreamArn: arns[i] }));
      const shardId = JSON.parse(described.body).StreamDescription.Shards[0].ShardId;
      let next = await eachOwnField(STREAMS("GetShardIterator"), "ShardIterator", (i) => ({
        StreamArn: arns[i],
        ShardId: shardId,
        ShardIteratorType: "TRIM_HORIZON",
      }));
      let records = 0;
      for (const limit of [3, 1000, 1000]) {
        const page = await pair(STREAMS("GetRecords"), (i) => ({ ShardIterator: next[i], Limit: limit }));
        records += JSON.parse(page[0].body).Records.length;
        next = page.map((raw) => JSON.parse(raw.body).NextShardIterator as string);
      }
      expect(records).toBeGreaterThan(10);
    });

    it("request ids: a seeded launcher draws plain moto's, in the same order", async () => {
      for (const seed of ["7", "2024"]) {
        for (const endpoint of [launcher, plain]) {
          expect((await fetch(`${endpoint}/moto-api/seed?a=${seed}`, { method: "POST" })).status).toBe(200);
        }
        for (const target of [DDB("ListTables"), DDB("DescribeTable"), STREAMS("ListStreams")]) {
          const [ours, theirs] = await pair(target, () => ({ TableName: TABLE }));
          expect(ours.headers["x-amzn-requestid"]).toBe(theirs.headers["x-amzn-requestid"]);
        }
      }
    });

    it("attribute values of every form the parser may meet, and projections that share a first name", async () => {
      const forms: Record<string, unknown>[] = [
        { x: { B: "AAEC" }, y: { M: { b: { B: "AQ==" }, l: { L: [{ BS: ["AA==", "AQI="] }, { B: "" }] } } } },
        { x: { S: "a", N: "1" } },
        { x: { S: null } },
        { x: { Q: "1" } },
        { x: { SS: "abc" } },
        { x: { L: [null] } },
        { x: { M: { a: null } } },
        { x: { M: [] } },
        { x: { L: {} } },
        { x: { B: "!!" } },
        { x: { BS: ["AA==", "!"] } },
        { x: { N: 5 } },
        { x: { BOOL: "yes" } },
        { x: { NULL: false } },
        { x: {} },
        { x: { S: "" } },
      ];
      for (const [i, extra] of forms.entries()) {
        await both(DDB("PutItem"), {
          TableName: TABLE,
          Item: { pk: { S: "form" }, sk: { S: String(i) }, ...extra },
        });
        await both(DDB("GetItem"), { TableName: TABLE, Key: { pk: { S: "form" }, sk: { S: String(i) } } });
      }
      // A blob is held decoded: its size is its bytes', not its base64 text's.
      const sized = await both(DDB("UpdateItem"), {
        TableName: TABLE,
        Key: { pk: { S: "form" }, sk: { S: "0" } },
        UpdateExpression: "SET z = :one",
        ConditionExpression: "size(x) = :three AND size(y.b) = :one AND size(y.l[0]) = :two",
        ExpressionAttributeValues: { ":one": { N: "1" }, ":two": { N: "2" }, ":three": { N: "3" } },
        ReturnValues: "ALL_NEW",
      });
      expect(sized.status).toBe(200);
      await both(DDB("PutItem"), {
        TableName: TABLE,
        Item: item("p", "1", {
          a: { M: { b: { S: "ab" }, c: { L: [{ N: "1" }, { M: { d: { S: "ad" }, e: { N: "2" } } }] } } },
          "a[1]": { S: "a name with brackets" },
          lst: { L: [{ L: [{ S: "00" }, { S: "01" }] }, { M: { f: { S: "1f" } } }] },
        }),
      });
      for (const projection of [
        "a, a.b",
        "a.b, a",
        "a.c[1].d, a.c[1].e, a.b",
        "a.c[1], a.c[1].d",
        "#x, a.b",
        "lst[0][1], lst[1].f, lst[0]",
        "lst[1], lst[1].f, lst[9], nothing.here",
        "m.s, m, m.x, l[2].deep[0]",
      ]) {
        await both(DDB("GetItem"), {
          TableName: TABLE,
          Key: { pk: { S: "p" }, sk: { S: "1" } },
          ProjectionExpression: projection,
          ...(projection.includes("#x") ? { ExpressionAttributeNames: { "#x": "a[1]" } } : {}),
        });
      }
    });

    it("request headers of every form: folded, blank, repeated, tabbed, latin-1, no space after the colon", async () => {
      const body = JSON.stringify({ TableName: TABLE, Key: { pk: { S: "a" }, sk: { S: "1" } } });
      const heads = [
        ["X-Amz-Target: DynamoDB_20120810.GetItem"],
        ["X-Amz-Target:DynamoDB_20120810.GetItem", "X-Folded: one", " two", "\tthree"],
        ["X-Amz-Target:\t DynamoDB_20120810.GetItem \t", "X-Blank:", "X-Same: 1", "x-same: 2"],
        ["X-Amz-Target: DynamoDB_20120810.GetItem", "X-Latin: caf\u00e9 \u00ff"],
        ["X-Amz-Target: DynamoDB_20120810.GetItem", "X Space: in the name"],
        ["X-Amz-Target: DynamoDB_20120810.GetItem", "no colon at all"],
        ["X-Amz-Target: DynamoDB_20120810.GetItem", ": no name"],
      ];
      for (const lines of heads) {
        const [ours, theirs] = await Promise.all([
          rawPost(launcher, lines, body),
          rawPost(plain, lines, body),
        ]);
        expect(comparable(ours), lines.join(" / ")).toEqual(comparable(theirs));
      }
    });
  },
);
