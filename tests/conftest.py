"""Test-session setup: the checkout's ``validation`` and ``benchmarks`` importable.

Some tests import the validation suite or the benchmarks, which live next to
the package (not inside it).  The checkout's root is appended to ``sys.path``,
after site-packages, so that ``import msvm`` still resolves to an installed
msvm when the tests are run against one from another directory
(``cd /tmp && python -m pytest <checkout>/tests``); run from the checkout's
root, ``python -m pytest`` puts the checkout first, as before.
(``problem_factory`` needs nothing: pytest puts ``tests/`` on the path.)
"""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.append(ROOT)
