#!/usr/bin/env python3
"""PPM (what the host's screenshot writes for *.ppm) to a smaller PNG.

    python3 scripts/screenshots/png.py IN.ppm OUT.png [FACTOR [BITS]]

Averages FACTOR x FACTOR pixel blocks (default 1; 2 makes 1280x720 640x360),
rounds each channel to BITS significant bits (default 8; 6 is hard to tell
apart on screen and shrinks llvmpipe's noisy terrain textures a lot) and
writes an 8-bit RGB PNG, each row with the filter whose output has the
smallest sum of absolute values (the usual heuristic), at zlib level 9.
The host's own PNG writer (stb) keeps full size and compresses less, and
llvmpipe's textured terrain comes out at 500 KB or more; README pictures
should stay under ~300 KB. Standard library only.
"""
import struct
import sys
import zlib


def read_ppm(path):
    with open(path, "rb") as f:
        data = f.read()
    fields, pos = [], 0
    while len(fields) < 4:  # magic, width, height, maxval; '#' comments allowed
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    if fields[0] != b"P6" or int(fields[3]) != 255:
        raise SystemExit(f"{path}: not a binary 8-bit PPM")
    w, h = int(fields[1]), int(fields[2])
    pixels = data[pos + 1:pos + 1 + 3 * w * h]
    if len(pixels) != 3 * w * h:
        raise SystemExit(f"{path}: truncated")
    return w, h, pixels


def downscale(w, h, px, k):
    if k == 1:
        return w, h, px
    ow, oh, n = w // k, h // k, k * k
    out = bytearray(3 * ow * oh)
    for y in range(oh):
        rows = [px[3 * w * (y * k + j):3 * w * (y * k + j + 1)] for j in range(k)]
        o = 3 * ow * y
        for x in range(ow):
            for c in range(3):
                s = 0
                for row in rows:
                    s += sum(row[3 * (x * k + i) + c] for i in range(k))
                out[o + 3 * x + c] = (s + n // 2) // n
    return ow, oh, bytes(out)


def posterize(px, bits):
    if bits >= 8:
        return px
    step = 1 << (8 - bits)
    table = bytes(min(255, (v + step // 2) // step * step) for v in range(256))
    return px.translate(table)


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def filtered_rows(w, h, px):
    stride, prev = 3 * w, bytes(3 * w)
    for y in range(h):
        row = px[stride * y:stride * (y + 1)]
        left = bytes(3) + row[:-3]
        upleft = bytes(3) + prev[:-3]
        cands = [
            (0, row),
            (1, bytes((row[i] - left[i]) & 255 for i in range(stride))),
            (2, bytes((row[i] - prev[i]) & 255 for i in range(stride))),
            (3, bytes((row[i] - ((left[i] + prev[i]) >> 1)) & 255 for i in range(stride))),
            (4, bytes((row[i] - paeth(left[i], prev[i], upleft[i])) & 255 for i in range(stride))),
        ]
        kind, data = min(cands, key=lambda c: sum(v if v < 128 else 256 - v for v in c[1]))
        yield bytes([kind]) + data
        prev = row


def write_png(path, w, h, px):
    def chunk(tag, body):
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body))
    raw = b"".join(filtered_rows(w, h, px))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
           chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    with open(path, "wb") as f:
        f.write(png)


def main():
    if len(sys.argv) not in (3, 4, 5):
        raise SystemExit(__doc__)
    k = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    bits = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    if k < 1 or not 1 <= bits <= 8:
        raise SystemExit("FACTOR must be >= 1 and BITS in 1..8")
    w, h, px = read_ppm(sys.argv[1])
    w, h, px = downscale(w, h, px, k)
    write_png(sys.argv[2], w, h, posterize(px, bits))


if __name__ == "__main__":
    main()
