"""The fixed binary structures of RFC section 8.4, as numpy dtypes and struct formats.

Every struct is little-endian and tightly packed (RFC 8.4.2), so the numpy dtypes give
explicit offsets: ``ChunkRecord.rel_start`` sits at byte 36, which no aligned layout has.
"""

from __future__ import annotations

import struct

import numpy as np

MAGIC = 0x42444741  # b"AGDB" read as a little-endian u32
VERSION_MAJOR = 1
VERSION_MINOR = 0

SECTION_STRING_DICTIONARY = 1
SECTION_CHUNK_TABLE = 2
SECTION_EMBEDDING_MATRIX = 3
SECTION_RELATIONSHIPS = 4
SECTION_LAYER_METADATA = 5
SECTION_NAMES = {
    SECTION_STRING_DICTIONARY: "string dictionary",
    SECTION_CHUNK_TABLE: "chunk table",
    SECTION_EMBEDDING_MATRIX: "embedding matrix",
    SECTION_RELATIONSHIPS: "relationships",
    SECTION_LAYER_METADATA: "layer metadata",
}
REQUIRED_SECTIONS = (SECTION_STRING_DICTIONARY, SECTION_CHUNK_TABLE, SECTION_EMBEDDING_MATRIX)

EMBED_F32 = 1
EMBED_I8 = 2
ELEMENT_NAMES = {EMBED_F32: "f32", EMBED_I8: "i8"}
ELEMENT_SIZES = {EMBED_F32: 4, EMBED_I8: 1}

REL_SOURCE_CHUNK_ID = 1
REL_SOURCE_STRING = 2

LAYER_METADATA_JSON = 1

FILE_HEADER = struct.Struct("<IHHQQQQ")  # magic, major, minor, length, count, offset, flags
SECTION_ENTRY = struct.Struct("<IIQQ")  # kind, reserved, offset, length
STRING_DICT_HEADER = struct.Struct("<QQQQ")  # count, entries_offset, bytes_offset, bytes_len
CHUNK_TABLE_HEADER = struct.Struct("<QQ")  # chunk_count, records_offset
EMBEDDING_HEADER = struct.Struct("<QIIQQff")  # rows, dim, type, data_off, data_len, scale, rsv
RELATIONSHIPS_HEADER = struct.Struct("<QQ")  # count, records_offset
LAYER_METADATA_HEADER = struct.Struct("<IIQQ")  # version, format, blob_offset, blob_length

STRING_ENTRY_DTYPE = np.dtype(
    {"names": ["offset", "length"], "formats": ["<u8", "<u8"], "offsets": [0, 8],
     "itemsize": 16}
)
CHUNK_RECORD_DTYPE = np.dtype(
    {
        "names": ["id", "kind", "content", "author", "confidence", "created_at",
                  "embedding_row", "reserved0", "rel_start", "rel_count", "reserved1"],
        "formats": ["<u4", "<u4", "<u4", "<u4", "<f4", "<u8", "<u4", "<u4", "<u8", "<u4", "<u4"],
        "offsets": [0, 4, 8, 12, 16, 20, 28, 32, 36, 44, 48],
        "itemsize": 52,
    }
)
RELATIONSHIP_DTYPE = np.dtype(
    {"names": ["kind", "value"], "formats": ["<u4", "<u4"], "offsets": [0, 4], "itemsize": 8}
)

assert CHUNK_RECORD_DTYPE.itemsize == 52
assert FILE_HEADER.size == 40 and SECTION_ENTRY.size == 24
assert EMBEDDING_HEADER.size == 40 and LAYER_METADATA_HEADER.size == 24
