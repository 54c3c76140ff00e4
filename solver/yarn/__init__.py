"""Yarn-level knits: Kaldor's model (docs/yarn.md)."""
