#!/bin/sh
# Regenerates draplan.grpcplugin's protobuf and gRPC modules (and their .pyi stubs) from the
# .proto files beside them. Needs grpcio-tools and mypy-protobuf (the dev extras).
set -eu
cd "$(dirname "$0")/../src"
PY="${PYTHON:-python}"
BIN="$(dirname "$(command -v "$PY")")"
P=draplan/grpcplugin/protos
"$PY" -m grpc_tools.protoc -I . --python_out=. \
    --plugin=protoc-gen-mypy="$BIN/protoc-gen-mypy" --mypy_out=. $P/k8s.proto
"$PY" -m grpc_tools.protoc -I . --python_out=. --grpc_python_out=. \
    --plugin=protoc-gen-mypy="$BIN/protoc-gen-mypy" --mypy_out=. \
    --plugin=protoc-gen-mypy_grpc="$BIN/protoc-gen-mypy_grpc" --mypy_grpc_out=. \
    $P/expander.proto
