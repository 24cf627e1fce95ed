"""What the ns-2 tests share: benches/ns2's drivers loaded by file, and the mark that skips
a test on a machine without Debian's `ns`."""

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

DRIVERS = Path(__file__).resolve().parents[1] / "benches" / "ns2"

requires_ns = pytest.mark.skipif(shutil.which("ns") is None,
                                 reason="ns-2 is not installed (`apt-get install ns2`; scripts/test.sh does it)")


def load(name: str) -> ModuleType:
    """benches/ns2/NAME.py as a module. The folder goes on sys.path so that a driver can
    import its siblings (ns2_side, bench_dumbbell) as it does when run as a script."""
    if str(DRIVERS) not in sys.path:
        sys.path.insert(0, str(DRIVERS))
    spec = importlib.util.spec_from_file_location(name, DRIVERS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
