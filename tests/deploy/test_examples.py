"""The example deployment files stay valid as the configuration and the commands change."""

import configparser
import shlex
from pathlib import Path

import pytest

from archive.cli import build_parser
from archive.config import load_config

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
