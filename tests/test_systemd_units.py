"""contrib/systemd: the unit files docs/deployment.md tells operators to install work as
written: they parse, every command they start exists in the repository (and its
management command in the app), and ``systemd-analyze verify`` finds nothing to say."""

from __future__ import annotations

import configparser
import importlib
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from django.core.management import get_commands

ROOT = Path(__file__).resolve().parents[1]
UNITS = ROOT / "contrib" / "systemd"
INSTALLED_AT = "/opt/kb"
ENV_FILE = "/etc/kb/kb.env"
FILES = sorted(p.name for p in UNITS.iterdir() if p.suffix in {".service", ".target"})


def unit(name: str) -> configparser.ConfigParser:
    # systemd allows a key more than once (ExecStart of a oneshot): keep the last, read all
    # of them from the raw text where it matters.
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(UNITS / name)
    return parser


def exec_lines(name: str) -> list[list[str]]:
    text = (UNITS / name).read_text()
    return [
        shlex.split(line.split("=", 1)[1])
        for line in text.splitlines()
        if line.startswith(("ExecStart=", "ExecStartPre="))
    ]


def test_the_process_units_exist() -> None:
    assert {"kb-web.service", "kb-worker.service", "kb-release.service", "kb.target"} <= set(FILES)
    wants = unit("kb.target")["Unit"]["Wants"].split()
    assert set(wants) == {"kb-web.service", "kb-worker.service"}


@pytest.mark.parametrize("name", [f for f in FILES if f.endswith(".service")])
def test_every_command_a_unit_starts_exists(name: str) -> None:
    service = unit(name)["Service"]
    assert service["WorkingDirectory"] == INSTALLED_AT
    assert service["EnvironmentFile"] == ENV_FILE
    assert (UNITS / "kb.env.example").is_file()
    commands = get_commands()
    for argv in exec_lines(name):
        program = argv[0]
        assert program.startswith(f"{INSTALLED_AT}/"), program
        assert (ROOT / program.removeprefix(f"{INSTALLED_AT}/")).exists(), program
        if "manage.py" in argv:
            command = argv[argv.index("manage.py") + 1]
            if command == "db_worker" and command not in commands:
                pytest.skip("django_tasks_db (its db_worker command) is not installed")
            assert command in commands, command
        if "--config" in argv:
            config = argv[argv.index("--config") + 1].removeprefix("python:")
            importlib.import_module(config)


@pytest.mark.parametrize("name", ["kb-web.service", "kb-worker.service"])
def test_a_crashed_process_is_restarted_and_systemd_never_gives_up(name: str) -> None:
    """docs/reliability.md#r31-locked-database: whatever ends a process, systemd starts it
    again, each on its own (no unit requires the other), with no start limit."""
    parsed = unit(name)
    assert parsed["Service"]["Restart"] == "always"
    assert float(parsed["Service"]["RestartSec"]) > 0
    assert parsed["Unit"]["StartLimitIntervalSec"] == "0"
    assert "Requires" not in parsed["Unit"]
    assert "BindsTo" not in parsed["Unit"]


def test_the_web_unit_gives_gunicorn_a_metrics_directory_of_its_own() -> None:
    service = unit("kb-web.service")["Service"]
    runtime = service["RuntimeDirectory"]
    assert service["Environment"] == f"PROMETHEUS_MULTIPROC_DIR=/run/{runtime}/metrics"
    assert runtime != unit("kb-worker.service")["Service"].get("RuntimeDirectory")


def test_the_example_environment_names_only_settings_the_app_reads() -> None:
    read = (ROOT / "kb" / "settings.py").read_text() + (
        ROOT / "kb" / "gunicorn_conf.py"
    ).read_text()
    for line in (UNITS / "kb.env.example").read_text().splitlines():
        if line and not line.startswith("#"):
            name = line.split("=", 1)[0]
            assert f'"{name}"' in read or f"'{name}'" in read, name


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_systemd_analyze_verifies_the_units(tmp_path: Path) -> None:
    """As installed, with the clone at /opt/kb: here the repository stands in for it."""
    for name in [*FILES]:
        text = (UNITS / name).read_text()
        text = text.replace(ENV_FILE, str(UNITS / "kb.env.example"))
        (tmp_path / name).write_text(text.replace(INSTALLED_AT, str(ROOT)))
    done = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", *[f"./{n}" for n in FILES]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "", done.stderr  # unknown keys are only warnings
