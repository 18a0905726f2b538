#!/usr/bin/env bash
# What the next session with a GPU should run (issues 12 and 20), ready to paste: each group fits
# one 10-minute device call, each step runs under its own timeout and writes its whole output to
# $OUT/<step>.txt (so a step that times out still returns what it printed).
#
#   bash benchmarks/gpu_session.sh prepare     # HERE, not on the device: data and wheels to carry
#
# then one device call per group, each with carry [".gpu_carry"] (the device's python3 has torch,
# Lightning, torchvision and torchmetrics; pycocotools travels as a wheel, CIFAR-10 as data):
#
#   bash benchmarks/gpu_session.sh issue34     # ~10 min: tests, retrain speed and accuracy, path strategies
#   bash benchmarks/gpu_session.sh tests       # ~2 min: the GPU tests that skip on CPU
#   bash benchmarks/gpu_session.sh accuracy    # ~3 min: retrain_accuracy (fast path vs plain loop)
#   bash benchmarks/gpu_session.sh oneshot     # ~6 min: darts_step's path strategies (Proxyless two-path)
#   bash benchmarks/gpu_session.sh retrain     # ~5 min: retrain_step (CUDA-graph retraining vs a plain loop)
#   bash benchmarks/gpu_session.sh detection   # ~10 min: the detection tutorial's full run
#   bash benchmarks/gpu_session.sh tests_weights  # ~9.5 min: the GPU tests, then DARTS-V2 weights
#   bash benchmarks/gpu_session.sh issue30     # ~9.5 min: re-runs of the GPU figures (issue 30)
#
# Afterwards write the figures and this script's command into the results files beside the
# benchmarks (darts_step.results.md, retrain_step.results.md) and tutorials/spinenet_detection.py.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/nasx-gpu}
CARRY=.gpu_carry
mkdir -p "$OUT"

step() {  # step NAME SECONDS COMMAND...: run it under a timeout, all output to $OUT/NAME.txt
    local name=$1 limit=$2
    shift 2
    echo "== $name (limit ${limit} s): $*"
    {
        nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
        python3 -c "import torch; print('torch', torch.__version__)"
        timeout "$limit" "$@"
        echo "exit code $?"
    } >"$OUT/$name.txt" 2>&1
    tail -n 30 "$OUT/$name.txt"
}

device_setup() {  # the carried wheels on the path, unbuffered output, nasx from this tree
    if compgen -G "$CARRY/whl/*.whl" >/dev/null; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target /tmp/site "$CARRY"/whl/*.whl ||
            echo "warning: the carried wheels did not install (Detection's mAP needs pycocotools)"
    fi
    export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1 NASX_DATA_DIR="$PWD/$CARRY/data"
}

gpu_tests() {
    step gpu_tests 170 python3 -m pytest -q -p no:cacheprovider -m "slow or not slow" -rs \
        --timeout 120 tests/evaluator/test_cuda_graphs.py tests/experiment/test_gpu_trials.py \
        tests/strategy/oneshot/test_cuda_graphs.py tests/strategy/oneshot/test_base.py \
        tests/test_cuda_graph.py tests/hardware/test_latency.py \
        tests/nni_compat/test_evaluator_darts_tutorial.py
}

retrain_accuracy() {
    step retrain_accuracy 200 python3 benchmarks/retrain_accuracy.py --data-dir "$CARRY/data" \
        --train-images 10000 --epochs 3 --seeds 0,1
}

retrain_and_paths() {  # retraining speed, then accuracy, then the path strategies (~6 min)
    step retrain_step 130 python3 benchmarks/retrain_step.py --repeats 3
    retrain_accuracy
    step darts_step_paths 110 python3 benchmarks/darts_step.py --device cuda --variants oneshot \
        --ref "sampled plain model" --width 16 --cells 8 --batch 64 --size 32 --steps 3 \
        --repeats 3 --no-memory
}

case "${1:-}" in
prepare)
    grep -qx "/$CARRY/" .git/info/exclude 2>/dev/null || echo "/$CARRY/" >>.git/info/exclude
    mkdir -p "$CARRY/data" "$CARRY/whl"
    cp -r ../shared/data/cifar10 "$CARRY/data/" # 19 MiB: the detection tutorial's photos
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$CARRY/whl" pycocotools==2.0.11
    du -sh "$CARRY"
    ;;
tests)  # every test that skips without CUDA, and the DARTS tutorial's GPU path (~2 min)
    device_setup
    gpu_tests
    ;;
accuracy)  # retraining accuracy: the evaluator's fast path against a plain loop (~3 min)
    device_setup
    retrain_accuracy
    ;;
oneshot)
    device_setup
    step darts_step_oneshot 540 python3 benchmarks/darts_step.py --device cuda --variants oneshot \
        --ref "sampled 4 archs" --width 16 --cells 8 --batch 64 --size 32
    ;;
retrain)
    device_setup
    step retrain_step 540 python3 benchmarks/retrain_step.py
    ;;
issue34)  # issue 34 in one ~10-minute call: the GPU tests, then retraining speed and accuracy,
    # then the path strategies; each step under its own timeout, the most important first.
    device_setup
    gpu_tests
    retrain_and_paths
    ;;
issue30)  # issue 30's GPU rows (AUDIT R13 / R15 / R16, B1 / B5 / B28 / B30) in one call of at
    # most ~9.5 minutes: retraining speed and accuracy, the path strategies, then the DARTS step's
    # main variants for the time left (computed from $SECONDS, so the call ends inside its limit)
    device_setup
    retrain_and_paths
    step darts_step_main $((575 - SECONDS)) python3 benchmarks/darts_step.py --device cuda \
        --width 16 --cells 8 --batch 64 --size 32 --steps 3 --repeats 3 --no-memory \
        --variants "plain,plain cuda-graph,nasx (defaults),nasx fp32"
    ;;
tests_weights)  # issue 34 items 1 and 4 in one call of at most 9.5 minutes: the GPU tests, then
    # a warm restart of the DARTS-V2 schedule from the shipped weights for the time left (the
    # checkpoint, log and exported file land in $OUT/dv2; each under the 16 MiB a file may be)
    device_setup
    gpu_tests
    minutes=$(python3 -c "print(max(2.0, (560 - $SECONDS) / 60))")
    step train_pretrained $((${minutes%.*} * 60 + 90)) python3 benchmarks/train_pretrained.py \
        --data-dir "$CARRY/data" --out "$OUT/dv2" --init nasx/hub/weights/darts-v2-cifar10.pt \
        --lr 0.03 --minutes "$minutes"
    ;;
detection)
    device_setup
    step spinenet_detection 580 python3 tutorials/spinenet_detection.py --search-minutes 3 \
        --final-epochs 12 --workdir /tmp/spinenet_det
    ;;
*)
    echo "usage: bash benchmarks/gpu_session.sh prepare|issue30|issue34|tests|tests_weights|accuracy|oneshot|retrain|detection" >&2
    exit 2
    ;;
esac
