"""The ``process`` marker (tests/conftest.py): a test that starts an interpreter, directly or through a
helper of its module, is marked; one that does not is not."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

from conftest import starts_a_process


def _spawns():
    return subprocess.run([sys.executable, "-c", "pass"], check=True)


def _test_direct():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def _test_through_helper():
    _spawns()


def _test_pure():
    assert sum([1, 2]) == 3


def test_the_process_marker_reads_the_source():
    item = lambda f: SimpleNamespace(function=f)  # noqa: E731
    assert starts_a_process(item(_test_direct))
    assert starts_a_process(item(_test_through_helper))
    assert not starts_a_process(item(_test_pure))
    assert not starts_a_process(SimpleNamespace())  # a doctest item has no function
