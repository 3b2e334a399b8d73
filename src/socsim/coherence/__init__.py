"""Coherence study (paper 001): latent profiles and behavioural coherence of LLM agents."""
