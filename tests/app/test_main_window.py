from haiku_desk.main_window import MainWindow


def test_main_window_opens_offscreen(qtbot):
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    assert window.windowTitle() == "haiku-desk"
    assert window.centralWidget().accessibleName() == "Library drop zone"
    image = window.grab().toImage()
    assert image.width() > 0 and image.height() > 0
