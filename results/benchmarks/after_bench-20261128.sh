#!/bin/bash
# after the accuracy benchmark: the flagship example, tune -> sweep --config on MNIST
. /work/main/.venv/bin/activate
export PYTHONPATH=/work/main GLUONBENCH_DATA=/work/shared/data GLUONBENCH_OFFLINE=1
cd /tmp/flag && rm -rf data gluonbench-results tuned.toml
echo "== flagship $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/time -f "%e s" python /work/main/examples/imagefolder_pipeline.py data/images 2>&1 | tail -3
/usr/bin/time -f "%e s" python -m gluonbench diagnose --pipeline /work/main/examples/imagefolder_pipeline.py:make --pipeline-option root=data/images --workers 0 --batch-size 16 --budget 60 > flagship.txt 2> flagship.err
echo "rc=$? $(date -u +%T)"; tail -3 flagship.err
echo "== tune $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
python -m gluonbench tune --budget 60 --max-workers 2 --toml tuned.toml > tune.txt 2> tune.err; echo "rc=$?"
echo "== sweep --config $(date -u +%T)"
python -m gluonbench sweep --config tuned.toml --out sweepout > sweep.txt 2> sweep.err; echo "rc=$? $(date -u +%T)"
