"""The key that names an approximate index: a hash of the embedding rows it was built from.

An index maps embedding row numbers to vectors and nothing else, so its key covers exactly
that: the dimension count, the element type and quantisation scale, the number of rows, and
the bytes of those rows. Rewording a chunk leaves the key (and the index) valid; changing a
vector does not. Because the key of the first ``n`` rows depends only on those rows, an
index built before an append still matches the *prefix* of the grown layer, and search can
use it for those rows while scanning the appended tail exactly (``index.find_index``).

The rows go through CRC-32 in 16 MiB blocks whose values are hashed with BLAKE2b: CRC-32
runs at memory speed (about 3 GB/s here, against 0.3 GB/s for SHA-256 on this CPU without
SHA extensions), so keying 1M x 384 f32 rows costs about half a second, once per process,
file version and prefix length. CRC-32 detects any accidental change; it is not meant to
resist a forger, and need not: whoever can rewrite the layer can rewrite its index too.
The hash is personalised with the index format's version, so a file of an earlier format
(the v3 inverted files among them) never matches a key: it is ignored, and removed by the
next build or ``index clean``.
"""

from __future__ import annotations

import hashlib
import struct
import zlib

import numpy as np

from sediment.format import LayerFile

BLOCK = 16 << 20


def rows_key(f: LayerFile, rows: int) -> str:
    """32 hex digits identifying the first ``rows`` embedding rows of ``f``."""
    info = f.embedding_info
    if not 0 <= rows <= info.rows:
        raise ValueError(f"{rows} rows asked of a matrix of {info.rows}")
    flat = f.embeddings.reshape(-1).view(np.uint8)
    matrix = memoryview(flat.data) if rows else memoryview(b"")
    end = rows * f.dim * f.embeddings.itemsize
    h = hashlib.blake2b(digest_size=16, person=b"sediment-ann-v4")
    h.update(struct.pack("<IQ8sf", f.dim, rows, f.element_type.encode(), f.quant_scale))
    for at in range(0, end, BLOCK):
        h.update(zlib.crc32(matrix[at:min(at + BLOCK, end)]).to_bytes(4, "little"))
    return h.hexdigest()
