#!/usr/bin/env bash
# Installs smallpipe (builds the Rust core in release) and runs the default scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e .
smallpipe run examples/dumbbell.toml
