"""haiku-desk: the desktop research assistant built on haiku.rag."""

from haiku.rag import __version__

__all__ = ["__version__"]
