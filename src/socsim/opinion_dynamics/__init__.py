"""Opinion dynamics study (paper 002): LLM agents tweeting and changing opinions."""
