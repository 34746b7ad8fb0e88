"""
Importing this module makes moto write DynamoDB items without its generic serializer (one of
moto's hot spots, point 3 of moto-launcher.py):

Items answered without the generic serializer. moto 5.2 writes every response by walking
  botocore's shape model, and each attribute value is an `AttributeValue` structure whose ten
  members are each looked up through an alias picker: ~20 ms for a response holding a 3 KB item.
  That shape alone is written directly, to exactly what the walk writes (the members it names,
  None left out, blobs in base64, maps and lists recursively); everything around it (the
  operation's output structure, ConsumedCapacity, errors) still goes through moto's serializer,
  and a value of another form goes the old way.

Each member's value looked up by its keys computed once. For every member of every structure
it writes, moto's serializer builds a picker context (joining the path so far into a string)
and asks six alias providers, in order, which keys the member might be stored under (its
shape's name, its snake_case form, prefixes of its parent shape's or the object's class name,
its wire name), then takes the first present. Those keys depend only on the member's name, its
shape and parent shape (which the serializer sets just before), and the object's class, unless
the object has a `Meta` with aliases of its own: they are computed once per (class, name, shape,
parent) by moto's own providers and tried in moto's order. An object with a `Meta`, or a
response with transformers for some key paths, goes the old way. Through the app (no HTTP), a
DescribeTable (~150 members) went from 0.84–0.91 ms to 0.60 ms, a GetItem from 0.60–0.62 ms to
0.50–0.56 ms.
"""
import base64

from moto.core.serialize import (
    AttributePickerContext, BaseJSONSerializer, ResponseSerializer, XFormedAttributePicker,
)
from moto.core.utils import MISSING
from moto.core.utils import get_value as _value_of


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


# (object class, member name, id(shape), id(parent shape)) -> (shape, parent, keys to try): the
# shapes are held, so an id is not reused while its entry lives.
_keys_of = {}
_get_value = ResponseSerializer.get_value


def _possible_keys(self, value, key, shape):
    parent = getattr(shape, "parent", None)
    ident = (type(value), key, id(shape), id(parent))
    held = _keys_of.get(ident)
    if held is None or held[0] is not shape or held[1] is not parent:
        model = self.operation_model
        context = AttributePickerContext(value, key, shape, model, model.service_model)
        held = _keys_of[ident] = (shape, parent, tuple(self._value_picker.get_possible_keys(context)))
    return held[2]


def _get_value_by_known_keys(self, value, key, shape):
    picker = self._value_picker
    if type(picker) is not XFormedAttributePicker or picker.response_transformers or hasattr(value, "Meta"):
        return _get_value(self, value, key, shape)
    for possible in _possible_keys(self, value, key, shape):
        found = _value_of(value, possible, MISSING)
        if found is not MISSING:
            return found
    return None


ResponseSerializer.get_value = _get_value_by_known_keys
