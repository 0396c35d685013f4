"""The import-linter contracts of pyproject.toml catch what DESIGN.md forbids: each one is shown
broken by an import planted in a copy of the package."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[1]

#: For each contract (by its name's start), one import it must refuse, and where to plant it.
PLANTED = {
    "The brain (domain) imports nothing else": ("domain/model.py", "import subprocess"),
    "The hands (agents) know only the brain": ("agents/events.py", "import ralphctl.hook.paths"),
    "The memory (store) knows only the brain": ("store/url.py", "import ralphctl.workflows.model"),
    "Nothing imports the faces": ("engine/loops.py", "import ralphctl.cli.common"),
    "The Stop hook knows only the brain": ("hook/mapper.py", "import ralphctl.engine.loops"),
    "The Stop hook's hot path": ("hook/tracker.py", "import ralphctl.store.url"),
}


def contracts() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return [contract["name"] for contract in config["tool"]["importlinter"]["contracts"]]


def importlinter_section() -> str:
    """The ``[tool.importlinter]`` tables of pyproject.toml, as they are written there."""
    lines, inside = [], False
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        if line.startswith("["):
            inside = line.strip("[]").startswith("tool.importlinter")
        if inside:
            lines.append(line)
    return "\n".join(lines) + "\n"


def test_every_contract_has_a_planted_violation():
    names = contracts()
    assert len(names) == len(PLANTED)
    for name in names:
        assert sum(name.startswith(start) for start in PLANTED) == 1, name


def test_each_contract_is_broken_by_its_planted_import(tmp_path: Path):
    package = tmp_path / "src" / "ralphctl"
    shutil.copytree(ROOT / "src" / "ralphctl", package, ignore=shutil.ignore_patterns("*.pyc"))
    for where, statement in PLANTED.values():
        module = package / where
        module.write_text(module.read_text() + f"\n{statement}  # planted\n")
    config = tmp_path / "importlinter.toml"
    config.write_text(importlinter_section())
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}
    linter = Path(sys.executable).with_name("lint-imports")

    checked = subprocess.run(
        [str(linter), "--config", str(config), "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    report = " ".join(checked.stdout.split())
    assert checked.returncode == 1, report
    assert f"Contracts: 0 kept, {len(PLANTED)} broken." in report
    for name in contracts():
        assert re.search(re.escape(name) + r" ?BROKEN", report), name
    for where, statement in PLANTED.values():
        importer = "ralphctl." + where.removesuffix(".py").replace("/", ".")
        assert f"{importer} -> {statement.removeprefix('import ')}" in report


def test_a_run_on_a_current_sqlite_database_never_imports_sqlalchemy(tmp_path: Path):
    """Issue 9's fixed cost of a run: importing SQLAlchemy (about 200 ms of CPU) would hold up
    the recording of the first iteration; a run on a SQLite database at the head revision goes
    through ``store/sqlite_direct``. Only creating or upgrading a database imports it."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for git in (["init", "-q"], [*identity, "commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(["git", *git], cwd=workdir, check=True, capture_output=True, timeout=30)
    claude = tmp_path / "claude"  # the benchmarks' fake, isolated from PYTHON* variables
    fake = ROOT / "bench" / "fake_agents" / "claude.py"
    claude.write_text(f'#!/bin/sh\nexec "{sys.executable}" -I "{fake}" "$@"\n')
    claude.chmod(0o755)
    env = {key: value for key, value in os.environ.items() if not key.startswith("RALPHCTL_")}
    env |= {
        "RALPHCTL_CLAUDE_BIN": str(claude),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPROFILEIMPORTTIME": "1",
    }
    run = [sys.executable, "-m", "ralphctl", "run", "Note your progress.", "-C", str(workdir)]
    run += ["--max-iterations", "2", "--cooldown", "0"]  # the 2nd reads the loop's messages

    def imported_by_a_run() -> set[str]:
        done = subprocess.run(
            run, check=False, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 1, done.stderr[-2000:]  # 1: the iteration budget ended it
        lines = done.stderr.splitlines()
        return {
            line.rpartition("|")[2].strip() for line in lines if line.startswith("import time:")
        }

    first = imported_by_a_run()  # creates the database: Alembic's work
    again = imported_by_a_run()

    assert {"sqlalchemy", "alembic"} <= first
    assert "ralphctl.engine.runner" in again
    assert not {name for name in again if name.split(".")[0] in {"sqlalchemy", "alembic"}}
