"""DEBATE study (paper 003): LLM twins of human debaters, compared with the humans."""
