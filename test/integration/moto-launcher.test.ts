/**
 * The moto launcher's shortcuts (local/moto-launcher.py, point 3: the item serializer, the update
 * expression's parse cache, tree copy and validator walks, the condition lexer's cache and its
 * parse kept within a request, the reserved words, the service lookup, a table's items sorted once
 * between writes, an item's size and a value's copy) answer exactly as moto's own code: the same
 * requests, in the same order, go to the launcher and to a plain `moto_server`, and every answer
 * (the item returned, or the error's name and message) and the tables at the end must be the same.
 * The requests are the expressions' awkward corners, valid and refused, each text sent more than
 * once (a cached parse or token list must not carry one request's names, values or item into the
 * next).
 */
import {
  type AttributeValue,
  BatchWriteItemCommand,
  CreateTableCommand,
  type CreateTableCommandInput,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalMoto, startLocalMoto } from "../../local/moto.js";
import { testClient } from "../support/moto.js";

const TABLE = "launcher-vs-moto";
const servers: LocalMoto[] = [];
let launcher: DynamoDBClient;
let plain: DynamoDBClient;

beforeAll(async () => {
  const [a, b] = await Promise.all([startLocalMoto(), startLocalMoto({ serialized: false })]);
  servers.push(a, b);
  expect([a.serialized, b.serialized]).toEqual([true, false]);
  launcher = testClient(a.endpoint, 1);
  plain = testClient(b.endpoint, 1);
  await createOnBoth(keyedTable(TABLE));
});

afterAll(async () => {
  for (const server of servers) await server.stop();
});

/** A table keyed by the strings pk and sk. */
function keyedTable(TableName: string): CreateTableCommandInput {
  return {
    TableName,
    KeySchema: [
      { AttributeName: "pk", KeyType: "HASH" },
      { AttributeName: "sk", KeyType: "RANGE" },
    ],
    AttributeDefinitions: [
      { AttributeName: "pk", AttributeType: "S" },
      { AttributeName: "sk", AttributeType: "S" },
    ],
    BillingMode: "PAY_PER_REQUEST",
  };
}

/** Creates the same table on the launcher and on plain moto. */
async function createOnBoth(input: CreateTableCommandInput): Promise<void> {
  for (const client of [launcher, plain]) await client.send(new CreateTableCommand(input));
}

type Answer = { attributes: Record<string, AttributeValue> | undefined } | { error: string; message: string };

async function answer(
  client: DynamoDBClient,
  send: (c: DynamoDBClient) => Promise<unknown>,
): Promise<Answer> {
  try {
    const out = (await send(client)) as { Attributes?: Record<string, AttributeValue> };
    return { attributes: out.Attributes };
  } catch (e) {
    const error = e as Error & { Item?: unknown };
    return { error: error.name, message: error.message };
  }
}

/** Sends one request to both; returns the launcher's answer after checking it is plain moto's. */
async function both(send: (c: DynamoDBClient) => Promise<unknown>): Promise<Answer> {
  const ours = await answer(launcher, send);
  const theirs = await answer(plain, send);
  expect(ours).toEqual(theirs);
  return ours;
}

const key = (pk: string) => ({ pk: { S: pk }, sk: { S: "s" } });
const update = (input: Omit<UpdateItemCommandInput, "TableName">) => (c: DynamoDBClient) =>
  c.send(new UpdateItemCommand({ TableName: TABLE, ReturnValues: "ALL_NEW", ...input }));

describe("the moto launcher answers as moto does", () => {
  it("index queries and scans between writes of every kind see every item added, changed and removed", async () => {
    const INDEXED = "launcher-vs-moto-indexed";
    await createOnBoth({
      TableName: INDEXED,
      KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
      AttributeDefinitions: [
        { AttributeName: "pk", AttributeType: "S" },
        { AttributeName: "name", AttributeType: "S" },
      ],
      GlobalSecondaryIndexes: [
        {
          IndexName: "byName",
          KeySchema: [{ AttributeName: "name", KeyType: "HASH" }],
          Projection: { ProjectionType: "ALL" },
        },
      ],
      BillingMode: "PAY_PER_REQUEST",
    });
    const item = (pk: string, name: string) => ({
      pk: { S: pk },
      name: { S: name },
      n: { N: pk.length.toString() },
    });
    const read = async () => {
      for (const name of ["x", "y"]) {
        const got = await both((c) =>
          c.send(
            new QueryCommand({
              TableName: INDEXED,
              IndexName: "byName",
              KeyConditionExpression: "#n = :n",
              ExpressionAttributeNames: { "#n": "name" },
              ExpressionAttributeValues: { ":n": { S: name } },
            }),
          ),
        );
        expect(got).toHaveProperty("attributes");
      }
      const [ours, theirs] = await Promise.all(
        [launcher, plain].map(async (c) => (await c.send(new ScanCommand({ TableName: INDEXED }))).Items),
      );
      expect(ours).toEqual(theirs);
      return ours?.map((i) => `${i.pk?.S}:${i.name?.S}`).sort();
    };
    const write = (send: (c: DynamoDBClient) => Promise<unknown>) => both(send);
    for (const pk of ["a", "b", "c"])
      await write((c) => c.send(new PutItemCommand({ TableName: INDEXED, Item: item(pk, "x") })));
    expect(await read()).toEqual(["a:x", "b:x", "c:x"]);
    await write((c) => c.send(new PutItemCommand({ TableName: INDEXED, Item: item("d", "x") })));
    expect(await read()).toEqual(["a:x", "b:x", "c:x", "d:x"]);
    await write((c) =>
      c.send(
        new UpdateItemCommand({
          TableName: INDEXED,
          Key: { pk: { S: "e" } },
          UpdateExpression: "SET #n = :y",
          ExpressionAttributeNames: { "#n": "name" },
          ExpressionAttributeValues: { ":y": { S: "y" } },
        }),
      ),
    );
    await write((c) =>
      c.send(
        new UpdateItemCommand({
          TableName: INDEXED,
          Key: { pk: { S: "a" } },
          UpdateExpression: "SET #n = :y",
          ExpressionAttributeNames: { "#n": "name" },
          ExpressionAttributeValues: { ":y": { S: "y" } },
        }),
      ),
    );
    expect(await read()).toEqual(["a:y", "b:x", "c:x", "d:x", "e:y"]);
    await write((c) => c.send(new DeleteItemCommand({ TableName: INDEXED, Key: { pk: { S: "b" } } })));
    await write((c) =>
      c.send(
        new BatchWriteItemCommand({
          RequestItems: {
            [INDEXED]: [
              { PutRequest: { Item: item("f", "y") } },
              { DeleteRequest: { Key: { pk: { S: "c" } } } },
            ],
          },
        }),
      ),
    );
    expect(await read()).toEqual(["a:y", "d:x", "e:y", "f:y"]);
    await write((c) =>
      c.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            { Put: { TableName: INDEXED, Item: item("g", "x") } },
            { Delete: { TableName: INDEXED, Key: { pk: { S: "d" } } } },
          ],
        }),
      ),
    );
    expect(await read()).toEqual(["a:y", "e:y", "f:y", "g:x"]);
  });

  it("table and index queries: key conditions, both directions, pages of one; each the same as moto's", async () => {
    const RANGED = "launcher-vs-moto-ranged";
    const keyed = keyedTable(RANGED);
    await createOnBoth({
      ...keyed,
      AttributeDefinitions: [
        ...(keyed.AttributeDefinitions ?? []),
        { AttributeName: "g", AttributeType: "S" },
        { AttributeName: "at", AttributeType: "N" },
      ],
      GlobalSecondaryIndexes: [
        {
          IndexName: "byG",
          KeySchema: [
            { AttributeName: "g", KeyType: "HASH" },
            { AttributeName: "at", KeyType: "RANGE" },
          ],
          Projection: { ProjectionType: "ALL" },
        },
      ],
    });
    // Written out of key order, with ties on the index's range key.
    for (const [pk, sk, g, at] of [
      ["p2", "b", "x", "3"],
      ["p1", "c", "x", "1"],
      ["p1", "a", "y", "2"],
      ["p2", "a", "x", "1"],
      ["p1", "b", "x", "10"],
      ["p3", "a", "x", "1"],
    ] as const) {
      await both((c) =>
        c.send(
          new PutItemCommand({
            TableName: RANGED,
            Item: { pk: { S: pk }, sk: { S: sk }, g: { S: g }, at: { N: at } },
          }),
        ),
      );
    }
    const pages = async (input: Omit<ConstructorParameters<typeof QueryCommand>[0], "TableName">) => {
      const seen: string[] = [];
      let start: Record<string, AttributeValue> | undefined;
      do {
        const query = () =>
          new QueryCommand({ TableName: RANGED, ...input, Limit: 1, ExclusiveStartKey: start });
        const [ours, theirs] = [await launcher.send(query()), await plain.send(query())];
        expect(ours.Items).toEqual(theirs.Items);
        expect(ours.LastEvaluatedKey).toEqual(theirs.LastEvaluatedKey);
        seen.push(...(ours.Items ?? []).map((i) => `${i.pk?.S}${i.sk?.S}`));
        start = ours.LastEvaluatedKey;
      } while (start !== undefined);
      return seen;
    };
    const p1 = { KeyConditionExpression: "pk = :p", ExpressionAttributeValues: { ":p": { S: "p1" } } };
    expect(await pages(p1)).toEqual(["p1a", "p1b", "p1c"]);
    expect(await pages({ ...p1, ScanIndexForward: false })).toEqual(["p1c", "p1b", "p1a"]);
    expect(
      await pages({
        KeyConditionExpression: "pk = :p AND sk BETWEEN :a AND :b",
        ExpressionAttributeValues: { ":p": { S: "p1" }, ":a": { S: "b" }, ":b": { S: "z" } },
      }),
    ).toEqual(["p1b", "p1c"]);
    const x = {
      IndexName: "byG",
      KeyConditionExpression: "g = :g",
      ExpressionAttributeValues: { ":g": { S: "x" } },
    };
    expect(await pages(x)).toEqual(["p1c", "p2a", "p3a", "p2b", "p1b"]);
    expect(await pages({ ...x, ScanIndexForward: false })).toEqual(["p1b", "p2b", "p3a", "p2a", "p1c"]);
    expect(
      await pages({ KeyConditionExpression: "pk = :p", ExpressionAttributeValues: { ":p": { S: "p9" } } }),
    ).toEqual([]);
  });

  it("valid updates: nested paths, list_append, if_not_exists, ADD, DELETE, REMOVE by index; each text twice", async () => {
    for (const pk of ["a", "b"]) {
      await both(
        update({
          Key: key(pk),
          UpdateExpression: "SET m = :m",
          ExpressionAttributeValues: { ":m": { M: { y: { L: [{ S: "p" }, { S: "q" }, { S: "r" }] } } } },
        }),
      );
    }
    for (const [pk, n] of [
      ["a", "1"],
      ["b", "7"],
      ["a", "2"],
    ] as const) {
      const made = await both(
        update({
          Key: key(pk),
          UpdateExpression:
            "SET #m.#x = if_not_exists(#m.#x, :zero) + :n, #l = list_append(if_not_exists(#l, :empty), :more), " +
            "#s = :s ADD #c :n, #set :tags",
          ConditionExpression: "attribute_not_exists(#gone) OR #c < :big",
          ExpressionAttributeNames: {
            "#m": "m",
            "#x": "x",
            "#l": "l",
            "#s": "status",
            "#c": "count",
            "#set": "tags",
            "#gone": "gone",
          },
          ExpressionAttributeValues: {
            ":zero": { N: "0" },
            ":n": { N: n },
            ":empty": { L: [] },
            ":more": { L: [{ S: `${pk}${n}` }, { N: n }] },
            ":s": { S: `s-${n}` },
            ":tags": { SS: [`t${n}`, "common"] },
            ":big": { N: "100" },
          },
        }),
      );
      expect(made).toHaveProperty("attributes");
    }
    for (const n of ["1", "2"]) {
      const made = await both(
        update({
          Key: key("a"),
          UpdateExpression: "SET m.x = m.x + :n, m.y[1] = :v REMOVE l[0], l[2] DELETE tags :gone",
          ExpressionAttributeValues: { ":n": { N: n }, ":v": { S: `v${n}` }, ":gone": { SS: ["common"] } },
        }),
      );
      expect(made).toHaveProperty("attributes");
    }
    const made = await both(
      update({
        Key: key("a"),
        UpdateExpression: "SET m.y = list_append(:front, m.y) REMOVE m.y[0]",
        ExpressionAttributeValues: { ":front": { L: [{ S: "f" }] } },
      }),
    );
    expect(made).toHaveProperty("attributes");
  });

  it("refused updates give moto's error and message, every time the same text comes", async () => {
    const refused: Omit<UpdateItemCommandInput, "TableName">[] = [
      // overlapping paths, two SET clauses, the key attribute, a reserved word, a missing placeholder,
      // an unused one, a syntax error, list_append on nothing, a type clash, a missing map's member
      {
        Key: key("a"),
        UpdateExpression: "SET m = :v, m.x = :v",
        ExpressionAttributeValues: { ":v": { N: "1" } },
      },
      {
        Key: key("a"),
        UpdateExpression: "SET a1 = :v SET a2 = :v",
        ExpressionAttributeValues: { ":v": { N: "1" } },
      },
      { Key: key("a"), UpdateExpression: "SET sk = :v", ExpressionAttributeValues: { ":v": { S: "t" } } },
      { Key: key("a"), UpdateExpression: "SET status = :v", ExpressionAttributeValues: { ":v": { S: "t" } } },
      {
        Key: key("a"),
        UpdateExpression: "SET a1 = :missing",
        ExpressionAttributeValues: { ":v": { S: "t" } },
      },
      {
        Key: key("a"),
        UpdateExpression: "SET a1 = :v",
        ExpressionAttributeValues: { ":v": { S: "t" }, ":w": { S: "u" } },
      },
      { Key: key("a"), UpdateExpression: "SET a1 = = :v", ExpressionAttributeValues: { ":v": { S: "t" } } },
      {
        Key: key("a"),
        UpdateExpression: "SET nothing = list_append(nothing, :l)",
        ExpressionAttributeValues: { ":l": { L: [] } },
      },
      { Key: key("a"), UpdateExpression: "ADD m :v", ExpressionAttributeValues: { ":v": { N: "1" } } },
      {
        Key: key("b"),
        UpdateExpression: "SET nomap.x = :v",
        ExpressionAttributeValues: { ":v": { N: "1" } },
      },
    ];
    for (const round of [1, 2]) {
      for (const input of refused) {
        const got = await both(update(input));
        expect(got, `round ${round}: ${input.UpdateExpression}`).toHaveProperty("error");
      }
    }
  });

  it("condition expressions: functions, IN, BETWEEN, size, nested paths, reserved words; held and failed, each text twice", async () => {
    const conditions: [string, Record<string, AttributeValue>, Record<string, string>?][] = [
      ["attribute_exists(m.x) AND size(l) >= :n", { ":n": { N: "1" } }],
      ["#c BETWEEN :lo AND :hi", { ":lo": { N: "0" }, ":hi": { N: "3" } }, { "#c": "count" }],
      ["#c BETWEEN :lo AND :hi", { ":lo": { N: "50" }, ":hi": { N: "60" } }, { "#c": "count" }],
      [
        "#s IN (:a, :b) OR begins_with(m.y[0], :p)",
        { ":a": { S: "x" }, ":b": { S: "s-2" }, ":p": { S: "f" } },
        { "#s": "status" },
      ],
      ["NOT (contains(tags, :t)) AND (m.x <> :zero)", { ":t": { S: "t2" }, ":zero": { N: "0" } }],
      ["attribute_type(m, :type) AND m.x > :n", { ":type": { S: "M" }, ":n": { N: "1000" } }],
      ["status = :v", { ":v": { S: "s-2" } }],
      ["a1 = :v AND (", { ":v": { S: "t" } }],
    ];
    for (const round of [1, 2]) {
      for (const [condition, values, names] of conditions) {
        await both(
          update({
            Key: key("a"),
            UpdateExpression: "SET touched = :round",
            ConditionExpression: condition,
            ExpressionAttributeValues: { ...values, ":round": { N: String(round) } },
            ...(names === undefined ? {} : { ExpressionAttributeNames: names }),
            ReturnValuesOnConditionCheckFailure: "ALL_OLD",
          }),
        );
      }
      // Puts and deletes parse their condition twice too: the same text with other values, held
      // then failed, and a name the condition does not use (refused by the placeholder check).
      const names = { "#c": "count" };
      for (const [bound, extra] of [
        ["0", {}],
        ["7", {}],
        ["7", { "#unused": "x" }],
      ] as const) {
        const condition = {
          ConditionExpression: "attribute_not_exists(#c) OR #c > :bound",
          ExpressionAttributeNames: { ...names, ...extra },
          ExpressionAttributeValues: { ":bound": { N: bound } },
        };
        await both((c) =>
          c.send(
            new PutItemCommand({
              TableName: TABLE,
              Item: { ...key("put"), count: { N: "5" }, round: { N: String(round) } },
              ReturnValues: "ALL_OLD",
              ...condition,
            }),
          ),
        );
        await both((c) =>
          c.send(
            new DeleteItemCommand({
              TableName: TABLE,
              Key: key("put"),
              ReturnValues: "ALL_OLD",
              ...condition,
            }),
          ),
        );
      }
    }
    await both((c) => c.send(new DeleteItemCommand({ TableName: TABLE, Key: key("put") })));
  });

  it("item sizes at the 400 KB limit, every type in them: puts, updates, transactions, pages of a query and key sizes as moto's", async () => {
    const SIZES = "launcher-vs-moto-sizes";
    await createOnBoth(keyedTable(SIZES));
    const updateSizes = (input: Omit<UpdateItemCommandInput, "TableName">) => (c: DynamoDBClient) =>
      c.send(new UpdateItemCommand({ TableName: SIZES, ReturnValues: "ALL_NEW", ...input }));
    const bytes = (...b: number[]) => new Uint8Array(b);
    // Every kind of value, nested, with multi-byte names and strings: each term of the sum counts.
    const varied: Record<string, AttributeValue> = {
      n: { N: "-12.5e3" },
      big: { N: "123456789012345678901234567890" },
      flag: { BOOL: true },
      nothing: { NULL: true },
      bin: { B: bytes(1, 2, 3, 250) },
      ss: { SS: ["a", "bé", "c"] },
      ns: { NS: ["1", "22", "-3.5"] },
      bs: { BS: [bytes(9), bytes(8, 7)] },
      m: {
        M: {
          deep: {
            M: {
              list: { L: [{ N: "1" }, { S: "é" }, { M: { x: { L: [{ BOOL: false }, { NULL: true }] } } }] },
            },
          },
          ké: { S: "v" },
        },
      },
      l: { L: [{ SS: ["x"] }, { L: [] }, { M: {} }, { NS: ["7"] }] },
    };
    const sized = (pk: string, padding: number): Record<string, AttributeValue> => ({
      ...key(pk),
      ...varied,
      pad: { S: "x".repeat(padding) },
    });
    const put = (item: Record<string, AttributeValue>) => (c: DynamoDBClient) =>
      c.send(new PutItemCommand({ TableName: SIZES, Item: item, ReturnValues: "ALL_OLD" }));
    // The longest padding plain moto takes, found on it alone; then both at the edge (keys of one
    // length, "prob", "edge" and "txtx": the key counts too).
    let [fits, over] = [300_000, 420_000];
    while (over - fits > 1) {
      const mid = Math.floor((fits + over) / 2);
      const held = await answer(plain, put(sized("prob", mid)));
      if ("error" in held) over = mid;
      else fits = mid;
    }
    const refused = await both(put(sized("edge", over)));
    expect(refused).toMatchObject({ error: "ValidationException" });
    await both(put(sized("edge", fits)));
    expect(await both(put(sized("edge", fits)))).toHaveProperty("attributes.pad.S", "x".repeat(fits));
    // Updates of the item at the edge, each the same on both: moto checks the size when an update
    // sets a top-level attribute, counting the value it replaces too, so at the edge even a value
    // of the same size is refused; after a removal (8 bytes) it fits.
    const edgeUpdate = (expression: string, values?: Record<string, AttributeValue>) =>
      both(
        updateSizes({
          Key: key("edge"),
          UpdateExpression: expression,
          ...(values === undefined ? {} : { ExpressionAttributeValues: values }),
        }),
      );
    expect(await edgeUpdate("SET y = :s", { ":s": { S: "y" } })).toMatchObject({
      error: "ValidationException",
    });
    expect(await edgeUpdate("SET flag = :f", { ":f": { BOOL: false } })).toMatchObject({
      error: "ValidationException",
    });
    expect(await edgeUpdate("REMOVE nothing")).not.toHaveProperty("attributes.nothing");
    expect(await edgeUpdate("SET flag = :f", { ":f": { BOOL: false } })).toHaveProperty(
      "attributes.flag.BOOL",
      false,
    );
    // A transaction's put at the edge and past it.
    for (const padding of [over, fits]) {
      await both((c) =>
        c.send(
          new TransactWriteItemsCommand({
            TransactItems: [{ Put: { TableName: SIZES, Item: sized("txtx", padding) } }],
          }),
        ),
      );
    }
    const get = (pk: string) => (c: DynamoDBClient) =>
      c.send(new GetItemCommand({ TableName: SIZES, Key: key(pk), ConsistentRead: true }));
    const [ours, theirs] = [await get("txtx")(launcher), await get("txtx")(plain)];
    expect(ours.Item?.pad?.S?.length).toBe(fits);
    expect(ours.Item).toEqual(theirs.Item);
    // A query's page ends where its items pass 1 MB, by their sizes.
    for (const sk of ["1", "2", "3"]) {
      await both(put({ ...sized("q", 390_000), sk: { S: sk } }));
    }
    let start: Record<string, AttributeValue> | undefined;
    const counts: number[] = [];
    do {
      const query = () =>
        new QueryCommand({
          TableName: SIZES,
          KeyConditionExpression: "pk = :p",
          ExpressionAttributeValues: { ":p": { S: "q" } },
          ExclusiveStartKey: start,
        });
      const [a, b] = [await launcher.send(query()), await plain.send(query())];
      expect(a.Items).toEqual(b.Items);
      expect(a.LastEvaluatedKey).toEqual(b.LastEvaluatedKey);
      counts.push(a.Items?.length ?? 0);
      start = a.LastEvaluatedKey;
    } while (start !== undefined);
    expect(counts).toEqual([2, 1]);
    // Key sizes: a partition key of 2,048 bytes is taken, one of 2,049 is not.
    const keyed = async (length: number) => both(put({ pk: { S: "k".repeat(length) }, sk: { S: "s" } }));
    expect(await keyed(2048)).toHaveProperty("attributes");
    expect(await keyed(2049)).toMatchObject({ error: "ValidationException" });
  });

  it("transactions with update expressions: applied, and cancelled with moto's reasons", async () => {
    for (const bound of ["100", "0"]) {
      await both((c) =>
        c.send(
          new TransactWriteItemsCommand({
            TransactItems: [
              {
                Update: {
                  TableName: TABLE,
                  Key: key("a"),
                  UpdateExpression: "SET m.x = m.x + :one ADD #c :one",
                  ConditionExpression: "#c < :bound",
                  ExpressionAttributeNames: { "#c": "count" },
                  ExpressionAttributeValues: { ":one": { N: "1" }, ":bound": { N: bound } },
                },
              },
              {
                Update: {
                  TableName: TABLE,
                  Key: key("c"),
                  UpdateExpression: "SET l = list_append(if_not_exists(l, :empty), :x)",
                  ExpressionAttributeValues: { ":empty": { L: [] }, ":x": { L: [{ S: bound }] } },
                },
              },
            ],
          }),
        ),
      );
    }
    const scan = async (c: DynamoDBClient) =>
      ((await c.send(new ScanCommand({ TableName: TABLE, ConsistentRead: true }))).Items ?? []).sort((x, y) =>
        String(x.pk?.S).localeCompare(String(y.pk?.S)),
      );
    const [ours, theirs] = [await scan(launcher), await scan(plain)];
    expect(ours.map((item) => item.pk?.S)).toEqual(["a", "b", "c"]);
    expect(ours).toEqual(theirs);
  });
});
