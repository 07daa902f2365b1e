"""KCP tests share the root conftest's fixtures (the ``sediment`` runner among them)."""
