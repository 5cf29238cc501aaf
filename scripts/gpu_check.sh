#!/usr/bin/env bash
# One-shot check on a machine with a CUDA GPU: the local backend in bfloat16 and float32 on the
# GPU against CPU float32 scores (largest |p_true difference|) and the throughput of each, on a
# tiny model built on the spot and on the demo model when it is installed. Needs the project's
# venv (make install) with a CUDA build of torch. Exits 3 when there is no CUDA device.
#   scripts/gpu_check.sh [--queries 64] [--out gpu_check.json] [--device cuda:0]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec "$PY" bench/gpu_check.py "$@"
