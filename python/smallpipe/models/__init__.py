"""Closed-form and Markov models of TCP from the papers.

- :mod:`~smallpipe.models.padhye`: bulk TCP throughput with timeouts (Padhye et al. 1998);
- :mod:`~smallpipe.models.interactive`: response time of interactive flows;
- :mod:`~smallpipe.models.taq_markov`: the TAQ paper's small-packet-regime Markov chain.
"""

from smallpipe.models import interactive, padhye, taq_markov

__all__ = ["interactive", "padhye", "taq_markov"]
