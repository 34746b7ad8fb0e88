"""
moto's WSGI app and the one lock every request runs under (point 1 of moto-launcher.py), how a
request runs through it, and which DynamoDB requests only read. moto's own request routing is
made cheaper with the same answers (point 3): the list of its service modules is computed once
(moto lists its package directory and stats each of ~200 entries for every request, to see
whether the Host names a service), and so is each API's list of method names (moto lists every
member of the handler's class with inspect.getmembers for every request).
"""
import functools
import threading

from moto import backends
from moto.core import responses
from moto.dynamodb.models import dynamodb_backends
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

from .items import note_item_write

_MOTO_MODULES = frozenset(backends.list_of_moto_modules())
backends.list_of_moto_modules = lambda: _MOTO_MODULES
responses.method_names_from_class = functools.lru_cache(maxsize=None)(responses.method_names_from_class)

app = DomainDispatcherApplication(create_backend_app)
# The one lock every request runs under (point 1 of moto-launcher.py).
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
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    if target.startswith("DynamoDB_20120810.") and target not in READS:
        note_item_write()
    return run_app(app, environ)



def all_backends():
    for account, regions in list(dynamodb_backends.items()):
        for region, backend in list(regions.items()):
            yield (account, region), backend


