# shellcheck shell=bash
# Sourced by benchmarks/run.sh and benchmarks/serve_benchmark.sh, which set up their peers alike.
#
#   install_peer_packages WITH_PEERS BUILD_DIR DEB...
#
# Installs the Debian packages DEB... that are missing and, when WITH_PEERS is 1, node and npm, then ONNX Runtime
# (onnxruntime-node@ORT_VERSION: Debian has no ONNX Runtime for Python) into BUILD_DIR/node. Uses the caller's log().
ORT_VERSION=1.30.0

install_peer_packages() {
  local with_peers=$1 build=$2 missing=() package
  shift 2
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
  done
  ((!with_peers)) || command -v npm >/dev/null || missing+=(nodejs npm)
  if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
  fi
  if ((with_peers)) && [[ ! -d $build/node/node_modules/onnxruntime-node ]]; then
    log "installing onnxruntime-node@$ORT_VERSION into $build/node"
    mkdir -p "$build/node"
    (cd "$build/node" && npm install --ignore-scripts --no-audit --no-fund --silent "onnxruntime-node@$ORT_VERSION")
  fi
}
