"""The planted model (socsim.planted) in tests: its real HTTP server on loopback in a thread of the test
(`PlantedServer`, a registry entry naming it as an external server), and the registry entries that make the
run start it itself (`control_models`, the engine `planted`)."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer

from socsim.planted import MODEL_IDS
from socsim.planted.server import handler


class PlantedServer:
    """`python -m socsim.planted.server` in a thread: the same handler on a free loopback port."""

    def __init__(self, variant: str = "planted"):
        self.variant, self.model_id = variant, MODEL_IDS[variant]
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler(variant, self.model_id, None))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def entry(self) -> dict:
        """Its models-registry entry (an external server: checked, not started)."""
        return {"backend": "openai", "model_id": self.model_id, "endpoints": [self.url]}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> PlantedServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def control_models() -> dict:
    """The registry entries of the planted model and its null twin, served by the run (engine `planted`)."""
    return {
        "planted": {
            "backend": "openai",
            "model_id": MODEL_IDS["planted"],
            "serve": {"engine": "planted", "model": "planted"},
        },
        "planted-null": {
            "backend": "openai",
            "model_id": MODEL_IDS["null"],
            "serve": {"engine": "planted", "model": "null"},
        },
    }
