"""Retrieval quality: ``python -m bench.quality`` measures recall@k and nDCG@10.

Two sets: LoCoMo (public conversations; read from ``../shared``, never copied here) written
turn by turn through Sediment's own write path, and ``project_qa.json`` (questions we wrote
about this repository's own docs) run through the real compile. Each question is searched in
three modes: BM25 alone, the embedder alone, and Sediment's hybrid.
"""
