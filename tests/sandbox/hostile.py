"""Hostile programs for ``analysis_execute_code``: each must be refused or stopped with a clear
message, leave the process healthy, and leave the next execution working.

``stopped_by`` is what the sandbox reports (``ExecutionResult.stopped_by``); ``message`` is a
piece of the text the model is shown. The suite (``test_hostile_programs``) and the table in
``docs/security.md`` (``tests/bench/bench_sandbox_security.py``) both run this list, with the
limits in ``HOSTILE_LIMITS``.
"""

from __future__ import annotations

from dataclasses import dataclass

# Small limits so the suite runs in seconds; the defaults are 60 s, 512 MiB and 50,000 chars.
HOSTILE_LIMITS = {
    "code_timeout": 2.0,
    "total_timeout": 600.0,
    "max_memory_mb": 64,
    "max_output_chars": 2_000,
    "max_executions": 1_000,
}


@dataclass(frozen=True)
class Hostile:
    name: str
    category: str
    code: str
    stopped_by: str
    message: str


PROGRAMS = [
    # --- host files -------------------------------------------------------------------------
    Hostile("read /etc/passwd", "host files", "print(open('/etc/passwd').read())",
            "error", "The sandbox can only read files under /documents/"),
    Hostile("read /etc/passwd with pathlib", "host files",
            "from pathlib import Path\nprint(Path('/etc/passwd').read_text())",
            "error", "Permission denied: '/etc/passwd'"),
    Hostile("escape /documents with ..", "host files",
            "print(open('/documents/../etc/shadow').read())",
            "error", "Permission denied: '/etc/shadow'"),
    Hostile("read the host's home folder", "host files",
            "from pathlib import Path\nprint(list(Path('/root').iterdir()))",
            "error", "Permission denied: '/root'"),
    Hostile("read the process environment", "host files",
            "from pathlib import Path\nprint(Path('/proc/self/environ').read_bytes())",
            "error", "Permission denied: '/proc/self/environ'"),
    Hostile("read the store's files by relative path", "host files",
            "print(open('../../work/main/pyproject.toml').read())",
            "error", "Permission denied"),
    # --- writes -----------------------------------------------------------------------------
    Hostile("write a file in /tmp", "writes", "open('/tmp/pwned.txt', 'w').write('x')",
            "error", "Permission denied: '/tmp/pwned.txt'"),
    Hostile("overwrite a document's content", "writes",
            "import json\nd = (await list_documents())[0]['id']\n"
            "open('/documents/' + d + '/content.txt', 'w').write('gone')",
            "error", "The sandbox's files are read-only"),
    Hostile("append to items.jsonl", "writes",
            "from pathlib import Path\nd = (await list_documents())[0]['id']\n"
            "Path('/documents/' + d + '/items.jsonl').write_text('{}')",
            "error", "The sandbox's files are read-only"),
    Hostile("create a folder", "writes",
            "from pathlib import Path\nPath('/documents/new').mkdir()",
            "error", "The sandbox's files are read-only"),
    Hostile("delete a document folder", "writes",
            "from pathlib import Path\nd = (await list_documents())[0]['id']\n"
            "Path('/documents/' + d + '/toc.json').unlink()",
            "error", "The sandbox's files are read-only"),
    # --- imports, network, processes -------------------------------------------------------
    Hostile("import os", "imports", "import os\nprint(os.listdir('/'))",
            "refused", "Importing `os` is not allowed"),
    Hostile("import subprocess", "imports",
            "import subprocess\nsubprocess.run(['id'])", "refused", "Importing `subprocess` is not allowed"),
    Hostile("open a socket", "network",
            "import socket\ns = socket.socket()\ns.connect(('example.com', 80))",
            "refused", "Importing `socket` is not allowed"),
    Hostile("fetch a URL", "network",
            "from urllib.request import urlopen\nurlopen('http://127.0.0.1:1/')",
            "refused", "Importing `urllib.request` is not allowed"),
    Hostile("import sys", "imports", "import sys\nprint(sys.modules)",
            "refused", "Importing `sys` is not allowed"),
    Hostile("import os inside exec", "imports", "exec('import os')",
            "refused", "`exec` is not available"),
    Hostile("__import__('os')", "imports", "__import__('os').system('id')",
            "refused", "`__import__` is not available"),
    Hostile("import ctypes", "imports", "import ctypes\nctypes.CDLL(None)",
            "refused", "Importing `ctypes` is not allowed"),
    # --- runaway compute --------------------------------------------------------------------
    Hostile("infinite loop", "time", "while True:\n    pass",
            "time limit", "the time limit of 2 seconds per call was reached"),
    Hostile("infinite loop catching its own timeout", "time",
            "while True:\n    try:\n        while True:\n            pass\n    except Exception:\n        pass",
            "time limit", "the time limit of 2 seconds per call was reached"),
    Hostile("sleep forever", "time", "import time\nwhile True:\n    time.sleep(10)",
            "time limit", "the time limit of 2 seconds per call was reached"),
    Hostile("search in an endless loop", "time",
            "while True:\n    await search('lantern otters', 100)",
            "time limit", "time limit"),
    Hostile("deep recursion", "recursion", "def f(n):\n    return f(n + 1)\nf(0)",
            "recursion limit", "recursion depth limit"),
    Hostile("mutual recursion", "recursion",
            "def a(n):\n    return b(n)\ndef b(n):\n    return a(n)\na(0)",
            "recursion limit", "recursion depth limit"),
    # Completes: the interpreter's repr stops descending into deep nesting.
    Hostile("deeply nested data printed", "recursion",
            "x = []\nfor i in range(200000):\n    x = [x]\nprint(x)",
            "none", "[[[[[["),
    Hostile("deeply nested data serialised", "recursion",
            "import json\nx = []\nfor i in range(100000):\n    x = [x]\njson.dumps(x)",
            "recursion limit", "recursion depth limit"),
    # --- memory -----------------------------------------------------------------------------
    Hostile("huge list", "memory", "a = [0] * (10 ** 9)",
            "memory limit", "the memory limit of 64 MiB was reached"),
    Hostile("string doubling", "memory", "s = 'x'\nwhile True:\n    s = s + s",
            "memory limit", "the memory limit of 64 MiB was reached"),
    Hostile("growing dict", "memory",
            "d = {}\ni = 0\nwhile True:\n    d[i] = str(i) * 100\n    i += 1",
            "memory limit", "the memory limit of 64 MiB was reached"),
    # --- output -----------------------------------------------------------------------------
    Hostile("output flood", "output", "while True:\n    print('x' * 1000)",
            "output limit", "characters of output were exceeded"),
    Hostile("one huge print", "output", "print('y' * 10_000_000)",
            "output limit", "characters of output were exceeded"),
    # --- exceptions -------------------------------------------------------------------------
    Hostile("exception storm", "exceptions",
            "n = 0\nwhile True:\n    try:\n        raise ValueError('storm ' * 100)\n    except ValueError:\n        n += 1",
            "time limit", "the time limit of 2 seconds per call was reached"),
    Hostile("exception with a huge message", "exceptions", "raise ValueError('z' * 5_000_000)",
            "error", "ValueError"),
    Hostile("exit the interpreter", "exceptions", "raise SystemExit('bye')",
            "error", "SystemExit"),
    Hostile("raise KeyboardInterrupt", "exceptions", "raise KeyboardInterrupt()",
            "error", "KeyboardInterrupt"),
    # --- reaching objects outside the sandbox -----------------------------------------------
    Hostile("class hierarchy walk", "escape", "print(().__class__.__bases__[0].__subclasses__())",
            "refused", "is not available in the sandbox (it reaches the interpreter's internals)"),
    Hostile("a host function's globals", "escape", "print(search.__globals__)",
            "refused", "The attribute `__globals__` is not available"),
    Hostile("builtins", "escape", "print(__builtins__)",
            "refused", "`__builtins__` is not available"),
    Hostile("getattr to a dunder", "escape", "print(getattr(search, '__' + 'globals__'))",
            "error", "AttributeError"),
    Hostile("call the host bridge with a wrong type", "escape", "_haiku_search({'a': 1}, 5)",
            "error", "query must be a non-empty string"),
    Hostile("search with an enormous limit", "escape", "await search('otters', 10 ** 9)",
            "error", "limit must be an integer from 1 to 100"),
    Hostile("search with an SQL-looking query", "escape",
            "print(len(await search(\"x' OR 1=1; DROP TABLE documents; --\", 5)))",
            "none", ""),
]


HEALTH_CHECK = "docs = await list_documents()\nprint(len(docs), 6 * 7)"


@dataclass(frozen=True)
class Outcome:
    program: Hostile
    stopped_by: str  # what the sandbox reported ("none" when the program completed)
    shown: str  # what the model was shown
    tool_outcome: str  # the tool return's outcome: "failed" or "success"
    seconds: float  # from the model's call to the model receiving the result
    next_execution: str  # what the health check after it printed


async def run_hostile(capability, programs: list[Hostile] = PROGRAMS) -> list[Outcome]:  # noqa: ANN001
    """Play every program through ``analysis_execute_code`` in one agent run, each followed by a
    health-check execution, and report what happened."""
    import time

    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    from haiku.rag.sandbox import runtime

    reported: list[str] = []
    original = runtime.Sandbox.execute

    async def recording(self, code: str):  # noqa: ANN001, ANN202
        result = await original(self, code)
        reported.append(result.stopped_by or "none")
        return result

    calls = [("load_capability", {"id": "haiku-rag-analysis"})]
    for program in programs:
        calls += [("analysis_execute_code", {"code": program.code}),
                  ("analysis_execute_code", {"code": HEALTH_CHECK})]
    returns: list[ToolReturnPart] = []
    durations: list[float] = []
    sent_at = 0.0

    def respond(messages: list, info: AgentInfo) -> ModelResponse:  # noqa: ANN001
        nonlocal sent_at
        last = messages[-1]
        if isinstance(last, ModelRequest):
            got = [p for p in last.parts if isinstance(p, ToolReturnPart)]
            if got:
                durations.append(time.perf_counter() - sent_at)
                returns.extend(got)
        if not calls:
            return ModelResponse(parts=[TextPart("done")])
        name, args = calls.pop(0)
        sent_at = time.perf_counter()
        return ModelResponse(parts=[ToolCallPart(name, args)])

    runtime.Sandbox.execute = recording  # type: ignore[method-assign]
    try:
        agent = Agent(FunctionModel(respond), capabilities=[capability])
        await agent.run(
            "Run the programs.", deps=_Deps(), usage_limits=UsageLimits(request_limit=None)
        )
    finally:
        runtime.Sandbox.execute = original  # type: ignore[method-assign]
    returns, durations = returns[1:], durations[1:]  # drop load_capability
    outcomes = []
    for i, program in enumerate(programs):
        hostile, check = returns[2 * i], returns[2 * i + 1]
        outcomes.append(
            Outcome(
                program=program,
                stopped_by=reported[2 * i],
                shown=str(hostile.content),
                tool_outcome=hostile.outcome,
                seconds=durations[2 * i],
                next_execution=str(check.content) if check.outcome == "success" else f"FAILED: {check.content}",
            )
        )
    return outcomes


@dataclass
class _Deps:
    state: dict = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.state = {}
