#!/bin/sh
# Register ambiqa's tslab kernel under <repo>/.jupyter and print the environment Jupyter needs.
# CI and people use the same code path as `ambiqa notebook` (src/notebook/kernel.ts):
#   eval "$(scripts/jupyter-kernel.sh)"
#   jupyter nbconvert --to notebook --execute notebooks/01-quickstart.ipynb --output-dir /tmp/out
set -eu
cd "$(dirname "$0")/.."
exec node bin/ambiqa.mjs notebook --register-only --print-env
