"""Builds corgy's extension module with CMake (python/CMakeLists.txt) for setuptools.

`pip install --no-build-isolation ./python` (or `pip wheel`) runs this. CMake finds an installed corgy through
CMAKE_PREFIX_PATH when there is one and otherwise builds the library from this repository; either way the module and
the corgy library it links land in the package folder, next to each other.
"""

import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
REPOSITORY = HERE.parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        # In a clone, the CMake build lives in the repository's build/ (ignored by git), so a second install is
        # incremental; elsewhere (an unpacked sdist) in setuptools' temporary folder.
        if (REPOSITORY / "CMakeLists.txt").exists() and (REPOSITORY / "corgy").is_dir():
            build_dir = REPOSITORY / "build" / f"python-{sys.implementation.cache_tag}"
        else:
            build_dir = pathlib.Path(self.build_temp).resolve() / "cmake"
        stage = build_dir / "stage"
        configure = [
            "cmake", "-S", str(HERE), "-B", str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DCMAKE_INSTALL_PREFIX={stage}",
            # Look for an installed corgy again each time: a corgy_DIR cached by an earlier build would otherwise
            # win over this build's CMAKE_PREFIX_PATH, and compile the module against another install's headers.
            "-Ucorgy_DIR",
        ]
        if shutil.which("ninja") and not (build_dir / "CMakeCache.txt").exists():
            configure += ["-G", "Ninja"]
        # Extra CMake options, by the convention of CMake-driven Python builds (scikit-build, pybind11's examples):
        # scripts/test.sh passes -DCORGY_WERROR=ON.
        configure += os.environ.get("CMAKE_ARGS", "").split()
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "-j", str(os.cpu_count() or 1)], check=True)
        if stage.exists():
            shutil.rmtree(stage)
        subprocess.run(["cmake", "--install", str(build_dir)], check=True)

        out_dir = pathlib.Path(self.get_ext_fullpath(ext.name)).resolve().parent
        out_dir.mkdir(parents=True, exist_ok=True)
        for path in (stage / "corgy").iterdir():
            # The module, and the corgy library under its soname (libcorgy.so.0, which the module's $ORIGIN RPATH
            # finds); wheels hold no symlinks, so the soname link is copied as the file it points to.
            if path.name.startswith("_corgy") or path.name.count(".so.") == 1 and path.name.split(".so.")[1].isdigit():
                shutil.copyfile(path, out_dir / path.name)


setup(ext_modules=[Extension("corgy._corgy", sources=[])], cmdclass={"build_ext": CMakeBuild})
