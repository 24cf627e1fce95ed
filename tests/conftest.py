"""Suite-wide guards."""

import signal

import pytest


@pytest.fixture(autouse=True)
def _sigint_handler_is_left_as_found(request):
    """A test that leaves another SIGINT handler behind (SIG_IGN, or a handler that does
    not raise KeyboardInterrupt) breaks every later test of Ctrl-C, far from the cause:
    fail the test that did it, by name, and put Python's handler back."""
    before = signal.getsignal(signal.SIGINT)
    yield
    after = signal.getsignal(signal.SIGINT)
    if after is not before:
        signal.signal(signal.SIGINT, before)
        pytest.fail(f"{request.node.nodeid} left SIGINT's handler as {after!r} (it was {before!r})", pytrace=False)
