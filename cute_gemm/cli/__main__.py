"""`python -m cute_gemm.cli ...`: the same command line as `cute-gemm ...`."""
import sys

from . import main

if __name__ == "__main__":   # spawned compile workers re-import this module as __mp_main__
    sys.exit(main())
