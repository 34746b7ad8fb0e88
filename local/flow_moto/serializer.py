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
"""
import base64

from moto.core.serialize import BaseJSONSerializer


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
