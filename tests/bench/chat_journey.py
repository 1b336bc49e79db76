"""The chat's journey in the real window, for people to look at (docs/chat.md's figures).

Run under an X server with a window manager, e.g.
``Xvfb :13 -screen 0 1440x900x24 & DISPLAY=:13 openbox &`` then
``DISPLAY=:13 .venv/bin/python tests/bench/chat_journey.py --out /tmp/shots``.
Against the scripted OpenAI-compatible server of tests/openai_stub_server.py (streamed, with
tool calls; slowed down for the Stop step): a toggle on the empty first window, a question on
the empty library, add a PDF, ask, click a citation, ask again (compaction), a slow answer
stopped and asked again, export the first answer from its context menu, Ctrl+N (the citation
panel clears), back to the first conversation, 1024x640 and the minimum width. Each step
saves a screenshot of the whole X screen (ImageMagick's ``import``). Not collected by pytest.
"""
import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import openai_stub_server as stub_mod  # noqa: E402
import pdf_factory  # noqa: E402

SLOW = {"on": False}
_orig = stub_mod._stream_chunks


def slow_chunks(model, message):
    for chunk in _orig(model, message):
        if SLOW["on"]:
            time.sleep(0.6)
        yield chunk


stub_mod._stream_chunks = slow_chunks
OUT = Path("shots")


def shot(name):
    path = OUT / f"{name}.png"
    subprocess.run(["import", "-window", "root", str(path)], check=True)
    print("shot", path, flush=True)


async def wait_for(predicate, timeout=120):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(predicate)
        await asyncio.sleep(0.05)


async def pause(s=0.6):
    await asyncio.sleep(s)


async def journey(window, services, stub, work):
    chat, pane = services.chat, window.chat_pane
    report = pdf_factory.make_report_pdf(work / "report.pdf")
    await pause(1)
    shot("01-empty-window")
    # toggle on the empty first window: no conversation
    pane.compaction_toggle.click()
    await pause()
    assert chat.current is None, "a toggle created a conversation"
    pane.input.setPlainText("What is in my library?")
    pane.send_button.click()
    await wait_for(lambda: not chat.busy and chat.current and chat.current.turns)
    await pause(1)
    shot("01b-empty-library-answer")
    pane.new_chat_action.trigger()
    services.library.add_paths([str(report.path)])
    await wait_for(lambda: any(e.searchable for e in services.library.entries))
    await pause(1)
    pane.input.setPlainText("Why were the night convoys delayed?")
    pane.send_button.click()
    await wait_for(lambda: not chat.busy and chat.current and chat.current.turns)
    await pause(1.5)
    shot("02-answered")
    widget = pane.turn_widgets[-1]
    widget.chips[0].click()
    await pause(2)
    shot("03-citation")
    # a second answer so compaction has something to save
    pane.input.setPlainText("What did the appendix say about the convoys?")
    pane.send_button.click()
    await wait_for(lambda: not chat.busy and len(chat.current.turns) == 2)
    await pause(1.5)
    shot("04-second-answer-tokens")
    # slow stream, then Stop
    SLOW["on"] = True
    pane.input.setPlainText("Summarise the kerosene shortage in detail")
    pane.send_button.click()
    await wait_for(lambda: pane.turn_widgets and "According" in pane.turn_widgets[-1].text, 60)
    await pause(1.5)
    shot("05-streaming")
    pane.stop_button.click()
    await wait_for(lambda: not chat.busy)
    SLOW["on"] = False
    await pause(1)
    shot("06-stopped")
    pane.turn_widgets[-1].ask_again_button.click()
    await wait_for(lambda: not chat.busy and len(chat.current.turns) == 4)
    await pause(1.5)
    shot("07-asked-again")
    # export the first answer from its context menu
    first = pane.turn_widgets[0]
    from PySide6.QtWidgets import QFileDialog
    QFileDialog.getExistingDirectory = staticmethod(lambda *a, **k: str(work / "export"))
    menu = first.context_menu()
    menu.popup(first.answer.mapToGlobal(first.answer.rect().center()))
    await pause(1)
    shot("08-context-menu")
    menu.close()
    [a for a in menu.actions() if a.text().startswith("Export this")][0].trigger()
    await wait_for(lambda: pane.export_operation and not pane.export_operation.running)
    print("exported", pane.export_operation.result, flush=True)
    print(Path(pane.export_operation.result).read_text()[:600], flush=True)
    # Ctrl+N: the citation panel clears
    first_id = chat.current.id
    pane.new_chat_action.trigger()
    await pause(1)
    shot("09-new-chat")
    chat.open_conversation(first_id)
    await pause(1.5)
    shot("10-back-to-first")
    window.resize(1024, 640)
    await pause(1.5)
    shot("11-1024x640")
    window.resize(window.minimumSizeHint().width(), 640)
    await pause(1.5)
    shot("12-minimum-width")
    print("minimum", window.minimumSizeHint(), flush=True)


def main():
    global OUT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder for the screenshots")
    OUT = parser.parse_args().out
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="chat-journey-"))
    os.environ["HOME"] = str(work / "home")
    from haiku.rag.config import load_config
    config = load_config()
    config.storage.data_dir = work / "data"
    import pydantic_ai.models
    pydantic_ai.models.ALLOW_MODEL_REQUESTS = True
    from PySide6.QtWidgets import QApplication
    app = QApplication(sys.argv[:1])
    app.setOrganizationName("haiku-desk-demo")
    app.setApplicationName("haiku-desk-demo")
    from haiku_desk.bridge import install_event_loop
    loop = install_event_loop(app)
    from haiku_desk.services import create_services
    from haiku_desk.services.models import ChatModelChoice
    from haiku_desk.views.main_window import MainWindow
    with stub_mod.StubOpenAI() as stub:
        services = create_services(work / "library.lancedb", config)
        services.models.choose(ChatModelChoice(provider="openai-compatible", name=stub.model, base_url=stub.base_url))
        window = MainWindow(services)
        window.resize(1440, 860)
        window.show()
        services.library.start()
        try:
            loop.run_until_complete(journey(window, services, stub, work))
        finally:
            window.close()
            loop.run_until_complete(services.library.aclose())
    print("done", flush=True)


if __name__ == "__main__":
    main()
