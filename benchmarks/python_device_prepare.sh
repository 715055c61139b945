#!/usr/bin/env bash
# Gathers what the Python package needs on a GPU machine that has the GPU driver but neither Debian 12's Python 3.11
# (the extension module is built for it) nor corgy's libraries: the Debian packages of Python 3.11, numpy, pytest,
# protobuf and ONNX (downloaded, not installed), the installed package from build/venv and the C++ programs the
# tests and the binding benchmark compare with. Run it here after scripts/test.sh (or demo.sh) made build/venv;
# then carry FOLDER and the folder of scripts/gpu-runtime.sh to the GPU machine and run
# benchmarks/python_device_run.sh there (docs/python.md#on-a-gpu-machine).
# Usage: benchmarks/python_device_prepare.sh [FOLDER]   (default .gpu-python, excluded from git)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
folder=${1:-$root/.gpu-python}
site=$root/build/venv/lib/python3.11/site-packages/corgy
if [[ ! -f $site/__init__.py ]]; then
  echo "no installed package in $site: run scripts/test.sh or scripts/demo.sh first" >&2
  exit 1
fi
rm -rf "$folder"
mkdir -p "$folder"/{debs,site,bin}
folder=$(cd "$folder" && pwd)
if [[ $folder == "$root/.gpu-python" ]]; then
  exclude=$(git -C "$root" rev-parse --git-path info/exclude)
  [[ $exclude == /* ]] || exclude=$root/$exclude
  grep -qx '/.gpu-python/' "$exclude" 2>/dev/null || echo '/.gpu-python/' >>"$exclude"
fi
lists=$(mktemp -d /tmp/corgy-python-lists.XXXXXX)
trap 'rm -rf -- "$lists"' EXIT
mkdir -p "$lists/partial"
apt_options=(-o "Dir::State::Lists=$lists" -o "Dir::Cache=$lists")
apt-get "${apt_options[@]}" update >/dev/null
(cd "$folder/debs" && apt-get "${apt_options[@]}" download python3.11-minimal libpython3.11-minimal \
  libpython3.11-stdlib python3.11 libffi8 libexpat1 python3-numpy python3-pytest python3-pluggy python3-iniconfig \
  python3-packaging python3-py python3-attr libprotobuf32 libonnx1 2>&1 | grep -v '^W:' || true)
cp -r "$site" "$folder/site/"
rm -rf "$folder/site/corgy/__pycache__"
cp "$root/build/release/examples/corgy-run" "$root/build/release/benchmarks/model_benchmark" "$folder/bin/"
du -sh "$folder"
