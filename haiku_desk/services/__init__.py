"""Services: the only layer that talks to ``haiku.rag`` and Pydantic AI.

Each service is a QObject that owns no widgets and exposes Qt signals; views call its methods
and subscribe to its signals.
"""
