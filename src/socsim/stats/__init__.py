"""Shared statistics: multiple testing, regression helpers, text similarity."""
