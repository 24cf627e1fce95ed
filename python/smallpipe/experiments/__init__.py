"""Reproductions of the papers' figures: each module runs one figure's set-up and
returns a table with the paper's reported values beside ours."""

from smallpipe.experiments import taq_fig2

__all__ = ["taq_fig2"]
