"""Reproductions of the papers' figures. Each module runs one figure's set-up; its
``reproduce(out, quick=..., seed=...)`` writes a CSV and a PNG into ``out`` and returns
the table printed beside the paper's numbers (see docs/reproductions/)."""

from types import ModuleType

from smallpipe.experiments import taq_aqm, taq_fig1, taq_fig2, taq_fig3, taq_hangs, thesis_fig51, thesis_fig53, thesis_fig54

REPRODUCTIONS: dict[str, ModuleType] = {
    "taq-fig1": taq_fig1,
    "taq-fig2": taq_fig2,
    "taq-fig2-aqm": taq_aqm,
    "taq-fig3": taq_fig3,
    "taq-hangs": taq_hangs,
    "thesis-fig5.1": thesis_fig51,
    "thesis-fig5.3": thesis_fig53,
    "thesis-fig5.4": thesis_fig54,
}
"""Figure name (as `smallpipe reproduce NAME` takes it) → its module."""

__all__ = ["REPRODUCTIONS", "taq_aqm", "taq_fig1", "taq_fig2", "taq_fig3", "taq_hangs", "thesis_fig51", "thesis_fig53", "thesis_fig54"]
