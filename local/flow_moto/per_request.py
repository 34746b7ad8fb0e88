"""
Importing this module makes the work every request pays, whatever its operation, cheaper with the
same answers (moto's hot spots, point 3 of moto-launcher.py):

- The request id drawn without random.choice's layers. Every answer carries a 52-character
  x-amzn-requestid that moto draws one character at a time through Random.choice and
  _randbelow (two Python calls and a list per character: 21 µs an id, 5 µs now). The same
  draws are made directly: getrandbits of the pool's bit length, redrawn while out of range,
  exactly as _randbelow does, so a seeded moto (/moto-api/seed) still gives the very same ids,
  in the same order.
- No request log line formatted when nobody reads it. werkzeug's handler formats each
  request's line (path decoding, escapes, the time) before its logger drops it: the launcher
  sets that logger to errors only, so the line is skipped when the logger would drop it.
- The garbage collector kept off what lives for good (`settle()`, called once the launcher has
  imported and restored everything, before it serves). Python's collector traverses every
  container object it tracks at its full collections, and moto's imports (botocore's models,
  ~100,000 objects) never go away, and a request allocates many short-lived containers, so
  collections ran every few requests; the objects present at the start are frozen out of
  them (gc.freeze) and the youngest generation is collected every 20,000 allocations instead
  of 700: in a replay of 6,000 GetItem and DescribeTable requests through the app the
  collector's time went from 0.60 s to 0.28 s. Collection only frees unreachable cycles, so no
  answer can change; memory still returns, a little later.
- No class built for every request. moto runs its Flask apps in debug mode, where Flask, at each
  request's first read of its form, subclasses the request's (empty) files dict to word a
  KeyError for a browser's form better, building a new class every time (~17 µs). moto reads
  no file that is not there, so no answer has that error in it: the request keeps its dict.
"""
import gc
import logging
import random
import string

from flask import debughelpers
from moto.moto_api._internal.moto_random import MotoRandom
from werkzeug.serving import WSGIRequestHandler

_random_string = MotoRandom.get_random_string


def _get_random_string(self, length=20, include_digits=True, lower_case=False):
    if type(self)._randbelow is not random.Random._randbelow_with_getrandbits:
        return _random_string(self, length, include_digits, lower_case)
    pool = string.ascii_letters + string.digits if include_digits else string.ascii_letters
    size = len(pool)
    bits = size.bit_length()
    draw = self.getrandbits
    out = []
    append = out.append
    for _ in range(length):
        r = draw(bits)
        while r >= size:
            r = draw(bits)
        append(pool[r])
    text = "".join(out)
    return text.lower() if lower_case else text


MotoRandom.get_random_string = _get_random_string

_log_request = WSGIRequestHandler.log_request
_werkzeug_log = logging.getLogger("werkzeug")


def _log_request_if_read(self, code="-", size="-"):
    # An unset level is werkzeug's to set (to INFO, at its first line): only a set one is read.
    if _werkzeug_log.level == logging.NOTSET or _werkzeug_log.isEnabledFor(logging.INFO):
        _log_request(self, code, size)


WSGIRequestHandler.log_request = _log_request_if_read


def _keep_files(request):
    """flask.debughelpers.attach_enctype_error_multidict, which words a KeyError of
    request.files[...] for a browser's form: left out."""


debughelpers.attach_enctype_error_multidict = _keep_files


def settle():
    """Freezes the objects alive now out of the collector's reach; collects young objects less often."""
    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(20_000, second, third)
