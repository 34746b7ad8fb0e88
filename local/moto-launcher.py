"""
moto for the local stack and the test suites (local/moto.ts spawns it):

    python3 moto-launcher.py HOST PORT [DATA_DIR [COMPACT_EVERY]]

1. Serialized. Plain `moto_server` serves requests on many threads, and moto 5's TransactWriteItems
   is not isolated: each transaction deep-copies the tables it touches at its start and, when
   cancelled, restores those copies, silently erasing a concurrent transaction that committed in
   between (under 16 concurrent claimers that let 4 claims through a limit of 3). Real DynamoDB
   transactions are serializable, so this runs moto's own WSGI app with ONE lock around each
   request (connections stay threaded).

2. A copy-free TransactWriteItems. moto deep-copies every table a transaction touches before it
   starts (O(table size): 177 ms per claim once a table holds a few thousand items) and, on
   cancellation, swaps the copies in, which leaves open stream readers on a dead table. Under the
   lock no other request runs, so the replacement checks every condition against the state before
   the transaction (as DynamoDB does), cancels with moto's own per-item reasons if any fails, and
   only then applies the writes; a write that still fails (a malformed update expression) is
   undone from copies of the touched items only.

3. moto's hot spots, cut with the same answers (bench:rollout waits on this process: every request
   waits for the one before, so its time per request is the stack's wall time):
   - Items answered without the generic serializer. moto 5.2 writes every response by walking
     botocore's shape model, and each attribute value is an `AttributeValue` structure whose ten
     members are each looked up through an alias picker: ~20 ms for a response holding a 3 KB item.
     That shape alone is written directly, to exactly what the walk writes (the members it names,
     None left out, blobs in base64, maps and lists recursively); everything around it (the
     operation's output structure, ConsumedCapacity, errors) still goes through moto's serializer,
     and a value of another form goes the old way.
   - Update expressions validated once, not once per node. moto's clause nodes all subclass
     `UpdateExpression`, so its action-count and overlapping-paths validators, written for the root,
     run at every node of the expression, each over the whole subtree below it: quadratic in the
     clauses (a batch of 18 reports is ~70). They run at the root only, which sees every clause the
     inner runs saw, so an expression is refused exactly when it was before (its message names
     the clashing paths of the whole expression).
   - Update expressions parsed once per text. moto parses an UpdateItem's expression twice per
     request (to check its placeholders, then to validate and run it), and a stack sends the same
     few texts over and over (the placeholders are numbered by position, the values differ). The
     parsed tree is kept by its text (an LRU): moto only reads it, and its validator works on a
     copy; a text that does not parse raises every time, as before. That copy is unpickled from
     the tree's pickle, made once (a deep copy walked the ~150 nodes of a report batch's tree in
     Python, every request); a value list_append copies is still deep-copied.
   - The validator's eight other passes walk the tree with each node's processor looked up once
     per node class (moto tests every node against every processor's classes with isinstance, an
     ABC check in Python: ~1,500 node visits per request), and the two root-only passes above do
     not walk at all. The nodes visited, their order and the child hook are moto's.
   - A condition expression's tokens are kept by its text (the lexer matches six regexes per token,
     recompiling each through re's cache); the tokens are immutable but for an empty list of
     children, which each parse gets fresh. And a condition is parsed once per request: moto parses
     a PutItem's, UpdateItem's or DeleteItem's condition twice (to check its placeholders, then to
     evaluate it), with the same text and the very same names and values objects; the last parse
     is kept with those objects (held, so identity cannot be reused) and handed to the next parse
     of exactly them, with the placeholders it found. An UpdateItem spent ~25 % of its time in the
     two parses.
   - Reserved words as a set (moto scans a list of 573 words for every attribute name), and the
     list of moto's service modules computed once (moto lists its package directory and stats each
     of ~200 entries for every request, to see whether the Host names a service), and so is each
     API's list of method names (moto lists every member of the handler's class with
     inspect.getmembers for every request, to see whether the action is one of them).
   - A table's items sorted once between writes. Every Query and Scan starts from all of a table's
     items sorted by key (`Table.all_items`; an index Query then walks them all): ~100 ms for the
     ~4,800 items of the demo inventory, once for each of the quick start's 15 rack names. The
     sorted list is kept until the next DynamoDB request that is not a read (any of them may add
     or remove an item; a restore's direct puts count too), and each caller gets its own copy: the
     quick start's create went from ~1.7 s to ~0.3 s. A Query does not need them sorted at all (it
     orders what it finds by the index's keys and then the table's, a total order): it walks them
     unsorted, and a table Query walks its partition only.
   - An attribute value's size summed in place. moto's DynamoType.size builds a new DynamoType
     for each member of a map, which converts the member's whole subtree again, so a size costs
     the item's nodes times its depth; and an item is checked against the 400 KB limit at each
     attribute it is built with, over every attribute before it: an item like a rack's target
     (39 components in a list of maps, ~80 values) built 945 DynamoTypes in 0.9 ms, and a run's
     create builds 100 of them; every update of an item sums its size again. Now the sum is taken
     term by term over the tree as it is, and a new item is checked once, whole (sizes are not
     negative, so the whole is over the limit exactly when a prefix is): 81 DynamoTypes, 0.12 ms,
     the same size. A value's deep copy (update_item's old image, a transaction's undo) recurses
     directly instead of through copy.deepcopy's dispatch at each node.
   In a replay of bench:rollout's 586 DynamoDB requests through the app (no HTTP), moto's time went
   from 5.1–8.4 s to 3.1–4.6 s (UpdateItem 4.0–6.6 s to 2.2–3.2 s), every answer the same.

4. Durable, with DATA_DIR (the local stack's --data-dir): a write moto acknowledged survives a
   SIGKILL of anything. Every DynamoDB request that is not a read and that succeeded is appended,
   as it arrived, to a write-ahead log (DATA_DIR/wal-<generation>.jsonl) while the lock is held,
   and no answer leaves this process (a read's included: it may show such a write) before the log
   is on disk up to the last write that request could see. The fsync is a group commit outside the
   lock: one fdatasync covers every request that waits meanwhile, so the lock is held for a
   write(2) only. Failed requests (a condition that did not hold, a cancelled transaction) are not
   logged, so a replay never has to fail them again.
   A snapshot (DATA_DIR/snapshot-<generation>.json: every table's creating requests and its items)
   is taken under the lock, so it is one moment across tables, every COMPACT_EVERY logged
   requests (never two at once, its I/O outside the lock) and at SIGTERM, after the stack stopped
   every writer. At start the newest snapshot is loaded and every log from its generation on is
   replayed in order through the same app, then compacted into a new snapshot. Each step
   leaves a restorable directory: a snapshot is written beside its predecessor and renamed into
   place, and the logs it covers are deleted only after that. A torn last line (a crash mid-write)
   was never acknowledged and is dropped. DATA_DIR/LOCK (flock) keeps a second launcher out while
   one runs; a launcher whose parent dies (stdin closes) exits at once.
   Streams are not persisted: a restored table's stream starts empty, with a new stream ARN.

5. Connections kept open. werkzeug's development server answers every request with
   `Connection: close`, so each of the stack's requests opened a TCP connection and the server a
   thread for it (200 GetItems in a row left 203 sockets in TIME_WAIT), and it then waits up to
   10 ms for a body nobody sends. A request whose body is delimited by its Content-Length (every
   request the SDKs send moto here) is read whole first, answered with its length, and the
   connection stays open for the next; anything else (a chunked body, `Expect: 100-continue`, a
   HEAD) goes to werkzeug's own handler as before, which closes the connection after it.
"""
import base64
import copy
import fcntl
import functools
import io
import json
import logging
import os
import pickle
import signal
import socket
import sys
import threading
import time
import traceback

from collections import deque

from werkzeug.exceptions import InternalServerError
from werkzeug.serving import WSGIRequestHandler, run_simple
from werkzeug.test import EnvironBuilder
from moto import backends
from moto.core import responses
from moto.core.serialize import BaseJSONSerializer
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.dynamodb.comparisons import ConditionExpressionParser, get_filter_expression
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed, ItemSizeTooLarge, MockValidationException, MultipleTransactionsException,
    TooManyTransactionsException, TransactionCanceledException, TransactWriteSingleOpException,
)
from moto.dynamodb.models import DynamoDBBackend, dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.utilities import bytesize
from moto.dynamodb.models.table import Table
from moto.dynamodb.parsing import validators
from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser, Node, UpdateExpression
from moto.dynamodb.parsing.expressions import UpdateExpressionParser
from moto.dynamodb.parsing.reserved_keywords import ReservedKeywords
from moto.dynamodb.parsing.validators import ActionCountValidator, OverlappingPathsValidator

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


_ATTRIBUTE_MEMBERS = frozenset(("S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"))


class _OtherForm(Exception):
    """An attribute value that is not the plain dict this fast path knows: use the shape walk."""


def _blob(value):
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not isinstance(value, (bytes, bytearray)):
        raise _OtherForm()
    return base64.b64encode(value).strip().decode("utf-8")


def _attribute_value(value):
    if not isinstance(value, dict):
        raise _OtherForm()
    out = {}
    for member, x in value.items():
        if x is None or member not in _ATTRIBUTE_MEMBERS:
            continue
        if member == "B":
            out[member] = _blob(x)
        elif member == "BS":
            out[member] = [_blob(b) for b in x]
        elif member == "M":
            if not isinstance(x, dict):
                raise _OtherForm()
            out[member] = {k: _attribute_value(v) for k, v in x.items()}
        elif member == "L":
            out[member] = [_attribute_value(v) for v in x]
        else:
            out[member] = x
    return out


_serialize_structure = BaseJSONSerializer._serialize_type_structure


def _serialize_type_structure(self, serialized, value, shape, key):
    if shape.name == "AttributeValue" and key and value is not None:
        try:
            serialized[self.get_serialized_name(shape, key)] = _attribute_value(value)
            return
        except _OtherForm:
            pass
    _serialize_structure(self, serialized, value, shape, key)


BaseJSONSerializer._serialize_type_structure = _serialize_type_structure


def _at_the_root(check):
    def root_only(self, node):
        return check(self, node) if type(node) is UpdateExpression else node

    return root_only


ActionCountValidator.verify_action_counts = _at_the_root(ActionCountValidator.verify_action_counts)
OverlappingPathsValidator.check_for_overlapping_paths = _at_the_root(
    OverlappingPathsValidator.check_for_overlapping_paths
)
_ROOT_ONLY = (ActionCountValidator, OverlappingPathsValidator)

# (traverser class, node class) -> the index of the node's processor in the traverser's map, -1 for
# none, -2 for a child that is not a node. The maps are literal dicts of classes, one per class.
_PROCESSOR_OF = {}
_NO_HOOK = DepthFirstTraverser.pre_processing_of_child


def _walk(processors, traverser, hook, node, child_id):
    kind = type(node)
    index = _PROCESSOR_OF.get((traverser, kind))
    if index is None:
        if not issubclass(kind, Node):
            index = -2
        else:
            index = next((i for i, (cls, _) in enumerate(processors) if issubclass(kind, cls)), -1)
        _PROCESSOR_OF[(traverser, kind)] = index
    if index == -2:
        return node
    parent = node.parent
    if node.children is not None:
        for i, child in enumerate(node.children):
            if hook is not None:
                hook(node, i)
            _walk(processors, traverser, hook, child, i)
    if index >= 0:
        node = processors[index][1](node)
        node.parent = parent
        if parent:
            parent.children[child_id] = node
    return node


def _traverse(self, node, child_id=-1):
    if type(self) in _ROOT_ONLY:
        return self.process(node) if type(node) is UpdateExpression else node
    hook = None if type(self).pre_processing_of_child is _NO_HOOK else self.pre_processing_of_child
    return _walk(tuple(self._processing_map().items()), type(self), hook, node, child_id)


DepthFirstTraverser.traverse_node_recursively = _traverse

_parse_update = functools.lru_cache(maxsize=4096)(UpdateExpressionParser.make)
UpdateExpressionParser.make = staticmethod(_parse_update)

_pickled_trees = {}  # id(tree) -> (tree, its pickle): the parsed trees the LRU above hands out


def _copy_tree(tree):
    if type(tree) is not UpdateExpression:  # a value list_append copies before appending to it
        return copy.deepcopy(tree)
    held = _pickled_trees.get(id(tree))
    if held is None or held[0] is not tree:
        if len(_pickled_trees) > 8192:
            _pickled_trees.clear()
        held = _pickled_trees[id(tree)] = (tree, pickle.dumps(tree, pickle.HIGHEST_PROTOCOL))
    return pickle.loads(held[1])


validators.deepcopy = _copy_tree

_lex_condition = ConditionExpressionParser._lex_condition_expression


@functools.lru_cache(maxsize=4096)
def _lexed(text):
    return tuple(_lex_condition(ConditionExpressionParser(text, None, None)))


def _lex_condition_cached(self):
    return deque(token._replace(children=[]) for token in _lexed(self.condition_expression))


ConditionExpressionParser._lex_condition_expression = _lex_condition_cached

_parse_condition = ConditionExpressionParser.parse
_last_condition = None  # (text, names, values, names found, values found, op): the last parse's


def _parse_condition_once(self):
    global _last_condition
    text = self.condition_expression
    names, values = self.expression_attribute_names, self.expression_attribute_values
    held = _last_condition
    if held is not None and held[0] == text and held[1] is names and held[2] is values:
        self.expr_attr_names_found.extend(held[3])
        self.expr_attr_values_found.extend(held[4])
        return held[5]
    op = _parse_condition(self)  # a text that does not parse raises, every time, and is not kept
    found = (tuple(self.expr_attr_names_found), tuple(self.expr_attr_values_found))
    _last_condition = (text, names, values, *found, op)
    return op


ConditionExpressionParser.parse = _parse_condition_once

ReservedKeywords.KEYWORDS = frozenset(ReservedKeywords.get_reserved_keywords())
_MOTO_MODULES = frozenset(backends.list_of_moto_modules())
backends.list_of_moto_modules = lambda: _MOTO_MODULES
responses.method_names_from_class = functools.lru_cache(maxsize=None)(responses.method_names_from_class)

# DynamoDB requests that may have added or removed an item so far (call_app counts them; the
# restore counts itself): a table's items sorted by key stay as they were until the next one.
_item_writes = 0
_all_items = Table.all_items


def _all_items_sorted_once(self):
    held = getattr(self, "_flow_sorted", None)
    if held is None or held[0] != _item_writes:
        held = self._flow_sorted = (_item_writes, _all_items(self))
    return list(held[1])


Table.all_items = _all_items_sorted_once


def _unsorted_items(table):
    if table.range_key_attr:
        return [item for bucket in table.items.values() for item in bucket.values()]
    return list(table.items.values())


_query = Table.query


def _query_unsorted(self, hash_key, *args, **kwargs):
    """A Query orders what it found by the keys (an index's, then the table's: a total order), so
    the table need not be sorted first; and a table Query looks in its partition only."""
    index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
    if index_name or hash_key is None:
        found = _unsorted_items(self)
    else:
        partition = self.items.get(hash_key)
        found = [] if partition is None else list(partition.values()) if self.range_key_attr else [partition]
    self.all_items = lambda: found
    try:
        return _query(self, hash_key, *args, **kwargs)
    finally:
        del self.all_items


Table.query = _query_unsorted


def _size(value):
    """DynamoType.size (an attribute value's bytes by DynamoDB's rules) without building a
    DynamoType for each member of a map, which copies the member's whole subtree first: moto's
    size is quadratic in an item's depth, and LimitedSizeDict recomputes the item's size for each
    attribute it sets. The same sum, term by term; a member may be a DynamoType or the plain
    {type: value} dict, as DynamoType(v) takes either."""
    if type(value) is DynamoType:
        kind, inner = value.type, value.value
    else:
        kind, inner = next(iter(value.items()))
    if kind == "N":
        return len(str(inner))
    if kind in _SET_TYPES:
        member = kind[0]
        return sum(len(str(v)) if member == "N" else bytesize(v) for v in inner)
    if kind == "L":
        return sum(_size(v) for v in inner)
    if kind == "M":
        return sum(bytesize(k) + _size(v) for k, v in inner.items())
    if isinstance(inner, bool):
        return 1
    return bytesize(inner)


_SET_TYPES = frozenset(("SS", "NS", "BS"))
DynamoType.size = _size


def _new_item(self, hash_key, range_key, attrs):
    """Item.__init__ with the 400 KB check made once, on the whole item: LimitedSizeDict checks
    it at every attribute, over every attribute set before it (quadratic in the attributes). The
    sizes are never negative, so the whole item is over the limit exactly when some prefix of it
    is: the same items are refused, with the same error."""
    self.hash_key = hash_key
    self.range_key = range_key
    values = LimitedSizeDict.__new__(LimitedSizeDict)
    dict.__init__(values)
    for key, value in attrs.items():
        dict.__setitem__(values, key, DynamoType(value))
    if sum(bytesize(k) + _size(v) for k, v in values.items()) > 405000:
        raise ItemSizeTooLarge
    self.attrs = values


Item.__init__ = _new_item


def _copy_value(self, memo):
    """DynamoType.__deepcopy__ without a trip through copy.deepcopy for each member (its dispatch
    and keep-alive list cost more than the copy): the same tree, shared members shared, anything
    that is not a DynamoType still copied by copy.deepcopy."""
    done = memo.get(id(self))
    if done is not None:
        return done
    result = DynamoType.__new__(DynamoType)
    memo[id(self)] = result
    result.type = kind = self.type
    inner = self.value
    if kind == "L":
        result.value = [
            _copy_value(v, memo) if type(v) is DynamoType else copy.deepcopy(v, memo) for v in inner
        ]
    elif kind == "M":
        result.value = {
            k: _copy_value(v, memo) if type(v) is DynamoType else copy.deepcopy(v, memo)
            for k, v in inner.items()
        }
    elif kind in _SET_TYPES:
        result.value = list(inner)
    else:
        result.value = inner
    return result


DynamoType.__deepcopy__ = _copy_value


app = DomainDispatcherApplication(create_backend_app)
lock = threading.Lock()

# Targets that only read: everything else under DynamoDB_20120810 that succeeds is logged (a new
# mutating operation is logged by default; a logged read would replay harmlessly).
READS = frozenset(
    "DynamoDB_20120810." + op
    for op in (
        "GetItem BatchGetItem Query Scan TransactGetItems DescribeTable ListTables DescribeTimeToLive "
        "DescribeContinuousBackups ListTagsOfResource DescribeEndpoints DescribeLimits ListBackups "
        "DescribeBackup ListGlobalTables DescribeGlobalTable DescribeKinesisStreamingDestination "
        "DescribeContributorInsights DescribeTableReplicaAutoScaling ListExports DescribeExport "
        "ListImports DescribeImport GetResourcePolicy"
    ).split()
)
# Logged requests whose effect a snapshot's items already hold; the others (tables, TTL, tags)
# are carried into every snapshot as they were sent.
ITEM_WRITES = frozenset(
    "DynamoDB_20120810." + op
    for op in "PutItem UpdateItem DeleteItem BatchWriteItem TransactWriteItems ExecuteStatement "
    "BatchExecuteStatement ExecuteTransaction".split()
)
# Request headers a replay needs: moto picks the service, account and region from them.
SKIPPED_HEADERS = frozenset(("CONTENT_LENGTH", "HTTP_CONNECTION", "HTTP_ACCEPT_ENCODING"))


def run_app(application, environ):
    """Runs a WSGI app on one request to its end; returns (status line, headers, body chunks)."""
    response = []
    written = []

    def start_response(line, headers, exc_info=None):
        response[:] = [line, headers]
        return written.append

    body = application(environ, start_response)
    try:
        chunks = written + [bytes(c) for c in body]
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()
    return response[0], response[1], chunks


def call_app(environ):
    """Runs one request through moto; returns (status line, headers, body chunks)."""
    global _item_writes
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    if target.startswith("DynamoDB_20120810.") and target not in READS:
        _item_writes += 1
    return run_app(app, environ)


def replay(entry):
    environ = EnvironBuilder(
        path=entry["path"], method="POST", headers=entry["headers"], data=entry["body"].encode("utf-8")
    ).get_environ()
    line, _, _ = call_app(environ)
    return line.startswith("200")


class Durable:
    def __init__(self, directory, compact_every):
        self.dir = directory
        self.compact_every = compact_every
        os.makedirs(directory, exist_ok=True)
        self._lock_dir()
        self.cond = threading.Condition()
        self.written = 0  # log entries written (the lsn of the last one)
        self.durable = 0  # entries known to be on disk
        self.syncing = False
        self.since_snapshot = 0
        self.compacting = False
        self.ddl = []
        self.generation = 0
        self.fd = None

    def _lock_dir(self):
        self.lock_file = open(os.path.join(self.dir, "LOCK"), "a+")
        deadline = time.monotonic() + 15
        while True:
            try:
                fcntl.flock(self.lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    self.lock_file.seek(0)
                    owner = self.lock_file.read().strip() or "unknown"
                    sys.exit(f"flow-moto: {self.dir} is in use by another moto (pid {owner})")
                time.sleep(0.1)
        self.lock_file.truncate(0)
        self.lock_file.write(str(os.getpid()))
        self.lock_file.flush()

    def _generations(self, prefix, suffix):
        found = []
        for name in os.listdir(self.dir):
            if name.startswith(prefix) and name.endswith(suffix):
                middle = name[len(prefix) : -len(suffix)]
                if middle.isdigit():
                    found.append(int(middle))
        return sorted(found)

    def _path(self, kind, generation):
        suffix = "json" if kind == "snapshot" else "jsonl"
        return os.path.join(self.dir, f"{kind}-{generation:08d}.{suffix}")

    # -- start ------------------------------------------------------------------------------

    def restore(self):
        global _item_writes
        began = time.monotonic()
        snapshots = self._generations("snapshot-", ".json")
        base = snapshots[-1] if snapshots else 0
        items = 0
        if snapshots:
            with open(self._path("snapshot", base), encoding="utf-8") as f:
                snapshot = json.load(f)
            self.ddl = snapshot["ddl"]
            for entry in self.ddl:
                replay(entry)
            for table in snapshot["tables"]:
                backend = dynamodb_backends[table["account"]][table["region"]]
                for attrs in table["items"]:
                    backend.put_item(table["name"], attrs, overwrite=True)
                    items += 1
            _item_writes += 1  # items put without a request: no table's sorted items hold
        writes = 0
        logs = [g for g in self._generations("wal-", ".jsonl") if g >= base]
        for generation in logs:
            with open(self._path("wal", generation), "rb") as f:
                lines = f.read().split(b"\n")
            for number, raw in enumerate(lines):
                if not raw:
                    continue
                try:
                    entry = json.loads(raw)
                except ValueError:
                    # Only a torn last line (never acknowledged) can be cut short.
                    if number != len(lines) - 1 or generation != logs[-1]:
                        sys.exit(f"flow-moto: {self._path('wal', generation)} line {number + 1} is corrupt")
                    break
                if not replay(entry):
                    print(f"flow-moto: replaying {entry['headers'].get('X-Amz-Target')} failed", file=sys.stderr)
                if entry["headers"].get("X-Amz-Target") not in ITEM_WRITES:
                    self.ddl.append(entry)
                writes += 1
        # A restored table's stream starts empty (its ARN is new): old records would only be
        # sequence numbers of another life.
        for _, backend in all_backends():
            for table in backend.tables.values():
                if table.stream_shard is not None:
                    table.stream_shard.items = []
        self.generation = max([base, *logs]) + 1 if (snapshots or logs) else 1
        self.fd = os.open(self._path("wal", self.generation), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        if snapshots or logs:
            # Everything restored is one consistent state and no writer runs yet: compact it now,
            # so the next start replays nothing twice and the logs are gone.
            self._snapshot(self._capture(), self.generation)
            self._remove_before(self.generation)
        print(
            f"flow-moto: restored {items} items and replayed {writes} logged writes from {self.dir} "
            f"in {int((time.monotonic() - began) * 1000)} ms",
            flush=True,
        )

    # -- the log ----------------------------------------------------------------------------

    def record(self, environ, body):
        """Under the request lock: appends one succeeded request; returns its lsn."""
        headers = {}
        for key, value in environ.items():
            if key in SKIPPED_HEADERS:
                continue
            if key.startswith("HTTP_"):
                headers["-".join(part.capitalize() for part in key[5:].split("_"))] = value
            elif key == "CONTENT_TYPE":
                headers["Content-Type"] = value
        headers["X-Amz-Target"] = environ.get("HTTP_X_AMZ_TARGET", "")
        entry = {"path": environ.get("PATH_INFO") or "/", "headers": headers, "body": body.decode("utf-8")}
        os.write(self.fd, (json.dumps(entry, separators=(",", ":")) + "\n").encode("utf-8"))
        if headers["X-Amz-Target"] not in ITEM_WRITES:
            self.ddl.append(entry)
        self.since_snapshot += 1
        with self.cond:
            self.written += 1
            return self.written

    def lsn(self):
        with self.cond:
            return self.written

    def wait(self, lsn):
        """Outside the request lock: returns once entries up to `lsn` are on disk (group commit)."""
        with self.cond:
            while self.durable < lsn:
                if self.syncing:
                    self.cond.wait()
                    continue
                self.syncing = True
                target, fd = self.written, self.fd
                self.cond.release()
                try:
                    os.fdatasync(fd)
                finally:
                    self.cond.acquire()
                    self.syncing = False
                    self.durable = max(self.durable, target)
                    self.cond.notify_all()

    def due(self):
        return self.since_snapshot >= self.compact_every and not self.compacting

    # -- snapshots --------------------------------------------------------------------------

    def _capture(self):
        def wire(value):
            # moto may hold a binary attribute decoded (bytes, e.g. a task's deflated report);
            # JSON and put_item take it as the wire does: base64 text.
            if isinstance(value, bytes):
                return base64.b64encode(value).decode("ascii")
            if isinstance(value, dict):
                return {k: wire(v) for k, v in value.items()}
            if isinstance(value, list):
                return [wire(v) for v in value]
            return value

        tables = []
        for (account, region), backend in all_backends():
            for name, table in backend.tables.items():
                tables.append(
                    {
                        "account": account,
                        "region": region,
                        "name": name,
                        "items": [wire(item.to_json()["Attributes"]) for item in table.all_items()],
                    }
                )
        return {"version": 1, "ddl": list(self.ddl), "tables": tables}

    def _rotate(self):
        """Under the request lock: the next writes go to a new log. Returns its generation."""
        with self.cond:
            while self.syncing:
                self.cond.wait()
            os.fdatasync(self.fd)
            os.close(self.fd)
            self.durable = self.written
            self.generation += 1
            self.fd = os.open(self._path("wal", self.generation), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.since_snapshot = 0
        return self.generation

    def _snapshot(self, state, generation):
        """Writes snapshot-<generation>: the state at the start of wal-<generation>."""
        path = self._path("snapshot", generation)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, path)
        dir_fd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def _remove_before(self, generation):
        for kind, suffix in (("snapshot", ".json"), ("wal", ".jsonl")):
            for g in self._generations(kind + "-", suffix):
                if g < generation:
                    os.remove(self._path(kind, g))

    def compact_final(self):
        """At SIGTERM, under the request lock: everything is in the snapshot, no log is left."""
        state = self._capture()
        generation = self._rotate()
        self._snapshot(state, generation)
        self._remove_before(generation)

    def compact(self):
        """Called with the request lock held; releases it for the file I/O and takes it back."""
        self.compacting = True
        try:
            state = self._capture()
            generation = self._rotate()
            lock.release()
            try:
                self._snapshot(state, generation)
                self._remove_before(generation)
            finally:
                lock.acquire()
        finally:
            self.compacting = False


def all_backends():
    for account, regions in list(dynamodb_backends.items()):
        for region, backend in list(regions.items()):
            yield (account, region), backend


durable = None


def serialized(environ, start_response):
    body = b""
    if durable is not None:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length > 0 else b""
        environ["wsgi.input"] = io.BytesIO(body)
    with lock:
        line, headers, chunks = call_app(environ)
        if durable is not None:
            target = environ.get("HTTP_X_AMZ_TARGET", "")
            if line.startswith("200") and target.startswith("DynamoDB_20120810.") and target not in READS:
                lsn = durable.record(environ, body)
            else:
                lsn = durable.lsn()
            if durable.due():
                durable.compact()
    if durable is not None:
        durable.wait(lsn)
    start_response(line, headers)
    return chunks


class KeepAliveHandler(WSGIRequestHandler):
    """Point 5: a request with a Content-Length-delimited body is served on a connection kept open."""

    def setup(self):
        super().setup()
        # The head and the body go out in two writes: without this the body waits for the
        # client's delayed ACK of the head (~40 ms), which a closed connection never met.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def run_wsgi(self):
        length = self.headers.get("Content-Length", "0").strip()
        delimited = length.isdigit() and "Transfer-Encoding" not in self.headers
        if self.command == "HEAD" or "Expect" in self.headers or not delimited:
            self.close_connection = True
            return super().run_wsgi()
        body = self.rfile.read(int(length))
        environ = self.make_environ()
        environ["wsgi.input"] = io.BytesIO(body)
        try:
            line, headers, chunks = run_app(self.server.app, environ)
        except Exception:
            # As werkzeug's handler answers a request its app raised on: its 500 page, logged.
            self.server.log("error", "Error on request:\n%s", traceback.format_exc())
            line, headers, chunks = run_app(InternalServerError(), environ)
        data = b"".join(chunks)
        code, _, reason = line.partition(" ")
        self.send_response(int(code), reason)
        for key, value in headers:
            if key.lower() not in ("connection", "content-length", "transfer-encoding"):
                self.send_header(key, value)
        # The length of what is sent, which delimits it on the open connection.
        if int(code) not in (204, 304):
            self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)


def watch_parent():
    """The parent (the stack) keeps our stdin open; EOF means it died: go too, at once."""
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except Exception:
        pass
    os._exit(0)


def stop(*_):
    # SIGTERM comes from the stack after it stopped every writer: the final snapshot. The lock
    # waits for a request still running.
    if durable is not None:
        with lock:
            while durable.compacting:  # a compaction doing its I/O outside the lock: let it end
                lock.release()
                time.sleep(0.05)
                lock.acquire()
            durable.compact_final()
    sys.exit(0)


if __name__ == "__main__":
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    if len(sys.argv) > 3:
        durable = Durable(sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 5000)
        durable.restore()
    # A detached launcher (deploy:local, FLOW_MOTO_DETACHED=1) outlives its parent on purpose, and
    # its stdin is /dev/null, whose EOF would end it at once.
    if os.environ.get("FLOW_MOTO_DETACHED") != "1":
        threading.Thread(target=watch_parent, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    run_simple(sys.argv[1], int(sys.argv[2]), serialized, threaded=True, request_handler=KeepAliveHandler)
