"""``python -m bench``: run the benchmarks and print the report (see :mod:`bench.suite`)."""

import sys

from bench.suite import main

sys.exit(main())
