#!/usr/bin/env bash
# One short run on a lent GPU machine (it installs nothing: python3 with cupy, numpy, pytest,
# PyTorch): the GPU tests, then the GPU benchmark. Output goes to $OUT (or ./gpu-check).
#   bash tools/gpu_check.sh            # from the repository root, on the GPU machine
set -u
out="${OUT:-gpu-check}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/device.txt"
python3 -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)" | tee -a "$out/device.txt"
# the tests marked gpu (tests/gpu), each on the real gpu(0); 240 s at most
timeout 240 env PYTHONPATH="$PWD" python3 -m pytest -q -m gpu -p no:cacheprovider \
    -W ignore::pytest.PytestConfigWarning tests/gpu 2>&1 | tail -40 | tee "$out/tests.txt"
# the benchmark against PyTorch on the same GPU; 240 s at most
timeout 240 env PYTHONPATH="$PWD" python3 benchmarks/gpu.py 2>&1 | tee "$out/bench.txt"
