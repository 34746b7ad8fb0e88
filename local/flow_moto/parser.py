"""
Importing this module makes moto read DynamoDB attribute values in a request without the generic
parser's shape walk (moto's hot spots, point 3 of moto-launcher.py):

moto 5.2 parses every JSON request body by walking botocore's shape model after json.loads, and
each attribute value is an `AttributeValue` structure whose ten members are each looked up, and
each nested value through a handler chosen by its shape's type name. That shape alone is read
directly, to exactly what the walk makes of it: the one member it holds, a string, number, null
or boolean as it came, a blob decoded from base64, a set as a new list, a map or a list read the
same way at each value. A value of another form (not a dict of one known, non-null member, a
member of the wrong JSON type, a null inside a map or list) goes the old way, which raises or
reads it as it always did. Only the JSON protocol's parser (DynamoDB's) takes this path: its
strings and booleans are read as they came.
"""
from moto.core.parse import BaseJSONParser, JSONParser

_STRUCTURE = BaseJSONParser._parse_structure
_AS_IS = frozenset(("S", "N", "NULL", "BOOL"))


class _OtherForm(Exception):
    """A value this fast path does not read exactly as the walk would: use the walk."""


def _value(parser, value):
    if type(value) is not dict or len(value) != 1:
        raise _OtherForm()
    ((member, raw),) = value.items()
    if raw is None:
        raise _OtherForm()
    if member in _AS_IS:
        read = raw
    elif member == "B":
        read = parser._blob_parser(raw)
    elif member == "M":
        if type(raw) is not dict:
            raise _OtherForm()
        read = parser.MAP_TYPE()
        for key, inner in raw.items():
            read[key] = _value(parser, inner)
    elif type(raw) is not list:
        raise _OtherForm()
    elif member == "L":
        read = [_value(parser, inner) for inner in raw]
    elif member == "BS":
        read = [parser._blob_parser(b) for b in raw]
    elif member in ("SS", "NS"):
        read = list(raw)
    else:
        raise _OtherForm()
    out = parser.MAP_TYPE()
    out[member] = read
    return out


def _parse_structure(self, shape, value):
    if value is not None and shape.name == "AttributeValue" and type(self) is JSONParser:
        try:
            return _value(self, value)
        except Exception:
            pass
    return _STRUCTURE(self, shape, value)


BaseJSONParser._parse_structure = _parse_structure
