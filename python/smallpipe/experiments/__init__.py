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
    today_fig12,
    today_hangs,
    today_isolation,
    today_mixed,
    today_padding,
    today_taq,
    today_thesis,
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
    "today-mixed": today_mixed,
    "today-taq": today_taq,
    "today-thesis": today_thesis,
    "today-padding": today_padding,
    "today-hangs": today_hangs,
    "today-fig12": today_fig12,
    "today-isolation": today_isolation,
}
"""Figure name (as `smallpipe reproduce NAME` takes it) → its module."""

TESTBED = frozenset({"taq-testbed-fig11", "taq-testbed-fig12"})
"""Reproductions on real Linux TCP (root, network namespaces, hours on quiet cores): run them
with scripts/testbed-measurements.sh, not with the simulator's figures."""

WALL_TIMES_S: dict[str, tuple[float, float]] = {
    # docs/reproductions/class-isolation.md: a quieter 2-core machine / one shared by eight sessions
    "isolation-fig3": (75, 286),
    "isolation-fig4": (87, 133),
    "isolation-fig5": (45, 66),
    "isolation-fig7": (44, 137),
    "isolation-matta-guo": (9, 9),  # measured for this table (8.7 s; one core, the other busy)
    # docs/reproductions/padding-diversity.md (the machine shared by about eight sessions)
    "padding-fig3": (18, 18),
    "padding-fig4": (19, 19),
    "padding-fig5": (23, 120),
    "padding-fig5a": (16, 16),
    "padding-fig6": (60, 60),
    "padding-fig7": (14, 14),
    "padding-fig8": (14, 14),
    "padding-fig9": (180, 180),
    "padding-fig10": (10, 10),
    "padding-fig12": (11, 40),
    # docs/reproductions/size-aware.md: quiet 2-core machine / shared by about eight sessions
    "size-aware-fig14": (120, 228),
    "size-aware-fig5": (21, 242),
    "size-aware-fig6": (158, 158),
    "size-aware-fig7": (14, 120),
    "size-aware-fig8": (10, 10),
    "size-aware-fig12": (188, 188),
    "size-aware-fig13": (17, 17),
    "size-aware-table4": (180, 1080),
    # docs/reproductions/taq.md (its commands' comments, and "the others 12–32 s" of its
    # regeneration of Figures 6, 9, 10 and the hangs with the other queues)
    "taq-fig1": (8, 8),
    "taq-fig2": (80, 682),
    "taq-fig2-aqm": (550, 550),
    "taq-fig3": (192, 192),
    "taq-fig6": (29, 32),  # 28.6 s measured for this table (one core, the other busy)
    "taq-fig8": (279, 1205),
    "taq-fig9": (2, 32),
    "taq-fig10": (5, 32),
    "taq-fig12": (12, 87),
    "taq-hangs": (1, 1),
    "taq-hangs-queues": (6, 32),
    # docs/reproductions/taq-testbed.md: runs on quiet cores
    "taq-testbed-fig11": (5 * 3600 + 22 * 60, 5 * 3600 + 50 * 60),
    "taq-testbed-fig12": (3600, 3600),
    # docs/reproductions/thesis.md: quiet / under load
    "thesis-fig5.1": (120, 313),
    "thesis-fig5.2": (380, 380),
    "thesis-fig5.3": (180, 403),
    "thesis-fig5.4": (480, 890),
    # docs/reproductions/today.md (the 2-core machine shared with other sessions, load 3-5)
    "today-mixed": (220, 220),
    "today-taq": (61, 61),
    "today-thesis": (193, 193),
    "today-padding": (49, 49),
    "today-hangs": (18, 18),
    "today-fig12": (18, 18),
    "today-isolation": (209, 209),
}
"""Each figure's full reproduction (not ``--quick``): the shortest and longest wall time the
pages report, in seconds, on this project's 2-core machine from quiet to shared by other
jobs (``smallpipe reproduce list`` shows them)."""

TIME_CLASSES: tuple[tuple[float, str], ...] = ((60, "seconds"), (20 * 60, "minutes"), (3600, "tens of minutes"))
"""Upper bounds (s) of the time classes `reproduce list` shows; longer is ``hours``."""


def time_class(seconds: float) -> str:
    """The class of a wall time: seconds (under a minute), minutes (under 20), tens of
    minutes (under an hour) or hours."""
    return next((name for bound, name in TIME_CLASSES if seconds < bound), "hours")


def needs_root(figure: str) -> bool:
    """Whether reproducing ``figure`` needs root: the testbed's network namespaces do."""
    return figure in TESTBED


def description(figure: str) -> str:
    """The first paragraph of ``figure``'s module docstring, on one line: what it reproduces,
    in whole sentences (reStructuredText's double backquotes made single)."""
    paragraph = (REPRODUCTIONS[figure].__doc__ or "").strip().split("\n\n")[0]
    return " ".join(paragraph.split()).replace("``", "`")


PAGES = {"taq": "taq", "taq-testbed": "taq-testbed", "thesis": "thesis", "isolation": "class-isolation",
         "size-aware": "size-aware", "padding": "padding-diversity", "today": "today"}
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
    "TIME_CLASSES",
    "WALL_TIMES_S",
    "description",
    "isolation_fig3",
    "isolation_fig4",
    "isolation_fig5",
    "isolation_fig7",
    "isolation_matta_guo",
    "needs_root",
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
    "time_class",
    "today_fig12",
    "today_hangs",
    "today_isolation",
    "today_mixed",
    "today_padding",
    "today_taq",
    "today_thesis",
]
