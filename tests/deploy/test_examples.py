"""The example deployment files stay valid as the configuration and the commands change."""

import configparser
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from archive.config import load_config
from dlweb.cli import build_parser

EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "examples"


def test_the_example_configuration_is_valid() -> None:
    config = load_config(EXAMPLES / "dlweb.yaml")
    assert config.master == "http://10.0.0.10:8100"
    assert config.lookup == "both"
    assert config.replication.default == 2


@pytest.mark.parametrize(
    "unit", sorted((EXAMPLES / "systemd").glob("*.service")), ids=lambda p: p.name
)
def test_the_service_units_run_valid_commands(unit: Path) -> None:
    parsed = configparser.ConfigParser(interpolation=None)
    parsed.read(unit)
    command = shlex.split(parsed["Service"]["ExecStart"])
    assert Path(command[0]).name == "dlweb"
    args = build_parser().parse_args(command[1:])
    assert args.config == Path("/etc/dlweb/dlweb.yaml")


UNITS = EXAMPLES / "systemd"
PROCESSES = ("master", "index-node", "storage-node", "proxy", "scheduler", "crawler-agent")


def _service(unit: Path) -> configparser.SectionProxy:
    parsed = configparser.ConfigParser(interpolation=None, strict=False)
    parsed.optionxform = str  # type: ignore[assignment,method-assign]
    parsed.read(unit)
    return parsed["Service"]


def test_every_process_has_a_unit() -> None:
    commands = {shlex.split(_service(unit)["ExecStart"])[1] for unit in UNITS.glob("*.service")}
    assert commands == set(PROCESSES)


@pytest.mark.parametrize("unit", sorted(UNITS.glob("*.service")), ids=lambda p: p.name)
def test_the_units_run_as_the_dedicated_user_with_restarts_and_limits(unit: Path) -> None:
    service = _service(unit)
    assert service["User"] == "dlweb"
    assert service["Restart"] == "on-failure"
    assert int(service["LimitNOFILE"]) >= 4096
    assert service["MemoryMax"] and service["TasksMax"]
    assert service["ProtectSystem"] == "strict"
    assert "StateDirectory" in service or "ReadWritePaths" in service


def test_the_account_the_units_run_as_is_declared() -> None:
    line = (EXAMPLES / "sysusers" / "dlweb.conf").read_text().splitlines()[-1].split()
    assert line[:2] == ["u", "dlweb"]


def test_systemd_accepts_the_units(tmp_path: Path) -> None:
    """systemd-analyze reads each unit as systemd would; an unknown key or a bad value is reported."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed; the units were only parsed as INI files")
    for unit in UNITS.glob("*.service"):
        name = unit.name.replace("@.service", "@1.service")
        (tmp_path / name).write_text(unit.read_text())
    units = sorted(str(path) for path in tmp_path.iterdir())
    result = subprocess.run(
        [analyze, "verify", "--man=no", *units], capture_output=True, text=True, timeout=60
    )
    complaints = [
        line
        for line in (result.stdout + result.stderr).splitlines()
        if line.strip() and "/opt/dlweb/bin/dlweb" not in line
    ]
    assert not complaints, "\n".join(complaints)
