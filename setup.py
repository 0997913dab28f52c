"""Builds the extension `kvsim._kvsim` for `pip install .` by driving the project's own CMake
build (python/CMakeLists.txt), so the module pip installs is the one `make` builds.

The CMake build directory is build/pip/cmake (everything setuptools writes goes under
build/pip too), configured with the viewer, kernels, tests and benchmarks off and this
interpreter as Python3_EXECUTABLE. KVSIM_CMAKE_BUILD_DIR names an already configured build
directory instead (say build/): its `_kvsim` target is built there as it is configured, and
nothing is reconfigured.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
# setup.cfg sends setuptools' files (build_base, egg_base) here; egg_info needs it to exist.
(ROOT / "build" / "pip").mkdir(parents=True, exist_ok=True)


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(kvsim\b[^)]*VERSION\s+([0-9.]+)", text).group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        given = os.environ.get("KVSIM_CMAKE_BUILD_DIR")
        build_dir = pathlib.Path(given).resolve() if given else ROOT / "build" / "pip" / "cmake"
        if given:
            if not (build_dir / "CMakeCache.txt").exists():
                sys.exit(f"KVSIM_CMAKE_BUILD_DIR={given}: not a configured CMake build directory")
        else:
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            subprocess.check_call(
                ["cmake", "-S", str(ROOT), "-B", str(build_dir), *generator,
                 "-DCMAKE_BUILD_TYPE=Release", f"-DPython3_EXECUTABLE={sys.executable}",
                 "-DKVSIM_BUILD_PYTHON=ON", "-DKVSIM_BUILD_VIZ=OFF", "-DKVSIM_BUILD_TESTS=OFF",
                 "-DKVSIM_BUILD_BENCH=OFF", "-DKVSIM_ENABLE_CUDA=OFF"])
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "_kvsim",
                               "-j", jobs])
        built = sorted((build_dir / "python" / "kvsim").glob("_kvsim*.so"))
        if len(built) != 1:
            sys.exit(f"{build_dir}/python/kvsim: expected one _kvsim*.so, found {built}")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


setup(version=project_version(),
      ext_modules=[Extension("kvsim._kvsim", sources=[])],
      cmdclass={"build_ext": CMakeBuild})
