#!/usr/bin/env bash
# Installs smallpipe (builds the Rust core in release), builds the middlebox and the
# testbed's traffic generator, and runs the default scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e .
cargo build --release -p smallpipe-middlebox -p smallpipe-trafficgen
smallpipe run examples/dumbbell.toml
