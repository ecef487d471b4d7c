"""The `dlweb config` commands, run as real processes through the installed console script."""

import gc
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from archive import collector
from archive.config import load_config


def dlweb_script() -> str:
    """The console script installed next to this interpreter, else the one on PATH."""
    beside = Path(sys.executable).with_name("dlweb")
    found = str(beside) if beside.exists() else shutil.which("dlweb")
    assert found is not None, "the dlweb console script is not installed"
    return found


def run(*args: str, module: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "dlweb"] if module else [dlweb_script()]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=60, check=False
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("dlweb: error: ")
    for fragment in fragments:
        assert fragment in lines[0]


def assert_usage_error(result: subprocess.CompletedProcess[str], fragment: str) -> None:
    """An error of the command line: argparse's usage, then one line saying what is wrong."""
    assert result.returncode == 2 and result.stdout == ""
    assert "Traceback" not in result.stderr
    usage, error = result.stderr.splitlines()
    assert usage.startswith("usage: dlweb")
    assert error.startswith("dlweb: error: ") and fragment in error


def test_init_then_check(tmp_path: Path) -> None:
    path = tmp_path / "cluster" / "dlweb.yaml"
    init = run("config", "init", "-c", str(path), "--name", "lab", "--multicast-port", "47123")
    assert init.returncode == 0, init.stderr
    assert init.stdout == f"wrote {path} with a new cluster secret\n"
    assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0
    config = load_config(path)
    assert (config.name, config.multicast.port) == ("lab", 47123)

    check = run("config", "check", "--config", str(path))
    assert check.returncode == 0, check.stderr
    assert check.stdout == f"{path}: cluster 'lab', lookup multicast, ok\n"
    assert check.stderr == ""


def test_init_refuses_to_replace_a_secret(tmp_path: Path) -> None:
    path = tmp_path / "dlweb.yaml"
    path.write_text("cluster:\n  secret: an existing secret to keep\n")
    result = run("config", "init", "-c", str(path), module=True)
    assert_one_line_error(result, str(path), "already exists")
    assert path.read_text() == "cluster:\n  secret: an existing secret to keep\n"


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("cluster:\n  secret: short\n", ["cluster.secret", "at least 16 characters"]),
        ("cluster:\n  name: [unclosed\n", ["not valid YAML at line 3"]),
    ],
)
def test_check_reports_a_bad_config_in_one_line(
    tmp_path: Path, text: str, fragments: list[str]
) -> None:
    path = tmp_path / "dlweb.yaml"
    path.write_text(text)
    assert_one_line_error(
        run("config", "check", "-c", str(path), module=True), str(path), *fragments
    )


def test_check_of_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.yaml"
    assert_one_line_error(run("config", "check", "-c", str(path)), str(path), "not found")


def _loaded_after(code: str, modules: list[str]) -> list[str]:
    """Which of `modules` a fresh interpreter has loaded after running `code`."""
    probe = f"import sys\n{code}\nprint(' '.join(m for m in {modules!r} if m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return result.stdout.split()


def test_the_command_line_loads_no_network_module_before_a_command_needs_one() -> None:
    # aiohttp takes a tenth of a second to load: `dlweb import` reads while it loads.
    assert _loaded_after("import dlweb.cli; dlweb.cli.build_parser()", ["aiohttp"]) == []


OTHER_PACKAGES = ["storage_node", "master", "exchange", "proxy", "crawler", "deploy", "harbors"]


def test_a_command_of_the_root_loads_no_other_package() -> None:
    code = "import dlweb.cli; dlweb.cli.build_parser(['-v', 'captures', 'http://a.test/'])"
    assert _loaded_after(code, OTHER_PACKAGES + ["importlib.metadata"]) == []


def test_help_or_an_unknown_command_loads_every_subcommand() -> None:
    code = (
        "import dlweb.cli\n"
        "for argv in ([], ['--help'], ['no-such-command']):\n"
        "    parser = dlweb.cli.build_parser(argv)\n"
        "    commands = parser._subparsers._group_actions[0].choices\n"
        "    assert {'import', 'storage-node', 'crawl', 'proxy'} <= set(commands), argv"
    )
    assert set(_loaded_after(code, OTHER_PACKAGES)) >= {"storage_node", "crawler", "proxy"}


def test_a_command_loads_only_the_package_that_registers_it() -> None:
    for argv, package in (
        (["import", "a.warc.gz"], "exchange"),
        (["-c", "a.yaml", "storage-node", "--help"], "storage_node"),
        (["up", "--data", "d"], "deploy"),
    ):
        code = f"import dlweb.cli; dlweb.cli.build_parser({argv!r})"
        assert _loaded_after(code, OTHER_PACKAGES) == [package], argv


def test_every_command_entry_is_named_after_a_command_it_registers() -> None:
    code = (
        "import dlweb.cli\n"
        "from importlib.metadata import entry_points\n"
        "for entry in entry_points(group='dlweb.commands'):\n"
        "    parser = dlweb.cli.build_parser([entry.name])\n"
        "    assert entry.name in parser._subparsers._group_actions[0].choices, entry.name\n"
        "print(len(entry_points(group='dlweb.commands')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) >= 20


def test_a_client_of_the_cluster_loads_no_server_module() -> None:
    code = "import archive.cluster\nfrom archive.hip import HipMaster, HipSlave"
    assert _loaded_after(code, ["aiohttp.web"]) == ["aiohttp.web"]
    assert _loaded_after("import archive.cluster", ["aiohttp", "aiohttp.web"]) == ["aiohttp"]


def _collector_schedule(argv: list[str]) -> tuple[int, ...]:
    """The garbage collector's thresholds while a real command line's command runs, in a fresh
    interpreter (the command's own work replaced by printing them)."""
    code = (
        "import gc, archive.command_line, dlweb.cli\n"
        f"argv = {argv!r}\n"
        "parser = dlweb.cli.build_parser(argv)\n"
        "command = parser._subparsers._group_actions[0].choices[argv[0]]\n"
        "command.set_defaults(run=lambda args: print(*gc.get_threshold()) or 0)\n"
        "archive.command_line.run(parser, argv)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return tuple(map(int, result.stdout.split()))


def test_servers_and_imports_collect_garbage_less_often_than_python_does() -> None:
    assert collector.SERVING[0] > gc.get_threshold()[0]
    assert collector.BATCH[0] > collector.SERVING[0]
    for argv in (["import", "a.warc.gz"], ["export", "--out", "a.warc.gz"]):
        assert _collector_schedule(argv) == collector.BATCH, argv
    for argv in (
        ["storage-node", "--root", "n"],
        ["master", "--data", "m"],
        ["index-node", "--data", "i"],
        ["proxy"],
        ["captures", "http://a.test/"],
    ):
        assert _collector_schedule(argv) == collector.SERVING, argv


def test_site_crawler_agents_keep_pythons_collector_schedule() -> None:
    # Their memory has a budget: garbage collected later is memory held longer.
    for argv in (["crawl", "http://a.test/"], ["crawler-agent"]):
        assert _collector_schedule(argv) == gc.get_threshold(), argv


def test_the_configuration_may_come_before_the_command(tmp_path: Path) -> None:
    path = tmp_path / "dlweb.yaml"
    assert run("config", "init", "-c", str(path), "--name", "lab").returncode == 0
    for args in (("-c", str(path), "config", "check"), ("--config", str(path), "config", "check")):
        check = run(*args)
        assert check.returncode == 0, check.stderr
        assert check.stdout == f"{path}: cluster 'lab', lookup multicast, ok\n"
    # The same file after the command too is no conflict; another one is.
    assert run("-c", str(path), "config", "check", "-c", str(path)).returncode == 0
    other = tmp_path / "other.yaml"
    twice = run("-c", str(path), "config", "check", "-c", str(other))
    assert_usage_error(twice, f"-c given twice, as {path} and {other}")
    assert_usage_error(run("-c", str(path), "up", "--data", str(tmp_path)), "dlweb up takes no")


def test_a_command_of_the_root_after_a_configuration_loads_no_other_package() -> None:
    code = "import dlweb.cli; dlweb.cli.build_parser(['-c', 'a.yaml', 'captures', 'http://a/'])"
    assert _loaded_after(code, OTHER_PACKAGES + ["importlib.metadata"]) == []


def test_a_command_whose_reader_went_away_ends_quietly(tmp_path: Path) -> None:
    """`dlweb ... | head -1`: the output pipe closes before the command writes to it."""
    path = tmp_path / "dlweb.yaml"
    assert run("config", "init", "-c", str(path)).returncode == 0
    command = subprocess.Popen(
        [dlweb_script(), "config", "check", "-c", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert command.stdout is not None and command.stderr is not None
    command.stdout.close()
    errors = command.stderr.read()
    assert command.wait(timeout=60) == 141
    assert errors == b""
