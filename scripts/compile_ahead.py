"""Compile, side by side, every entry point the cross-checks of ``tests/test_gpu.py`` launch.

Run as a file, not from stdin: ``cache.Prefetch`` spawns its workers, and a spawned worker
re-imports the main program by path (``python3 - <<EOF`` gives it none).
"""
import time

from cute_gemm import check
from cute_gemm.build import cache


def main() -> None:
    t = time.perf_counter()
    jobs = sorted({j for lay in ("nn", "tn", "nt", "tt")
                   for j in check.launch_jobs(None, check.DEFAULT_SHAPES, lay)})
    ahead = cache.Prefetch(jobs)
    failed = [j for j, f in ahead.futures.items() if f.exception() is not None]
    ahead.close()
    print(f"== compiled ahead: {len(ahead.futures)} of {len(jobs)} entry points missing, "
          f"{len(failed)} failed, {time.perf_counter() - t:.0f} s")
    for j in failed[:5]:
        print("   failed:", j, ahead.futures[j].exception())


if __name__ == "__main__":
    main()
