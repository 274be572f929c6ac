#!/usr/bin/env bash
# The paper-sized capsule comparison (`bench curves capsules` at 2,500 steps, 8 paired seeds) on one
# GPU inside a fixed deadline, as the device machine allows: every run of it on that one device, one
# thread per run, JOBS runs at a time.
#
#   tools/gpu_capsule_curves.sh OUT [DEADLINE_S] [JOBS]
#
# 1. the hard synthetic level (the numba kernels compile beside it and the runs);
# 2. stage a: learning rate 1e-3 (centroid attention, dynamic routing, the floor), records in OUT/a;
#    then, while time is left, stage b: the same with the A/A control (dynamic routing at seeds +
#    1000), in OUT/b; stage c: that with the paper's 1e-4 added, in OUT/c.
# A stage stopped by the deadline is reported over the seeds that every one of its cells finished
# (the same command with --seeds K reuses them all; a verdict needs 8). OUT/runs.tgz holds every
# run's metrics, protocol, config and report (no checkpoints), seed 0's pictures and the stages'
# plots; with OUT/log.txt and each stage's curves_capsules.md / .json that is at most 8 files.
#
# On the device machine (no trimesh, which `data synth` needs), from the repository root:
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl &&
#     PYTHONPATH=/tmp/site bash tools/gpu_capsule_curves.sh $OUT 545 8
# with the trimesh wheel in .whl (carried; `pip download --no-deps trimesh==5.2.0 -d .whl` here).
set -u
OUT=${1:?usage: tools/gpu_capsule_curves.sh OUT [DEADLINE_S] [JOBS]}
DEADLINE=${2:-540}
JOBS=${3:-8}
PY=${PYTHON:-python3}
RESERVE=45  # seconds kept for the records and the archive
RUNS=${RUNS:-runs/bench/curves}
BUDGET=${BUDGET:-2500}  # steps (another value, and DATA, only to try the script out)
DATA=${DATA:-datasets/synthetic-hard}
START=$(date +%s)
export OMP_WAIT_POLICY=PASSIVE PYTHONUNBUFFERED=1
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1

left() { echo $((DEADLINE - ($(date +%s) - START))); }
say() { echo "[$(($(date +%s) - START)) s] $*"; }

# `bench curves` at this script's comparison, budget, data and folders; each call adds its own options
ARGS=(capsules --budgets "$BUDGET" --threads 1 --runs "$RUNS" --data "$DATA")
CURVES=("$PY" -m pointabstract.cli bench curves "${ARGS[@]}")

# the K for which seeds 0..K-1 of every cell that `bench curves ARGS OPTIONS...` trains have finished,
# read from the same options through its own parser (bench.curves.selected) and plan (curve_runs.plan)
finished_seeds() {  # finished_seeds OPTIONS...
  "$PY" - "${ARGS[@]}" "$@" <<'EOF'
import argparse
import sys
from pathlib import Path

from pointabstract.bench.curve_runs import plan
from pointabstract.bench.curves import add_arguments, selected

parser = argparse.ArgumentParser()
add_arguments(parser)
args = parser.parse_args(sys.argv[1:])
budgets, comp = selected(args)
runs = Path(args.runs) / args.comparison
k = 0
while k < args.seeds and all((c.folder(runs, comp.unit) / "metrics.json").is_file()
                             for c in plan(comp, budgets, [k], control=bool(comp.control))):
    k += 1
print(k)
EOF
}

stage() {  # stage NAME control|no-control VARIANT...
  local name=$1 control=$2; shift 2
  local opts=(--results "$OUT/$name" --variants "$@")
  [ "$control" = control ] || opts+=(--no-control)
  say "stage $name: bench curves ${opts[*]}"
  setsid "${CURVES[@]}" --seeds 8 --jobs "$JOBS" "${opts[@]}" &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$(left)" -le "$RESERVE" ]; then
      say "stage $name: deadline; stopping its runs"
      kill -9 -- -"$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      local k
      k=$(finished_seeds --seeds 8 "${opts[@]}")
      if [ "$k" -ge 1 ]; then
        say "stage $name: seeds 0..$((k - 1)) finished in every cell"
        "${CURVES[@]}" --seeds "$k" --jobs 1 "${opts[@]}" | tail -n 60
      else
        say "stage $name: no seed finished in every cell; no records"
      fi
      return 1
    fi
    sleep 5
  done
  local rc
  wait "$pid"
  rc=$?
  say "stage $name: done (exit $rc)"
  return "$rc"
}

say "start; deadline ${DEADLINE} s, ${JOBS} runs at a time"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
"$PY" -c "import torch, numba; print('torch', torch.__version__, torch.cuda.get_device_name(), 'numba', numba.__version__)"
nproc

# the kernels compile in the background (a run that needs one first compiles it too; numba writes
# each cache entry atomically); the runs wait for the data only
for job in $("$PY" -c "from pointabstract.ops.kernels.warm import GROUPS, PASSES
print(*(f'{g}:{p}' for g in GROUPS for p in PASSES))"); do
  nice "$PY" -m pointabstract.ops.kernels.warm "$job" > /dev/null 2>&1 &
done
if [ -d "$DATA" ]; then echo "$DATA is there"
else "$PY" -m pointabstract.cli data synth --level hard --out "$DATA" 2>&1 | tail -n 3; fi
say "data ready"

stage a no-control centroid dynamic plain_autoencoder &&
  [ "$(left)" -gt 120 ] && stage b control centroid dynamic plain_autoencoder &&
  [ "$(left)" -gt 200 ] && stage c control centroid dynamic plain_autoencoder centroid_lr1e-4 dynamic_lr1e-4 \
    plain_autoencoder_lr1e-4

say "archive"
find "$RUNS/capsules" \( -name metrics.json -o -name metrics.jsonl -o -name protocol.json \
  -o -name config.yaml -o -name report.md \) > /tmp/keep.txt
find "$RUNS/capsules" -path '*/seed0/*' -name '*.png' >> /tmp/keep.txt
find "$OUT" -name '*.png' >> /tmp/keep.txt  # at most 8 files come back: the curves' plots go in the archive
tar czf "$OUT/runs.tgz" -T /tmp/keep.txt && find "$OUT" -name '*.png' -delete
nvidia-smi --query-gpu=memory.used --format=csv,noheader
say "end"
