"""The wheel and sdist from ``python -m build``, installed the way a user installs them.

Marked ``packaging`` (deselected by default; run with ``-m packaging``): it builds both
artefacts, creates a fresh virtual environment, installs the wheel there with pip (the
dependencies come from PyPI or pip's cache) and runs the installed commands from a folder
outside the repository, so nothing can come from the checkout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pdf_factory
import pytest

from haiku.rag import __version__

pytestmark = [pytest.mark.packaging, pytest.mark.timeout(1800)]

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Installed:
    wheel: Path
    sdist: Path
    venv: Path
    work: Path

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("HAIKU_RAG_", "VIRTUAL_ENV", "PYTHON"))
        }
        env.update(
            PATH=f"{self.venv / 'bin'}:/usr/bin:/bin",
            XDG_DATA_HOME=str(self.work / "xdg-data"),
            QT_QPA_PLATFORM="offscreen",
            TMPDIR=str(self.work),
            PIP_DISABLE_PIP_VERSION_CHECK="1",
        )
        result = subprocess.run(
            list(args), cwd=self.work, env=env, capture_output=True, text=True, timeout=timeout
        )
        assert result.returncode == 0, f"{args} failed:\n{result.stdout}\n{result.stderr}"
        return result


def tracked_files(*folders: str) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", *folders], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    return [line for line in out.splitlines() if line]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("wheel")
    dist, work = root / "dist", root / "work"
    work.mkdir()
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    (wheel,) = dist.glob("haiku_desk-*.whl")
    (sdist,) = dist.glob("haiku_desk-*.tar.gz")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = Installed(wheel, sdist, venv, work)
    installed.run(installed.bin("pip"), "install", "--quiet", str(wheel), timeout=1500)
    return installed


def test_artefacts_carry_the_one_version_and_every_package_file(installed):
    assert installed.wheel.name == f"haiku_desk-{__version__}-py3-none-any.whl"
    assert installed.sdist.name == f"haiku_desk-{__version__}.tar.gz"

    with zipfile.ZipFile(installed.wheel) as wheel:
        names = set(wheel.namelist())
        entry_points = wheel.read(f"haiku_desk-{__version__}.dist-info/entry_points.txt").decode()
    # Every tracked file of both packages, package data included (not only modules).
    for path in tracked_files("haiku_rag/haiku", "haiku_desk"):
        in_wheel = path.removeprefix("haiku_rag/")
        assert in_wheel in names, f"{path} is missing from the wheel"
    for path in tracked_files("resources"):  # the window icon and desktop entry
        assert f"haiku_desk/{path}" in names, f"{path} is missing from the wheel"
    assert "haiku-rag = haiku.rag.cli:main" in entry_points
    assert "haiku-desk = haiku_desk.app:main" in entry_points
    assert not any(n.startswith(("tests/", "haiku_rag/")) for n in names)

    with tarfile.open(installed.sdist) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    for path in tracked_files("resources", "packaging", "haiku_desk", "haiku_rag"):
        assert path in members, f"{path} is missing from the sdist"
    assert {"pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md"} <= members


def test_the_library_commands_work_from_the_fresh_environment(installed, tmp_path):
    located = installed.run(
        installed.bin("python"), "-c", "import haiku.rag, haiku_desk; print(haiku.rag.__file__)"
    )
    assert Path(located.stdout.strip()).is_relative_to(installed.venv)

    help_text = installed.run(installed.bin("haiku-rag"), "--help").stdout
    assert "add-src" in help_text and "search" in help_text

    papers = tmp_path / "papers"
    papers.mkdir()
    layout = pdf_factory.make_report_pdf(papers / "report.pdf")
    db = str(tmp_path / "library.lancedb")
    added = installed.run(installed.bin("haiku-rag"), "--db", db, "add-src", str(papers), "--json")
    (record,) = json.loads(added.stdout)
    assert record["status"] == "ingested" and record["index_state"] == "hybrid"

    found = installed.run(
        installed.bin("haiku-rag"), "--db", db, "search", "kerosene shortage convoys", "--json"
    )
    top = json.loads(found.stdout)[0]
    assert "kerosene shortage" in top["text"]
    assert top["page_numbers"] == [layout.block("p_discussion").page]
    assert top["boxes"]


def test_the_app_commands_work_from_the_fresh_environment(installed):
    version = installed.run(installed.bin("haiku-desk"), "--version").stdout.strip()
    assert version == f"haiku-desk {__version__}"
    checked = installed.run(installed.bin("haiku-desk"), "--self-test", timeout=600)
    assert "self-test passed" in checked.stdout
