/**
 * Spawns moto (the local stand-in for DynamoDB and Streams) on a free loopback port, for the local
 * stack and the test suites.
 *
 * Why not plain `moto_server`: it serves requests on many threads, and moto 5's TransactWriteItems
 * is not isolated. Each transaction deep-copies the tables it touches at its start and, when
 * cancelled, restores those copies: a concurrent transaction that committed in between is silently
 * erased. Under 16 concurrent claimers that let 4 claims through a limit of 3. Real DynamoDB
 * transactions are serializable, so the launcher below runs moto's own WSGI app with ONE lock
 * around each request (connections stay threaded). Throughput is moto's single-request speed,
 * which is all a laptop needs. `MOTO_PYTHON` names the interpreter that has moto (default python3);
 * if it cannot start, plain `moto_server` is used and `serialized` is false.
 *
 * The launcher also replaces moto's TransactWriteItems with one that needs no table copy. moto
 * deep-copies every table a transaction touches before it starts (O(table size): 177 ms per claim
 * once a table holds a few thousand items) and, on cancellation, swaps the copies in, which leaves
 * open stream readers on a dead table. Under the lock no other request runs, so the replacement
 * checks every condition against the state before the transaction (as DynamoDB does), cancels
 * with moto's own per-item reasons if any fails, and only then applies the writes; a write that
 * still fails (a malformed update expression) is undone from copies of the touched items only.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { openSync, readFileSync } from "node:fs";
import { createServer } from "node:net";

export interface LocalMoto {
  endpoint: string;
  /** True when requests are serialized (transactions behave like DynamoDB's). */
  serialized: boolean;
  /** The server's process id (what a later process stops a detached server by). */
  pid: number;
  stop(): Promise<void>;
}

const SERIALIZED_LAUNCHER = `
import signal, sys, threading
from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

import copy
from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed, MockValidationException, MultipleTransactionsException,
    TooManyTransactionsException, TransactionCanceledException, TransactWriteSingleOpException,
)
from moto.dynamodb.models import DynamoDBBackend

def transact_write_items(self, transact_items):
    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    seen, ops, errors = set(), [], []
    for entry in transact_items:
        if len(entry) > 1:
            raise TransactWriteSingleOpException
        op_type, op = next(iter(entry.items()))
        old = None
        try:
            if op_type not in ("ConditionCheck", "Put", "Delete", "Update"):
                raise ValueError("Unsupported transaction operation")
            table_name = op["TableName"]
            if op_type == "Put":
                table = self.get_table(table_name)
                attrs = op["Item"]
                key = {table.hash_key_attr: attrs[table.hash_key_attr]}
                if table.range_key_attr is not None:
                    key[table.range_key_attr] = attrs[table.range_key_attr]
            else:
                key = op["Key"]
            ident = (str(table_name), str(dict(sorted(key.items()))))
            if ident in seen:
                raise MultipleTransactionsException()
            seen.add(ident)
            current = self.get_item(table_name, key)
            condition = op.get("ConditionExpression")
            if condition is not None:
                check = get_filter_expression(
                    condition, op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues"))
                if not check.expr(current):
                    if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                        old = current.to_json()["Attributes"]
                    raise ConditionalCheckFailed(item=old)
            ops.append((op_type, op, table_name, key, copy.deepcopy(current)))
            errors.append((None, None, None))
        except (MultipleTransactionsException, MockValidationException):
            raise
        except ConditionalCheckFailed as e:
            errors.append(("ConditionalCheckFailed", str(e.message), old))
        except Exception as e:
            errors.append((type(e).__name__, str(e), old))
    if any(code is not None for code, _, _ in errors):
        raise TransactionCanceledException(errors)
    applied = []
    try:
        for op_type, op, table_name, key, before in ops:
            names, values = op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
            if op_type == "Put":
                self.put_item(table_name, op["Item"], expression_attribute_names=names,
                              expression_attribute_values=values)
            elif op_type == "Delete":
                self.delete_item(table_name, key, expression_attribute_names=names,
                                 expression_attribute_values=values)
            elif op_type == "Update":
                self.update_item(table_name, key, update_expression=op["UpdateExpression"],
                                 expression_attribute_names=names, expression_attribute_values=values)
            applied.append((table_name, key, before))
    except Exception:
        for table_name, key, before in reversed(applied):
            if before is None:
                self.delete_item(table_name, key)
            else:
                self.put_item(table_name, before.to_json()["Attributes"])
        raise

DynamoDBBackend.transact_write_items = transact_write_items

app = DomainDispatcherApplication(create_backend_app)
lock = threading.Lock()

def serialized(environ, start_response):
    with lock:
        body = app(environ, start_response)
        try:
            chunks = [bytes(c) for c in body]
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
    return chunks

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
run_simple(sys.argv[1], int(sys.argv[2]), serialized, threaded=True)
`;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface LocalMotoOptions {
  python?: string;
  timeoutMs?: number;
  serialized?: boolean;
  /** Added to this process's environment, e.g. `{ MOTO_ACCOUNT_ID: "000000000000" }`. */
  env?: Record<string, string>;
  /**
   * Outlive this process (deploy/local.ts: `deploy:local` leaves the endpoint up for
   * `destroy:local`): moto's output is appended to this file instead of a pipe, which would break
   * when this process exits, and it is stopped later by its `pid`.
   */
  detachedLog?: string;
}

export async function startLocalMoto(options: LocalMotoOptions = {}): Promise<LocalMoto> {
  if (options.serialized !== false) {
    try {
      return await launch(
        options.python ?? process.env.MOTO_PYTHON ?? "python3",
        (port) => ["-c", SERIALIZED_LAUNCHER, "127.0.0.1", String(port)],
        true,
        options,
      );
    } catch {
      // fall through to the stock server
    }
  }
  return launch("moto_server", (port) => ["-H", "127.0.0.1", "-p", String(port)], false, options);
}

async function launch(
  command: string,
  args: (port: number) => string[],
  serialized: boolean,
  options: LocalMotoOptions,
): Promise<LocalMoto> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const env = { ...process.env, ...options.env };
  const log = options.detachedLog;
  const child: ChildProcess =
    log === undefined
      ? spawn(command, args(port), { stdio: ["ignore", "ignore", "pipe"], env })
      : spawn(command, args(port), {
          stdio: ["ignore", openSync(log, "a"), openSync(log, "a")],
          env,
          detached: true,
        });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const output = () => (log === undefined ? stderr : readFileSync(log, "utf8").slice(-4000));
  let exited: string | undefined;
  child.on("exit", (code, signal) => {
    exited = `${command} exited (code ${code}, signal ${signal}): ${output()}`;
  });
  child.on("error", (error) => {
    exited = `${command} failed to start: ${error.message}`;
  });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited !== undefined) throw new Error(exited);
    try {
      const res = await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error(`${command} did not answer on ${endpoint} within ${timeoutMs} ms: ${output()}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  // Detached: nothing of this process keeps it waiting for moto (no pipe, no handle).
  if (log !== undefined) child.unref();
  return {
    endpoint,
    serialized,
    pid: child.pid ?? 0,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 3000).unref();
      }),
  };
}
