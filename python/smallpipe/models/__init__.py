"""Closed-form and Markov models of TCP from the papers.

- :mod:`~smallpipe.models.fct_bounds`: the thesis's slow-start bound and processor-sharing ideal for FCT;
- :mod:`~smallpipe.models.padhye`: bulk TCP throughput with timeouts (Padhye et al. 1998);
- :mod:`~smallpipe.models.cardwell`: latency of a finite transfer, slow start then Padhye
  (Cardwell et al. 2000);
- :mod:`~smallpipe.models.interactive`: response time of interactive flows;
- :mod:`~smallpipe.models.padding_diversity`: response time of fully-backlogged, padded and
  diversified interactive flows, and the TCP-SF state machine;
- :mod:`~smallpipe.models.taq_markov`: the TAQ paper's small-packet-regime Markov chain;
- :mod:`~smallpipe.models.taq_full`: its full model with exponential-backoff stages;
- :mod:`~smallpipe.models.matta_guo`: aggregate against individual PID control (Matta & Guo);
- :mod:`~smallpipe.models.size_aware`: TCP throughput with per-packet loss probabilities
  and the size-aware drop curves (Tokuda et al. 2002).
"""

from smallpipe.models import (
    cardwell,
    fct_bounds,
    interactive,
    matta_guo,
    padding_diversity,
    padhye,
    size_aware,
    taq_full,
    taq_markov,
)

__all__ = ["cardwell", "fct_bounds", "interactive", "matta_guo", "padding_diversity", "padhye", "size_aware", "taq_full", "taq_markov"]
