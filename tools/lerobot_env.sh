#!/usr/bin/env bash
# Build (once) a separate virtual environment holding LeRobot, used only by the test that
# loads an exported dataset with LeRobot's own reader. It is large (torch and friends,
# about 8 GB) and lives outside the repository, in the user's cache directory; the
# project's own venv never depends on it.
#
#   tools/lerobot_env.sh          build it if missing (cached), print its python
#   tools/lerobot_env.sh --path   print where it lives (built or not)
#
# Override the location with TELEDORA_LEROBOT_VENV. A finished build leaves a stamp file;
# an interrupted one is started over.
set -euo pipefail
version="0.4.4"   # the newest LeRobot release that installs on Python 3.11
venv="${TELEDORA_LEROBOT_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/teledora/lerobot-$version}"
if [ "${1:-}" = "--path" ]; then echo "$venv"; exit 0; fi
if [ -f "$venv/.teledora-complete" ] && [ -x "$venv/bin/python" ]; then
  echo "$venv/bin/python"; exit 0
fi
echo "building the LeRobot $version environment in $venv (several GB, a few minutes)" >&2
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"${PYTHON:-python3}" -m venv "$venv"
nice -n 10 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "lerobot==$version" >&2
"$venv/bin/python" -c "import lerobot.datasets.lerobot_dataset" >&2
touch "$venv/.teledora-complete"
echo "$venv/bin/python"
