"""
Importing this module makes moto's work on items cheaper with the same answers (moto's hot spots,
point 3 of moto-launcher.py):

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
- A projection reads only the attributes it names. moto projects an item (a ProjectionExpression
  of GetItem, BatchGetItem, Query or Scan) by converting the whole item to plain Python values,
  picking each path out of that and converting the pick back; the stores read a few small
  attributes of items that hold a rack's report or a run's whole definition. Each path is
  looked up from its first name (or the list it indexes) on, so only those attributes are
  converted: the same picks, the same item.
"""
import copy
import re

from botocore.utils import merge_dicts
from moto.dynamodb.exceptions import ItemSizeTooLarge
from moto.dynamodb.models import dynamo_type
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.table import Table
from moto.dynamodb.models.utilities import bytesize

# DynamoDB requests that may have added or removed an item so far (app.call_app counts them; a
# restore counts itself): a table's items sorted by key stay as they were until the next one.
_item_writes = 0


def note_item_write():
    """A request, or a restore's direct puts, may have added or removed an item."""
    global _item_writes
    _item_writes += 1

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


_INDEXED = re.compile(r"(.+)\[(\d+)\]$")  # as moto's find_nested_key reads a path's first name


def _project(self, projection_expressions):
    """Item.project converting only the attributes a path starts at (find_nested_key looks a
    path's first name, or the list that name indexes, up in the item and nothing else), afresh
    for each path as moto converts the whole item afresh for each."""
    attrs = self.attrs
    deserialize = dynamo_type.deserializer.deserialize
    result = {}
    for expr in projection_expressions:
        first = expr[0]
        indexed = _INDEXED.match(first)
        wanted = (first, indexed.group(1)) if indexed else (first,)
        regular = {key: deserialize(attrs[key].to_regular_json()) for key in wanted if key in attrs}
        merge_dicts(result, dynamo_type.find_nested_key(expr, regular))
    return Item(
        hash_key=self.hash_key,
        range_key=self.range_key,
        attrs=dynamo_type.serializer.serialize(result)["M"],
    )


Item.project = _project
