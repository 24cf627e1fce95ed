"""Reproductions of the papers' figures. Each module runs one figure's set-up; its
``reproduce(out, quick=..., seed=...)`` writes a CSV and a PNG into ``out`` and returns
the table printed beside the paper's numbers (see docs/reproductions/)."""

from types import ModuleType

from smallpipe.experiments import size_aware_fig5, size_aware_fig7, size_aware_fig14, size_aware_table4, taq_fig1, taq_fig2, taq_hangs, thesis_fig51

REPRODUCTIONS: dict[str, ModuleType] = {
    "taq-fig1": taq_fig1,
    "taq-fig2": taq_fig2,
    "taq-hangs": taq_hangs,
    "thesis-fig5.1": thesis_fig51,
    "size-aware-fig5": size_aware_fig5,
    "size-aware-fig7": size_aware_fig7,
    "size-aware-table4": size_aware_table4,
    "size-aware-fig14": size_aware_fig14,
}
"""Figure name (as `smallpipe reproduce NAME` takes it) → its module."""

__all__ = ["REPRODUCTIONS", "size_aware_fig5", "size_aware_fig7", "size_aware_fig14", "size_aware_table4", "taq_fig1", "taq_fig2", "taq_hangs", "thesis_fig51"]
