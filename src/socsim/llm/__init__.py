"""The LLM layer: one request type, one async interface, three backends."""

from socsim.llm.client import LLMClient
from socsim.llm.constraints import Choice, Constraint, IntRange, JsonSchema
from socsim.llm.errors import EndpointUnavailableError, LLMConfigError, LLMError
from socsim.llm.types import Request, Response, Sampling
from socsim.seeds import derive_seed

__all__ = [
    "LLMClient",
    "Choice",
    "Constraint",
    "IntRange",
    "JsonSchema",
    "EndpointUnavailableError",
    "LLMConfigError",
    "LLMError",
    "derive_seed",
    "Request",
    "Response",
    "Sampling",
]
