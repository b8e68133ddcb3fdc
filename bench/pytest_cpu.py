"""A pytest plugin for `bench/test_time.py`: the CPU seconds each test file costs, children included.

Loaded with ``-p pytest_cpu`` (bench/ on PYTHONPATH) and told where to write by ``OVIG_TEST_CPU_DIR``. Every
process (the one pytest, or each xdist worker) writes one JSON file there at the end of its session: the user
plus system seconds of itself and of every child it has waited for (``harness.own_cpu_seconds``), per test file
(a module's fixtures are set up and torn down inside its first and last test, so they count to it). A child still
running when a test ends (a daemon a session fixture owns) counts where it is reaped.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import own_cpu_seconds

_files: Counter[str] = Counter()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    before = own_cpu_seconds()
    yield
    _files[item.nodeid.split("::")[0]] += own_cpu_seconds() - before


def pytest_sessionfinish(session: pytest.Session) -> None:
    folder = os.environ.get("OVIG_TEST_CPU_DIR")
    if not folder:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (Path(folder) / f"{worker}.json").write_text(json.dumps({"files": dict(_files)}))
