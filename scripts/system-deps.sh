#!/usr/bin/env bash
# The Debian packages ambiqa needs beyond Node and Python:
#   - Chromium + DejaVu fonts (PNG export of plots, the PNG part of notebook figures, browser tests)
#   - maven, python3-venv, python3-pip only where missing (setup fetches the embedder with mvn and
#     builds the MLflow venv with python3)
#
# Usage: scripts/system-deps.sh          install what is missing (needs root; otherwise prints the command)
#        scripts/system-deps.sh --check  exit 0 when everything is present, 1 (listing what is not) otherwise
# Exit codes: 0 ok, 1 missing (--check) or install failed, 2 missing and not root.
# Called by `npx ambiqa setup` and by .ci/run. Idempotent: when all is present it only tests files.
set -u

missing=()
need() { # need <marker path or command> <package>...
  local marker=$1
  shift
  if [[ $marker == /* ]]; then
    [[ -e $marker ]] && return 0
  else
    command -v "$marker" >/dev/null 2>&1 && return 0
  fi
  missing+=("$@")
}

# Jupyter is not here: JupyterLab 4, nbconvert and plotly's renderer come from PyPI into the
# project venv (src/setup/venv.ts), pinned like MLflow. Nothing needs Debian's Notebook 6 any more.
need /usr/bin/chromium chromium
need /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf fonts-dejavu-core
need mvn maven
python=${AMBIQA_PYTHON:-python3}
# One interpreter start (pyenv shims are slow): prints the Debian packages for what Python lacks.
py_missing=$("$python" -c 'import importlib.util as u
print(" ".join(p for m, p in (("ensurepip", "python3-venv"), ("venv", "python3-venv"), ("pip", "python3-pip")) if u.find_spec(m) is None))' 2>/dev/null) ||
  py_missing="python3 python3-venv python3-pip"
for p in $py_missing; do missing+=("$p"); done

# Deduplicate, keeping order.
declare -A seen=()
packages=()
for p in "${missing[@]+"${missing[@]}"}"; do
  [[ -n ${seen[$p]+x} ]] && continue
  seen[$p]=1
  packages+=("$p")
done

if [[ ${#packages[@]} -eq 0 ]]; then
  echo "system packages: all present"
  exit 0
fi

command_line="apt-get update && apt-get install -y --no-install-recommends ${packages[*]}"
if [[ ${1:-} == --check ]]; then
  echo "system packages missing: ${packages[*]}"
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "system packages missing: ${packages[*]}" >&2
  echo "this is not a Debian-like system (no apt-get): install the equivalents of these packages by hand" >&2
  exit 2
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "system packages missing: ${packages[*]}" >&2
  echo "run as root:  sudo sh -c '$command_line'" >&2
  exit 2
fi

echo "installing system packages: ${packages[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -q; then
  echo "apt-get update failed (offline?); to retry by hand: $command_line" >&2
  exit 1
fi
if ! apt-get install -y -q --no-install-recommends "${packages[@]}"; then
  echo "apt-get install failed; to retry by hand: $command_line" >&2
  exit 1
fi
echo "system packages installed: ${packages[*]}"
