"""The search service every adapter calls: embed the query, check profiles, search."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from sediment.embed import Embedder
from sediment.errors import SchemaMismatchError, ValidationError
from sediment.format.profile import check_compatible, describe_profile
from sediment.kcp import KcpIndex, KcpReranker
from sediment.search import SearchRequest, SearchResult, search
from sediment.store import PRECEDENCE, LayerSet


def check_profile(layerset: LayerSet, embedder: Embedder, names: Sequence[object] | None
                  ) -> None:
    """A text query needs the embedder that made the layers' vectors (RFC 8.4.8)."""
    active = embedder.profile.to_dict()
    for layer in layerset.layers(names):  # type: ignore[arg-type]
        if layer.file.chunk_count == 0:
            continue
        recorded = layer.profile
        if recorded is None:
            if layer.file.dim != active["dim"]:
                raise SchemaMismatchError(
                    f"layer {layer.name.value} ({layer.path}) has {layer.file.dim}-dim vectors "
                    f"but the active embedder ({describe_profile(active)}) makes "
                    f"{active['dim']}-dim vectors")
            continue
        check_compatible(recorded, active, a_name=f"layer {layer.name.value} ({layer.path})",
                         b_name="the active embedder",
                         consequence="use the same embedder, pass a query vector, or search "
                                     "lexically (--mode lexical)")


def unit_rows(layerset: LayerSet, names: Sequence[object] | None) -> bool:
    """True when every searched layer records L2-normalised vectors (cosine = dot)."""
    layers = [la for la in layerset.layers(names) if la.file.chunk_count]  # type: ignore[arg-type]
    return bool(layers) and all((la.profile or {}).get("output_norm") == "l2" for la in layers)


def run_search(layerset: LayerSet, request: SearchRequest, *,
               embedder: Embedder | None = None,
               query_vec: Sequence[float] | npt.NDArray[np.float32] | None = None
               ) -> SearchResult:
    """Search with a text (embedded here) or an explicit query vector."""
    names = request.layers if request.layers is not None else PRECEDENCE
    vec: npt.NDArray[np.float32] | None = None
    if query_vec is not None:
        vec = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if vec.size == 0 or not np.all(np.isfinite(vec)):
            raise ValidationError("query vector must be a non-empty list of finite numbers")
        if request.mode == "lexical":
            raise ValidationError("a query vector cannot drive a lexical search")
    elif request.mode != "lexical":
        if embedder is None:
            raise ValidationError("a text search needs an embedder (or use --mode lexical)")
        if not request.text or not request.text.strip():
            raise ValidationError("query must be a non-empty string")
        check_profile(layerset, embedder, names)
        vec = embedder.embed([request.text])[0]
    if query_vec is not None and request.mode == "hybrid" and not request.text:
        request = replace(request, mode="vector")
    if request.text and not any(isinstance(r, KcpReranker) for r in request.rerankers):
        kcp = KcpIndex.from_layerset(layerset, names)
        if kcp.units:
            request = replace(request, rerankers=(*request.rerankers,
                                                  KcpReranker(kcp, request.text)))
    return search(layerset, request, vec, normalised=unit_rows(layerset, names))
