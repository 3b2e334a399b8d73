"""The planted model (socsim.planted) in tests: its real HTTP server on loopback in a thread of the test
(`PlantedServer`, a registry entry naming it as an external server), and the registry entries that make the
run start it itself (`control_models`, the engine `planted`)."""

from __future__ import annotations

import asyncio
import threading

from aiohttp import web

from socsim.planted import MODEL_IDS
from socsim.planted.server import app, listening
from support.project import ROOT


class PlantedServer:
    """`python -m socsim.planted.server` in a thread: the same routes (its own event loop) on a free loopback port."""

    def __init__(self, variant: str = "planted", key: str | None = None):
        self.variant, self.model_id = variant, MODEL_IDS[variant]
        sock = listening("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.loop = asyncio.new_event_loop()
        # the materials of this repository's studies, declared as the run declares its project's
        runner = web.AppRunner(app(variant, self.model_id, key, ROOT / "data"), access_log=None)
        started = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(runner.setup())
            self.loop.run_until_complete(web.SockSite(runner, sock).start())
            started.set()
            self.loop.run_forever()
            self.loop.run_until_complete(runner.cleanup())
            self.loop.close()
            sock.close()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        started.wait(30)

    def entry(self) -> dict:
        """Its models-registry entry (an external server: checked, not started)."""
        return {"backend": "openai", "model_id": self.model_id, "endpoints": [self.url]}

    def close(self) -> None:
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(30)

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
