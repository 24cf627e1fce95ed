#!/usr/bin/env bash
# Installs smallpipe with its test extras (building the Rust core in release once) and runs
# every test: ruff and mypy --strict on the package, Rust unit, property and behaviour
# tests, then the Python suite. The HTML report is tested in a real headless Chromium, and
# the run's pcap in tshark, both installed from Debian when missing, as are ethtool, which
# the testbed needs to turn the veth offloads off, and valgrind, whose cachegrind counts the
# instructions per event in benches/dumbbell_cost.py.
set -euo pipefail
cd "$(dirname "$0")/.."
# install_missing COMMAND PACKAGE WHAT: if COMMAND is missing and we are root with apt-get,
# install PACKAGE from Debian; if that fails, say which tests will skip.
install_missing() {
    if command -v "$1" >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
        return 0
    fi
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null) \
        || echo "warning: could not install $2; $3 will skip" >&2
}
install_missing chromium chromium "the browser tests"
install_missing ethtool ethtool "the testbed tests"
install_missing tshark tshark "the pcap test"
install_missing valgrind valgrind "the event-cost test (cachegrind)"
install_missing ns ns2 "the ns-2 tests"
python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'
# Static checks first: they take seconds and name the line.
python3 -m ruff check python tests
python3 -m mypy --strict python/smallpipe
# The pinned quick reproductions and the instruction count are deterministic and take about
# half of pytest's time: they run on the second core while Rust compiles, and never beside the
# testbed tests, whose timing needs quiet cores.
DETERMINISTIC=(tests/test_reproductions_pinned.py tests/test_dumbbell_cost.py)
BESIDE_LOG=$(mktemp)
python3 -m pytest -q -p no:cacheprovider "${DETERMINISTIC[@]}" >"$BESIDE_LOG" 2>&1 &
BESIDE=$!
trap 'kill "$BESIDE" 2>/dev/null || true; rm -f "$BESIDE_LOG"' EXIT
# The testbed tests (root, namespaces) run the release binaries.
cargo build --release -p smallpipe-middlebox -p smallpipe-trafficgen
cargo test --release --workspace --exclude smallpipe-py --no-run
beside_rc=0
wait "$BESIDE" || beside_rc=$?
echo "--- pytest ${DETERMINISTIC[*]} (run beside the Rust build)"
cat "$BESIDE_LOG"
[ "$beside_rc" = 0 ] || exit "$beside_rc"
cargo test --release --workspace --exclude smallpipe-py
python3 -m pytest -q "${DETERMINISTIC[@]/#/--ignore=}"
