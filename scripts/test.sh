#!/usr/bin/env bash
# Installs smallpipe with its test extras (building the Rust core in release once) and runs
# every test: Rust unit, property and behaviour tests, then the Python suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'
cargo test --release --workspace --exclude smallpipe-py
python3 -m pytest -q
