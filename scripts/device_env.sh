# Sourced by the device-side scripts (gpu_check.sh, perf_probe.sh) from the repository
# root: OUT, the carried wheels (.whl: nvidia-cutlass, nvidia-cuda-cccl, nvidia-cuda-runtime;
# the GPU host has no package index) installed into /tmp/site, this checkout on
# PYTHONPATH, and the cubin cache in .cgcache (a cache built on the CPU machine for sm_90
# travels there: same NVRTC 13.0 and header wheels, same keys).
OUT="${OUT:-/tmp/cute_gemm_out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# the host sets PYTHONDONTWRITEBYTECODE: every fresh interpreter would compile cute_gemm from
# source, which no installed copy does, and first-call figures would carry it
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/cute_gemm_pycache
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || { echo "wheel install failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD"
export CUTE_GEMM_CACHE_DIR="$PWD/.cgcache"
mkdir -p "$CUTE_GEMM_CACHE_DIR"
