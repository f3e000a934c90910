#!/usr/bin/env python3
"""An independent transcription of server/attention/projection.cc, in plain
Python (no numpy, no LibTorch): Philox4x32-10, Box-Muller in double,
modified Gram-Schmidt, the rotated simplex and the chi row norms.

It prints the golden values that tests/attention/projection_test.cc pins:
whole-matrix checksums of float32 entries summed in double, in row-major
order, exactly as the test sums them; and, for the whole-matrix digests, a
64-bit FNV-1a hash of every entry's float32 bits (row-major, little-endian)
with spot values from the first, second-block, middle and last rows. Python's floats are IEEE doubles with
no fused multiply-add, as projection.cc is compiled (-ffp-contract=off), and
math.log/cos/sin are the C library's, so every entry matches bit for bit.

    python3 tests/attention/projection_reference.py
    python3 tests/attention/projection_reference.py --check projection_test.cc

With --check it prints nothing and fails unless every line of the digest
table it derives appears verbatim in the given test source (ctest runs this,
so the C++ goldens and this transcription cannot drift apart).
"""

import argparse
import math
import struct
import sys

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


FNV_OFFSET, FNV_PRIME, M64 = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1


def digest(values):
    """FNV-1a 64 of the float32 bytes, row-major: any changed bit of any
    entry changes it."""
    h = FNV_OFFSET
    for v in values:
        for byte in struct.pack("<f", v):
            h = ((h ^ byte) * FNV_PRIME) & M64
    return h


def spot_rows(m, d):
    """First row, first row of the second block, middle and last rows."""
    return sorted({0, min(d, m - 1), m // 2, m - 1})


# (coupling, chi norms, m, d, seed, draw index): several seeds, m not a
# multiple of d, orthogonal with chi and sqrt(d) norms, iid and simplex.
DIGEST_CASES = (
    ("orthogonal", True, 160, 64, 7, 0),
    ("orthogonal", True, 100, 16, 3, 0),
    ("orthogonal", True, 37, 8, 12345, 0),
    ("orthogonal", True, 100, 16, 3, 1),
    ("orthogonal", False, 160, 64, 7, 0),
    ("orthogonal", False, 100, 16, 3, 0),
    ("iid", True, 160, 64, 7, 0),
    ("iid", True, 100, 16, 3, 0),
    ("simplex", True, 100, 16, 3, 0),
    ("simplex", False, 37, 8, 12345, 0),
)


def digest_lines():
    """The golden table of projection_test.cc's GoldenDigestsOfWholeMatrices,
    one C++ initializer per case."""
    lines = []
    for coupling, chi, m, d, seed, index in DIGEST_CASES:
        values = [to_float32(v) for v in draw(m, d, seed, coupling, chi, index)]
        spots = ", ".join(f"{{{r}, {c}, {values[r * d + c]!r}f}}"
                          for r in spot_rows(m, d) for c in (0, d - 1))
        norm = "kChi" if chi else "kSqrtDim"
        lines.append(f'    {{"{coupling}", {norm}, {m}, {d}, {seed}, {index}, '
                     f'0x{digest(values):016x}ull, {{{spots}}}}},')
    return lines


def check(test_source):
    with open(test_source) as source:
        pinned = set(source.read().splitlines())
    missing = [line for line in digest_lines() if line not in pinned]
    for line in missing:
        print(f"not in {test_source}:\n{line}")
    return 1 if missing else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", metavar="TEST_SOURCE")
    args = parser.parse_args()
    if args.check:
        sys.exit(check(args.check))
    for coupling in ("orthogonal", "iid", "simplex"):
        for m, d, seed in ((160, 64, 7), (5, 4, 3)):
            plain, weighted = checksums(draw(m, d, seed, coupling))
            print(f"{coupling} m={m} d={d} seed={seed}: "
                  f"sum {plain!r} weighted {weighted!r}")
    print("simplex m=5 d=4 seed=3 entries:",
          ", ".join(repr(to_float32(v)) for v in draw(5, 4, 3, "simplex")))
    print("\n".join(digest_lines()))


if __name__ == "__main__":
    main()
