"""Widgets. They talk to services only (signals in, method calls out)."""
