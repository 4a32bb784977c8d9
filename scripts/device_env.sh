# Sourced by the device-side scripts (gpu_check.sh, perf_probe.sh) from the repository
# root: OUT, the carried wheels (.whl: nvidia-cutlass, nvidia-cuda-cccl, nvidia-cuda-runtime;
# the GPU host has no package index) installed into /tmp/site, this checkout on
# PYTHONPATH, and the cubin cache in .cgcache (a cache built on the CPU machine for sm_90
# travels there: same NVRTC 13.0 and header wheels, same keys). Files outside OUT do not
# survive a call: pack_cache writes the cache to $OUT/cgpack (xz, 15 MB parts: ~40 MB for
# every entry the GPU suite compiles); copied to .cgpack/ and carried, the next call starts
# from it. The carry limit is 64 MiB with the tree and .whl.
OUT="${OUT:-/tmp/cute_gemm_out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# the host sets PYTHONDONTWRITEBYTECODE: every fresh interpreter would compile cute_gemm from
# source, which no installed copy does, and first-call figures would carry it
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/cute_gemm_pycache
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || { echo "wheel install failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD"
# the checkout is not pip-installed there: `cute-gemm` on PATH as its console script would be
# (an executable, so that `timeout cute-gemm ...` finds it too)
mkdir -p /tmp/cute_gemm_bin
printf '#!/bin/sh\nexec python3 -m cute_gemm "$@"\n' > /tmp/cute_gemm_bin/cute-gemm
chmod +x /tmp/cute_gemm_bin/cute-gemm
export PATH="/tmp/cute_gemm_bin:$PATH"
export CUTE_GEMM_CACHE_DIR="$PWD/.cgcache"
mkdir -p "$CUTE_GEMM_CACHE_DIR"
if compgen -G ".cgpack/part.*" > /dev/null; then
  cat .cgpack/part.* | xz -d -T0 | tar -xf - -C "$CUTE_GEMM_CACHE_DIR" \
      && echo "cubin cache restored from .cgpack: $(ls "$CUTE_GEMM_CACHE_DIR" | wc -l) files"
fi
pack_cache() {
  mkdir -p "$OUT/cgpack"
  # -3: blocks of 12 MB, so -T0 compresses on every core (-9's 192 MB blocks ran on one, for
  # over a minute of a call's ten)
  tar -cf - -C "$CUTE_GEMM_CACHE_DIR" --exclude='*.lock' . | xz -3 -T0 | split -b 15M - "$OUT/cgpack/part."
  echo "cubin cache packed: $(du -sh "$OUT/cgpack" | cut -f1) in $OUT/cgpack"
}
