#!/usr/bin/env bash
# Regenerates src/gen from proto/ with buf (npm package, no protoc needed) and ts-proto.
# CI runs this and fails on any diff, so generated code always matches the .proto files.
set -euo pipefail
cd "$(dirname "$0")"
rm -rf ../src/gen
../node_modules/.bin/buf generate
