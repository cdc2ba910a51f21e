"""Build of torch_tpu's native core against the *installed* torch.

Always build without isolation (``pip install --no-build-isolation``) so pip
never resolves another torch. The PJRT ABI is declared in csrc/pjrt/pjrt_abi.h;
when an installed wheel ships the official pjrt_c_api.h (xla-cpu-pjrt does),
csrc/pjrt/abi_check.cc verifies our declarations against it at compile time.
"""
import glob
import importlib.util
import os

from setuptools import find_packages, setup

ROOT = os.path.dirname(os.path.abspath(__file__))


def official_pjrt_include():
    try:
        spec = importlib.util.find_spec("xla_plugins.xla_cpu_pjrt")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        inc = os.path.join(base, "include")
        if os.path.exists(os.path.join(inc, "pjrt_c_api.h")):
            return inc
    return None


def extensions():
    if os.environ.get("TTPU_SKIP_EXT") == "1":
        return [], {}
    from torch.utils.cpp_extension import BuildExtension, CppExtension, include_paths

    sources = sorted(glob.glob("csrc/**/*.cc", recursive=True) + glob.glob("csrc/**/*.cpp", recursive=True))
    # Kineto's headers (the PrivateUse1 activity profiler, csrc/aten/profiler.cpp)
    # include each other by bare name, so their folder joins the include path.
    kineto = [p for p in (os.path.join(d, "kineto") for d in include_paths()) if os.path.isdir(p)]
    include_dirs = [os.path.join(ROOT, "csrc")]
    macros = []
    official = official_pjrt_include()
    if official:
        include_dirs.append(official)
        macros.append(("TTPU_HAVE_OFFICIAL_PJRT_HEADER", "1"))
    else:
        sources = [s for s in sources if not s.endswith("abi_check.cc")]
    include_dirs += kineto[:1]
    ext = CppExtension(
        "torch_tpu._C",
        sources,
        include_dirs=include_dirs,
        define_macros=macros,
        extra_compile_args=["-std=c++20", "-O2", "-fvisibility=hidden", "-Wno-unused-parameter"],
        libraries=["dl"],
    )
    return [ext], {"build_ext": BuildExtension.with_options(use_ninja=True)}


ext_modules, cmdclass = extensions()

setup(
    packages=find_packages(include=["torch_tpu", "torch_tpu.*"]),
    ext_modules=ext_modules,
    cmdclass=cmdclass,
)
