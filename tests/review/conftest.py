"""The review tests use the root conftest's fixtures (the ``sediment`` runner among them)."""
