#!/usr/bin/env bash
# Gathers what corgy's Release binaries need at run time on a GPU machine that has the GPU driver but not corgy's
# other dependencies (a container image with only the NVIDIA driver, say): the Debian packages of the Vulkan loader,
# the GL dispatch libraries NVIDIA's Vulkan driver loads, OpenBLAS, fmt and vulkaninfo, downloaded (not installed)
# into one folder with an env.sh that installs them there. Run it on the Debian machine that builds corgy, so that
# the libraries are the ones the binaries were linked against.
#
# Usage, from the repository:   scripts/gpu-runtime.sh [FOLDER] [MORE DEBIAN PACKAGES...]
#   FOLDER defaults to .gl in the repository root (added to .git/info/exclude); extra packages are downloaded too,
#   e.g. vulkan-validationlayers for the tests' validation layer.
# Then copy FOLDER (and your build) to the GPU machine and start each command there with:   source FOLDER/env.sh;
# env.sh unpacks the packages (as root: the loader goes under /) and points the loader at NVIDIA's driver where
# it is installed outside the loader's search path. See docs/vulkan.md#on-a-gpu-machine.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
folder=${1:-$root/.gl}
shift $(($# > 0 ? 1 : 0))

packages=(
  # The Vulkan loader, and the GL dispatch libraries (libglvnd) that NVIDIA's Vulkan driver links.
  libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 libwayland-client0
  # libcorgy's own dependencies.
  libopenblas0-pthread libopenblas0 libgfortran5 libfmt9
  # vulkaninfo, to see the device.
  vulkan-tools
  "$@"
)

mkdir -p "$folder"
folder=$(cd "$folder" && pwd)
if [[ $folder == "$root/.gl" ]] && git -C "$root" rev-parse --git-path info/exclude >/dev/null 2>&1; then
  exclude=$(git -C "$root" rev-parse --git-path info/exclude)
  [[ $exclude == /* ]] || exclude=$root/$exclude
  mkdir -p "$(dirname "$exclude")"
  grep -qx '/.gl/' "$exclude" 2>/dev/null || echo '/.gl/' >>"$exclude"
fi

# A package index of its own, so that neither root nor the system's (possibly cleaned) apt lists are needed.
lists=$(mktemp -d /tmp/corgy-gpu-runtime-lists.XXXXXX)
trap 'rm -rf -- "$lists"' EXIT
mkdir -p "$lists/partial"
apt_options=(-o "Dir::State::Lists=$lists" -o "Dir::Cache=$lists")
apt-get "${apt_options[@]}" update >/dev/null
(cd "$folder" && apt-get "${apt_options[@]}" download "${packages[@]}")
cp "$here/gpu-runtime-env.sh" "$folder/env.sh"
ls "$folder"
