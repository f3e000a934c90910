"""What the processor runs natively, for the training tools' defaults."""

import torch


def native_bfloat16(device):
    """True where bfloat16 products are native: a CUDA device that supports
    them, or a CPU with AVX512-BF16 or AMX-BF16. Elsewhere (AVX2 machines
    such as AMD's Zen 3) LibTorch emulates them, single-threaded and many
    times slower than float32."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags
