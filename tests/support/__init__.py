"""Helpers the tests import (`from support.<module> import ...`; `tests/` is on pytest's pythonpath):

- `project`: the repository (ROOT), a fresh copy of it, params files, the tools' environment, `socsim` runs;
- `metrics`: what a stage left behind (its metrics JSON, the rows of its call cache);
- `faults`: a stage signalled or killed after some model calls;
- `llm`: the scripted backend (in process, or served on loopback) and models-registry entries;
- `hub`: a Hugging Face Hub cache laid out by hand (the Hub loaders' offline input);
- `analysis`: a study's analysis inputs built as its `analyse` stage builds them, from in-memory tables and the
  params schema's defaults (`inputs`), and a written report's plot tables read back as panels (`plots`);
- `studies`: per-study helpers (synthetic inputs with known answers, reference computations, the fixtures
  several test files of a study share).

Fixtures and the fast-lane guard stay in tests/conftest.py."""
