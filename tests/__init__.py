"""The test suite.  Set here, before any test module imports PyTorch (libgomp reads it once, at load):

The suite runs one xdist worker per core, so every OpenMP thread that waits for work shares its core with the other
worker.  OpenMP's default wait spins, taking the core from the worker that has work; ``OMP_WAIT_POLICY=PASSIVE``
sleeps instead (docs/architecture.md, the test suite), and the converters the tests start inherit it.  A value
the caller set is kept.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
