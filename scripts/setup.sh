#!/usr/bin/env bash
# Sets up everything PrecisionTool, its demo and its tests need, on a fresh machine:
# the package (editable) with TensorFlow and the test tools, graphviz's `dot` for `ni -s` pictures, and
# Debian's Chromium for the HTML report's browser tests.
# The reference tool for cross-checks (msaccucmp) is built by the tests themselves when first needed.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check -e ".[tf,test,explore]" 2>&1 \
  | grep -v -e "Running pip as the 'root' user" -e "^$" || true
python3 -c "import importlib.util as u, precision_tool, rich, rich_argparse, prompt_toolkit, numpy, pandas, ml_dtypes, google.protobuf, jinja2
assert u.find_spec('tensorflow')" \
  || { echo "setup: the Python packages did not install; see pip's messages above" >&2; exit 1; }
if ! command -v dot >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq graphviz >/dev/null) \
      || echo "setup: could not install graphviz; \`ni -s\` will write .gv files without .svg" >&2
  else
    echo "setup: graphviz's dot is missing; install it (apt-get install graphviz) for \`ni -s\` pictures" >&2
  fi
fi
# The report's browser tests drive Debian's Chromium through playwright (never a downloaded browser).
if ! command -v chromium >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "setup: could not install chromium; the report's browser tests will say it is missing" >&2
  else
    echo "setup: chromium is missing; install it (apt-get install chromium) for the report's browser tests" >&2
  fi
fi
echo "setup: done ($(python3 -c 'import precision_tool;print("precision-tool", precision_tool.__version__)'))"
