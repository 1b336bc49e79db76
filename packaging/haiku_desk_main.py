"""The bundle's entry point: ``haiku_desk.app.main`` behind the two frozen-app start hooks.

haiku.rag parses documents in a worker process. In a frozen app ``sys.executable`` is the
bundle's own executable, so the worker is started as ``haiku-desk --haiku-rag-parse-worker``
and ``run_worker_if_requested()`` must turn that process into the worker before anything else
(it returns at once otherwise); the built-in model runtime's child (``haiku.rag.local_models``)
is started the same way with ``--haiku-rag-model-worker``. ``--haiku-rag ARGS`` makes the
bundle the ``haiku-rag`` command (the MCP configuration the app's Help menu shows launches
``haiku-desk --haiku-rag --db LIBRARY mcp``). ``multiprocessing.freeze_support()`` does the
same for any library that spawns through ``multiprocessing``.
"""

import multiprocessing
import os
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()
    if sys.argv[1:2] == ["--haiku-rag-parse-worker"]:  # imported only then: start stays fast
        from haiku.rag.ingest.isolation import run_worker_if_requested

        run_worker_if_requested()
    if sys.argv[1:2] == ["--haiku-rag-model-worker"]:  # the built-in llama.cpp runtime's child
        from haiku.rag.local_models.runtime import run_worker_if_requested as run_model_worker

        run_model_worker()
    if sys.argv[1:2] == ["--haiku-rag"]:  # the bundle as `haiku-rag` (its MCP set-up runs
        # `<bundle> --haiku-rag --db LIBRARY mcp`: haiku.rag.mcp_server.client_config)
        from haiku.rag.cli import main as haiku_rag_main

        sys.exit(haiku_rag_main(sys.argv[2:]))
    if os.path.splitext(os.path.basename(sys.executable))[0].lower() == "haiku-rag":
        # Windows' console haiku-rag.exe beside the windowed haiku-desk.exe (the spec builds
        # both from this script); on Linux and macOS `haiku-rag` is a launcher script that
        # passes --haiku-rag
        from haiku.rag.cli import main as haiku_rag_main

        sys.exit(haiku_rag_main(sys.argv[1:]))
    # Started with no locale at all (env -i, some launchers), Qt warns and falls back to
    # C.UTF-8 by itself; say so up front instead.
    if not any(os.environ.get(name) for name in ("LC_ALL", "LC_CTYPE", "LANG")):
        os.environ["LC_CTYPE"] = "C.UTF-8"
    from haiku_desk.app import main

    sys.exit(main())
