"""The web page for people: review what agents proposed, the layers and their diff, search
with explanations (served at ``/ui`` by ``sediment serve --transport http`` and
``sediment ui``)."""

from sediment.server.web._app import NAV, PREFIX, WebUI, with_ui

__all__ = ["NAV", "PREFIX", "WebUI", "with_ui"]
