"""The AGENTS.db binary format (RFC section 8): reader, writer and chunk model."""

from sediment.format.model import AUTHORS, Chunk, Source
from sediment.format.reader import LayerFile
from sediment.format.writer import encode_layer, quantize

__all__ = ["AUTHORS", "Chunk", "LayerFile", "Source", "encode_layer", "quantize"]
