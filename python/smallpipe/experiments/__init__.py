"""Reproductions of the papers' figures. Each module runs one figure's set-up; its
``reproduce(out, quick=..., seed=...)`` writes a CSV and a PNG into ``out`` and returns
the table printed beside the paper's numbers (see docs/reproductions/)."""

from types import ModuleType

from smallpipe.experiments import (
    isolation_fig3,
    isolation_fig4,
    isolation_fig5,
    isolation_fig7,
    isolation_matta_guo,
    padding_fig3,
    padding_fig4,
    padding_fig5,
    padding_fig5a,
    padding_fig6,
    padding_fig7,
    padding_fig8,
    padding_fig9,
    padding_fig10,
    padding_fig12,
    size_aware_fig5,
    size_aware_fig6,
    size_aware_fig7,
    size_aware_fig8,
    size_aware_fig12,
    size_aware_fig13,
    size_aware_fig14,
    size_aware_table4,
    taq_aqm,
    taq_fig1,
    taq_fig2,
    taq_fig3,
    taq_fig6,
    taq_fig8,
    taq_fig9,
    taq_fig10,
    taq_fig12,
    taq_hangs,
    taq_hangs_queues,
    taq_testbed_fig11,
    taq_testbed_fig12,
    thesis_fig51,
    thesis_fig52,
    thesis_fig53,
    thesis_fig54,
)

REPRODUCTIONS: dict[str, ModuleType] = {
    "isolation-fig3": isolation_fig3,
    "isolation-fig4": isolation_fig4,
    "isolation-fig5": isolation_fig5,
    "isolation-fig7": isolation_fig7,
    "isolation-matta-guo": isolation_matta_guo,
    "padding-fig3": padding_fig3,
    "padding-fig4": padding_fig4,
    "padding-fig5": padding_fig5,
    "padding-fig5a": padding_fig5a,
    "padding-fig6": padding_fig6,
    "padding-fig7": padding_fig7,
    "padding-fig8": padding_fig8,
    "padding-fig9": padding_fig9,
    "padding-fig10": padding_fig10,
    "padding-fig12": padding_fig12,
    "size-aware-fig14": size_aware_fig14,
    "size-aware-fig5": size_aware_fig5,
    "size-aware-fig6": size_aware_fig6,
    "size-aware-fig7": size_aware_fig7,
    "size-aware-fig8": size_aware_fig8,
    "size-aware-fig12": size_aware_fig12,
    "size-aware-fig13": size_aware_fig13,
    "size-aware-table4": size_aware_table4,
    "taq-fig1": taq_fig1,
    "taq-fig2": taq_fig2,
    "taq-fig2-aqm": taq_aqm,
    "taq-fig3": taq_fig3,
    "taq-fig6": taq_fig6,
    "taq-fig8": taq_fig8,
    "taq-fig9": taq_fig9,
    "taq-fig10": taq_fig10,
    "taq-fig12": taq_fig12,
    "taq-hangs": taq_hangs,
    "taq-hangs-queues": taq_hangs_queues,
    "taq-testbed-fig11": taq_testbed_fig11,
    "taq-testbed-fig12": taq_testbed_fig12,
    "thesis-fig5.1": thesis_fig51,
    "thesis-fig5.2": thesis_fig52,
    "thesis-fig5.3": thesis_fig53,
    "thesis-fig5.4": thesis_fig54,
}
"""Figure name (as `smallpipe reproduce NAME` takes it) → its module."""

TESTBED = frozenset({"taq-testbed-fig11", "taq-testbed-fig12"})
"""Reproductions on real Linux TCP (root, network namespaces, hours on quiet cores): run them
with scripts/testbed-measurements.sh, not with the simulator's figures."""

PAGES = {"taq": "taq", "taq-testbed": "taq-testbed", "thesis": "thesis", "isolation": "class-isolation",
         "size-aware": "size-aware", "padding": "padding-diversity"}
"""A figure name's prefix → its page's folder under docs/reproductions/ (the longest prefix wins)."""


def page_of(figure: str) -> str:
    """The folder of docs/reproductions/ that holds ``figure``'s CSVs (``taq-fig8`` → ``taq``,
    ``taq-testbed-fig11`` → ``taq-testbed``)."""
    prefix = max((p for p in PAGES if figure.startswith(p + "-")), key=len, default=None)
    if prefix is None or figure not in REPRODUCTIONS:
        raise KeyError(f"{figure!r} is not a reproduction; expected one of: {', '.join(REPRODUCTIONS)}")
    return PAGES[prefix]


__all__ = [
    "PAGES",
    "REPRODUCTIONS",
    "TESTBED",
    "isolation_fig3",
    "isolation_fig4",
    "isolation_fig5",
    "isolation_fig7",
    "isolation_matta_guo",
    "padding_fig3",
    "padding_fig4",
    "padding_fig5",
    "padding_fig5a",
    "padding_fig6",
    "padding_fig7",
    "padding_fig8",
    "padding_fig9",
    "padding_fig10",
    "padding_fig12",
    "page_of",
    "size_aware_fig5",
    "size_aware_fig6",
    "size_aware_fig7",
    "size_aware_fig8",
    "size_aware_fig12",
    "size_aware_fig13",
    "size_aware_fig14",
    "size_aware_table4",
    "taq_aqm",
    "taq_fig1",
    "taq_fig2",
    "taq_fig3",
    "taq_fig8",
    "taq_fig9",
    "taq_fig10",
    "taq_fig12",
    "taq_hangs",
    "taq_hangs_queues",
    "taq_testbed_fig11",
    "taq_testbed_fig12",
    "thesis_fig51",
    "thesis_fig52",
    "thesis_fig53",
    "thesis_fig54",
]
