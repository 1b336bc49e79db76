"""Render the app's SVG icon to the PNG sizes desktop environments look up.

python packaging/linux/render_icons.py ICON.svg OUT_DIR   ->  OUT_DIR/haiku-desk-{48,128,256}.png
"""

from __future__ import annotations

import os
import sys

SIZES = (48, 128, 256)


def main(svg: str, out_dir: str) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # noqa: F841 - needed for painting
    renderer = QSvgRenderer(svg)
    if not renderer.isValid():
        print(f"not a valid SVG: {svg}", file=sys.stderr)
        return 1
    os.makedirs(out_dir, exist_ok=True)
    for size in SIZES:
        image = QImage(size, size, QImage.Format.Format_ARGB32)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        renderer.render(painter)
        painter.end()
        if not image.save(os.path.join(out_dir, f"haiku-desk-{size}.png")):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
