"""smallpipe: fair, predictable TCP on thin, crowded links.

Quick start::

    import smallpipe
    result = smallpipe.simulate("examples/dumbbell.toml")
    smallpipe.metrics.jain_per_slice(result.slices, flows=result.flows)
"""

from smallpipe import metrics, models
from smallpipe._smallpipe import ConfigError, SimulationError, __version__
from smallpipe.result import Result, simulate
from smallpipe.scenario import Scenario

__all__ = [
    "ConfigError",
    "Result",
    "Scenario",
    "SimulationError",
    "__version__",
    "metrics",
    "models",
    "simulate",
]
