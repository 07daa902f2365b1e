"""The web page for people: review what agents proposed, the layers and their diff, search
with explanations, and the signed-in actor's memories and progressive context (served at
``/ui`` by ``sediment serve --transport http`` and ``sediment ui``)."""

from sediment.server.web._app import NAV, PREFIX, WebUI, with_ui
from sediment.server.web._auth import clean_name
from sediment.server.web._oidc import WebSignIn

__all__ = ["NAV", "PREFIX", "WebSignIn", "WebUI", "clean_name", "with_ui"]
