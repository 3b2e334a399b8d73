"""Helpers the tests import (`from support.<module> import ...`; `tests/` is on pytest's pythonpath):

- `project`: the repository (ROOT), a fresh copy of it, params files, the tools' environment, `socsim` runs;
- `metrics`: what a stage left behind (its metrics JSON, the rows of its call cache);
- `faults`: a stage signalled or killed after some model calls;
- `llm`: the scripted backend (in process, or served on loopback) and models-registry entries;
- `hub`: a Hugging Face Hub cache laid out by hand (the Hub loaders' offline input).

Fixtures and the fast-lane guard stay in tests/conftest.py."""
