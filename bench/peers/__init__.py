"""Sediment against the systems users would pick instead: ``python -m bench.peers``.

The same synthetic vectors, the same queries and top-10 go through Sediment, LanceDB,
Chroma, sqlite-vec and FAISS (the ``bench`` extra installs them). Every system is built in
one subprocess and queried in another, so each peak RSS (``VmHWM`` of that process) is that
system's own. Results go to docs/peers.md as a table and a PNG plot.
"""
