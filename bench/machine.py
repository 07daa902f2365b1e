"""What the numbers were measured on: CPU, memory, library versions, BLAS kernel, load."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

ENV_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS",
            "OMP_NUM_THREADS", "MKL_NUM_THREADS")
SIMD_FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8")


@dataclass(slots=True)
class Machine:
    date: str
    command: str
    cpu: str
    cores: int
    usable_cores: int
    simd: list[str]
    ram_bytes: int
    os: str
    python: str
    versions: dict[str, str]
    blas: list[dict[str, str]]
    simsimd_kernels: list[str]
    env: dict[str, str]
    load_start: tuple[float, float, float]
    load_end: tuple[float, float, float] = field(default=(0.0, 0.0, 0.0))


def _cpuinfo() -> tuple[str, list[str]]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown", []
    model, flags = "unknown", set[str]()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model == "unknown":
            model = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
    return model, [f for f in SIMD_FLAGS if f in flags]


def _ram() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _blas() -> list[dict[str, str]]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return [{"note": "threadpoolctl not installed (pip install threadpoolctl, or the "
                         "bench dependency group)"}]
    import numpy  # noqa: F401  (loads the BLAS library threadpoolctl inspects)

    keys = ("internal_api", "version", "architecture", "num_threads", "threading_layer",
            "filepath")
    return [{k: str(info.get(k, "")) for k in keys} for info in threadpool_info()]


def _simsimd_kernels() -> list[str]:
    """The CPU kernel families simsimd will dispatch to here (int8 speed depends on it)."""
    try:
        import simsimd
    except ImportError:
        return []
    caps = simsimd.get_capabilities() if hasattr(simsimd, "get_capabilities") else {}
    return [name for name, ok in caps.items() if ok]


def describe(command: str) -> Machine:
    model, simd = _cpuinfo()
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    import sediment

    versions = {
        "sediment": sediment.__version__,
        "numpy": _version("numpy"),
        "onnxruntime": _version("onnxruntime"),
        "simsimd": _version("simsimd"),
        "tokenizers": _version("tokenizers"),
        "threadpoolctl": _version("threadpoolctl"),
    }
    return Machine(
        date=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        command=command,
        cpu=model,
        cores=os.cpu_count() or 1,
        usable_cores=usable,
        simd=simd,
        ram_bytes=_ram(),
        os=f"{platform.system()} {platform.release()}",
        python=platform.python_version(),
        versions=versions,
        blas=_blas(),
        simsimd_kernels=_simsimd_kernels(),
        env={k: os.environ.get(k, "(unset)") for k in ENV_VARS},
        load_start=os.getloadavg(),
    )
