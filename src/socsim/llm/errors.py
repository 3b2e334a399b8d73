"""Errors of the LLM layer; each message names what to fix (a key, a URL, a file)."""


class LLMError(RuntimeError):
    pass


class LLMConfigError(LLMError):
    """The llm section of params.yaml points at something that does not exist."""


class EndpointUnavailableError(LLMError):
    """A server endpoint did not answer the health probe, or failed past the retry budget."""


class CacheFileError(LLMError):
    """The call cache file cannot be used as one: damaged, another program's, or of a newer schema."""


class ModelIdentityError(LLMError):
    """A server does not serve the model id the registry names for it."""


class UnparsedAnswersError(LLMError):
    """A model's first llm.parse_fail_fast constrained answers all failed to parse: its output constraint
    is not applied (or cannot be met), and a run would only record answers that never parse."""


class ReplayMissError(LLMError):
    """A replayed run (SOCSIM_REPLAY) asked for an answer its recording does not hold: a replay never calls
    the model."""
