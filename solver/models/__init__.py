"""Cloth models, selectable by name (see ``registry.py``)."""
