"""The hardware an encoder runs on: the device and the autocast dtype it scores in (``device="auto"``,
``dtype="auto"``), and the machine in words for cards and benchmark reports."""

from __future__ import annotations

import contextlib
import logging
import platform

import torch

logger = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``None`` or ``"auto"``: CUDA when present, else CPU. A CUDA device on a machine without one, or a device of
    another type (``"mps"``), is a ValueError naming ``device``."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r} ({err})") from None
    if resolved.type not in ("cpu", "cuda"):  # mps, xpu, meta...: PyTorch would fail later, or score nothing real
        raise ValueError(
            f"device={device!r}: DEnsity scores on 'cpu' or 'cuda' ('cuda:N'), or 'auto' (CUDA if present)"
        )
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} but no CUDA device is available to this torch build; use 'cpu' or 'auto'")
    if resolved.type == "cuda" and resolved.index is not None and resolved.index >= torch.cuda.device_count():
        raise ValueError(f"device={device!r} but only {torch.cuda.device_count()} CUDA device(s) are visible")
    return resolved


def cpu_has_native_bf16() -> bool:
    """Whether this CPU has bf16 matrix instructions (AVX512-BF16 or AMX), where bf16 pays off.

    oneDNN's own ``_is_mkldnn_bf16_supported`` also says yes on plain AVX512, where bf16 is
    emulated: on such a Xeon here a 2048 x 2048 bf16 product ran at 29 GFLOP/s against 119 for
    float32, so training in bf16 there would be 4x slower, not faster.
    """
    try:
        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    except AttributeError:  # an older torch: read the CPU flags
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as handle:
                flags = set(handle.read().split())
        except OSError:
            return False
        return bool(flags & {"avx512_bf16", "amx_bf16"})


def machine_description(device: str | torch.device = "cpu") -> str:
    """The hardware that ``device`` names, in words, for cards and benchmark reports.

    CUDA: the GPU's name. CPU: the processor's model name (Linux's ``/proc/cpuinfo``, else
    :func:`platform.processor`), torch's thread count and whether it has native bf16.
    """
    device = torch.device(device)
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (CUDA)"
    name = ""
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            name = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), "")
    name = name or platform.processor() or platform.machine() or "unknown CPU"
    bf16 = ", native bf16" if cpu_has_native_bf16() else ""
    threads = torch.get_num_threads()
    return f"{name} CPU ({threads} thread{'' if threads == 1 else 's'}{bf16})"


def resolve_dtype(dtype: str | None, device: torch.device) -> str:
    """Autocast dtype name. ``None``/``"auto"``: bfloat16 on CUDA, float32 on CPU.

    float32 is the CPU default because bf16 scores depend on the batch: on this CPU, oneDNN's
    bf16 products round a row differently depending on how many rows share the product, and
    attention on the padded length, so a pair's score moved by up to about 2e-2 relative with the
    batch size, the row order or how the input was split into calls (float32: a few 1e-6;
    ``python -m benchmarks.batch_invariance``, 1,000 pairs; the bundled checkpoint's numbers are in
    ``benchmarks/batch_invariance_cpu.json``). Removing it would need fixed batch shapes, which cost more than
    the 10 % allowed. ``dtype="bfloat16"`` stays as the explicit fast mode on CPUs with native bf16: about twice
    float32's speed, ranking pairs as float32 does (``benchmarks/speed_cpu_release.json``).
    """
    if dtype is None or dtype == "auto":
        return "bfloat16" if device.type == "cuda" else "float32"
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be 'auto' or one of {sorted(DTYPES)}, got {dtype!r}")
    if dtype == "float16" and device.type != "cuda":
        raise ValueError("dtype='float16' needs a CUDA device; use 'bfloat16' on CPU")
    if dtype == "bfloat16" and device.type == "cpu" and not cpu_has_native_bf16():
        logger.warning(
            "this CPU has no bf16 instructions (AVX512-BF16, AMX): bfloat16 is emulated, slower than float32"
        )
    return dtype
