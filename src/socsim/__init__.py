"""socsim: a reproducible pipeline for LLM social-simulation research."""

__version__ = "0.1.0"
