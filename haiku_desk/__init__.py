"""haiku-desk: the desktop research assistant built on haiku.rag."""

# Before any PySide6 import: once PySide6 is loaded, its import hook inspects each importing
# module (``inspect.getsource`` -> ``hasattr(module, "__wrapped__")``), and on pydantic's package
# that lazy attribute lookup imports ``pydantic._internal._validators`` while it is still half
# initialised, so ``from pydantic import Field`` after ``import PySide6.QtCore`` fails. Loaded
# whole first, the lookup finds it complete and answers AttributeError as it should.
import pydantic._internal._validators  # noqa: F401

from haiku.rag import __version__

__all__ = ["__version__"]
