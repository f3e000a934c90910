#!/usr/bin/env python3
"""An independent transcription of server/attention/projection.cc, in plain
Python (no numpy, no LibTorch): Philox4x32-10, Box-Muller in double,
modified Gram-Schmidt, the rotated simplex and the chi row norms.

It prints the golden values that tests/attention/projection_test.cc pins:
whole-matrix checksums of float32 entries summed in double, in row-major
order, exactly as the test sums them. Python's floats are IEEE doubles with
no fused multiply-add, as projection.cc is compiled (-ffp-contract=off), and
math.log/cos/sin are the C library's, so every entry matches bit for bit.

    python3 tests/attention/projection_reference.py
"""

import math
import struct

M32 = 0xFFFFFFFF
NORM_STREAM = 0xFFFFFFFF


def philox4x32(counter, key):
    k0, k1 = key & M32, (key >> 32) & M32
    c = list(counter)
    for _ in range(10):
        p0 = 0xD2511F53 * c[0]
        p1 = 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & M32, p1 & M32,
             ((p0 >> 32) ^ c[3] ^ k1) & M32, p0 & M32]
        k0 = (k0 + 0x9E3779B9) & M32
        k1 = (k1 + 0xBB67AE85) & M32
    return c


def gaussians(seed, stream):
    """The GaussianStream of philox.cc, as a generator."""
    block = 0
    while True:
        bits = philox4x32([block & M32, block >> 32, stream & M32,
                           stream >> 32], seed)
        block += 1
        for pair in range(2):
            u1 = (bits[2 * pair] + 1.0) * (1.0 / 4294967296.0)
            u2 = (bits[2 * pair + 1] + 1.0) * (1.0 / 4294967296.0)
            radius = math.sqrt(-2.0 * math.log(u1))
            angle = 6.283185307179586476925286766559 * u2
            yield radius * math.cos(angle)
            yield radius * math.sin(angle)


def stream_id(draw_index, purpose):
    return (draw_index << 32) | purpose


def orthogonal_block(d, gaussian):
    block = [next(gaussian) for _ in range(d * d)]
    for i in range(d):
        row = i * d
        for j in range(i):
            prev = j * d
            dot = 0.0
            for c in range(d):
                dot += block[row + c] * block[prev + c]
            for c in range(d):
                block[row + c] -= dot * block[prev + c]
        norm = 0.0
        for c in range(d):
            norm += block[row + c] * block[row + c]
        norm = math.sqrt(norm)
        for c in range(d):
            block[row + c] /= norm
    return block


def rotated_simplex(d, block):
    mean = [0.0] * d
    for i in range(d):
        for c in range(d):
            mean[c] += block[i * d + c]
    mean = [x / d for x in mean]
    scale = math.sqrt(d / (d - 1))
    return [scale * (block[i * d + c] - mean[c])
            for i in range(d) for c in range(d)]


def draw(m, d, seed, coupling, chi=True, draw_index=0):
    if coupling == "iid":
        g = gaussians(seed, stream_id(draw_index, 0))
        return [next(g) for _ in range(m * d)]
    rows = []
    b = 0
    while len(rows) < m * d:
        block = orthogonal_block(d, gaussians(seed, stream_id(draw_index, b)))
        if coupling == "simplex":
            block = rotated_simplex(d, block)
        rows += block[:min(d * d, m * d - len(rows))]
        b += 1
    norms = gaussians(seed, stream_id(draw_index, NORM_STREAM))
    for i in range(m):
        scale = math.sqrt(d)
        if chi:
            sum_sq = 0.0
            for _ in range(d):
                g = next(norms)
                sum_sq += g * g
            scale = math.sqrt(sum_sq)
        for c in range(d):
            rows[i * d + c] *= scale
    return rows


def to_float32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def checksums(values):
    """Sum and index-weighted sum of the float32 entries, in double."""
    plain, weighted = 0.0, 0.0
    for k, v in enumerate(values):
        f = to_float32(v)
        plain += f
        weighted += f * ((k % 97) + 1)
    return plain, weighted


def main():
    for coupling in ("orthogonal", "iid", "simplex"):
        for m, d, seed in ((160, 64, 7), (5, 4, 3)):
            plain, weighted = checksums(draw(m, d, seed, coupling))
            print(f"{coupling} m={m} d={d} seed={seed}: "
                  f"sum {plain!r} weighted {weighted!r}")
    print("simplex m=5 d=4 seed=3 entries:",
          ", ".join(repr(to_float32(v)) for v in draw(5, 4, 3, "simplex")))


if __name__ == "__main__":
    main()
