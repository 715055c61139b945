# shellcheck shell=bash
# Sourced on the GPU machine from the folder that scripts/gpu-runtime.sh filled (it is copied there as env.sh):
#   source .gl/env.sh
# Unpacks the Vulkan loader and the GL dispatch libraries under / (as root: the driver's libraries must find them
# where the system's would be), the other libraries and vulkaninfo under $CORGY_RUNTIME (default /tmp/corgy-runtime)
# so that they do not replace the system's own, and puts those on LD_LIBRARY_PATH and PATH. Where NVIDIA's driver
# manifests lie outside the loader's search path (a driver mounted into a container under /usr/local/nvidia), it
# points the loader at them, unless VK_DRIVER_FILES is already set.
corgy_gpu_runtime_folder=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CORGY_RUNTIME=${CORGY_RUNTIME:-/tmp/corgy-runtime}
for corgy_deb in "$corgy_gpu_runtime_folder"/*.deb; do
  case $corgy_deb in
    *openblas* | *gfortran* | *fmt* | *vulkan-tools* | *wayland*) dpkg -x "$corgy_deb" "$CORGY_RUNTIME" ;;
    *) dpkg -x "$corgy_deb" / ;;
  esac
done
ldconfig
if [[ -z ${VK_DRIVER_FILES:-} ]]; then
  for corgy_icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/etc/vulkan/icd.d/nvidia_icd.json; do
    if [[ -f $corgy_icd ]]; then
      export VK_DRIVER_FILES=$corgy_icd
      break
    fi
  done
fi
if [[ -z ${__EGL_VENDOR_LIBRARY_FILENAMES:-} && -f /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json ]]; then
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
corgy_libs=$CORGY_RUNTIME/usr/lib/$(uname -m)-linux-gnu
export LD_LIBRARY_PATH=$corgy_libs/openblas-pthread:$corgy_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$CORGY_RUNTIME/usr/bin:$PATH
unset corgy_gpu_runtime_folder corgy_deb corgy_icd corgy_libs
