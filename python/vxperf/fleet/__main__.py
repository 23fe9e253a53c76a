"""`python -m vxperf.fleet`: see vxperf.fleet."""

import sys

from vxperf.fleet import main

sys.exit(main())
