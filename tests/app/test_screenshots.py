"""``packaging/screenshots.py`` drives the real main window through its five states and saves
one PNG of the window per state (no pixel comparisons: the pictures are for people)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from PySide6.QtGui import QImage

SCRIPT = Path(__file__).resolve().parents[2] / "packaging" / "screenshots.py"


def load_script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("haiku_desk_screenshots", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


def test_the_script_saves_five_screenshots_of_the_window(qapp, tmp_path, capsys):
    screenshots = load_script()
    out = tmp_path / "shots"

    assert screenshots.main(["--out", str(out)]) == 0, capsys.readouterr().err

    assert sorted(p.name for p in out.glob("*.png")) == sorted(screenshots.SHOTS)
    for name in screenshots.SHOTS:
        image = QImage(str(out / name))
        assert not image.isNull(), name
        assert (image.width(), image.height()) == screenshots.WINDOW_SIZE, name
        colours = {
            image.pixel(x, y)
            for x in range(0, image.width(), 40)
            for y in range(0, image.height(), 40)
        }
        assert len(colours) > 5, f"{name} is nearly blank"
