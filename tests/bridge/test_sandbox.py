"""The sandbox's arguments and limits, pure: what a spec lets a process see."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from apps.bridge.sandbox import (
    BASE_ENV,
    SANDBOX_HOME,
    HostView,
    LaunchSpec,
    bwrap_args,
    rlimits,
    runtime_roots,
)
from apps.upstreams.bridge import launch_spec

from .conftest import VENV_BIN, hostile_launcher, time_launcher

HOST = HostView(links=(("/lib", "usr/lib"),), directories=(), runtime=("/opt/venv",), etc=("/etc/localtime",))


def _spec(**fields) -> LaunchSpec:
    return LaunchSpec.from_dict(launch_spec(launcher=hostile_launcher(**fields), args=[], env_name="TOKEN"))


def _pairs(args: list[str], option: str) -> list[str]:
    return [args[index + 1] for index, arg in enumerate(args) if arg == option]


def test_without_the_network_flag_the_process_has_no_network_and_no_host_namespace():
    args = bwrap_args(_spec(), scratch=Path("/scratch/x"), credential="s3cret", host=HOST)

    assert args[0] == "--unshare-all"
    assert "--share-net" not in args
    for option in ("--unshare-user", "--disable-userns", "--die-with-parent", "--new-session", "--clearenv"):
        assert option in args
    assert _pairs(args, "--cap-drop") == ["ALL"]
    assert args[-2:] == ["--remount-ro", "/"]


def test_with_the_network_flag_it_shares_the_hosts_network():
    assert "--share-net" in bwrap_args(_spec(network=True), scratch=Path("/s"), credential=None, host=HOST)


def test_its_environment_is_the_basics_and_the_credential_only():
    args = bwrap_args(_spec(), scratch=Path("/scratch/x"), credential="s3cret", host=HOST)

    names = _pairs(args, "--setenv")
    assert set(names) == {*BASE_ENV, "HOME", "TOKEN"}
    assert args[args.index("TOKEN") + 1] == "s3cret"
    assert args[args.index("HOME") + 1] == SANDBOX_HOME


def test_only_its_scratch_and_write_paths_are_writable():
    spec = _spec(read_paths=["/data/in"], write_paths=["/data/out"])

    args = bwrap_args(spec, scratch=Path("/scratch/x"), credential=None, host=HOST)

    binds = [(args[i + 1], args[i + 2]) for i, arg in enumerate(args) if arg == "--bind"]
    assert binds == [("/data/out", "/data/out"), ("/scratch/x", SANDBOX_HOME)]
    read_only = _pairs(args, "--ro-bind")
    assert read_only == ["/usr", "/etc/localtime", "/opt/venv", "/data/in"]


def test_a_venv_script_brings_its_venv_and_base_interpreter_read_only():
    roots = runtime_roots(str(VENV_BIN / "mcp-server-time"))

    venv = VENV_BIN.parent
    home = next(line.split("=", 1)[1].strip() for line in (venv / "pyvenv.cfg").read_text().splitlines()
                if line.split("=", 1)[0].strip() == "home")
    base_prefix = str(Path(home).parent)
    assert roots == [str(venv)] + ([] if base_prefix.startswith("/usr") else [base_prefix])


def test_limits_are_set_from_the_spec():
    spec = _spec(memory_mb=128, cpu_s=7, max_open_files=99)

    limits = {kind: (soft, hard) for kind, soft, hard in rlimits(spec)}

    assert limits[resource.RLIMIT_AS] == (128 * 2**20, 128 * 2**20)
    assert limits[resource.RLIMIT_CPU][0] == 7
    assert limits[resource.RLIMIT_NOFILE] == (99, 99)
    assert limits[resource.RLIMIT_CORE] == (0, 0)


@pytest.mark.parametrize("change, words", [
    ({"command": ["relative/bin"]}, "absolute"),
    ({"command": []}, "non-empty"),
    ({"read_paths": ["/a/../etc"]}, "read_paths"),
    ({"env_name": "PATH"}, "the bridge sets it"),
    ({"memory_mb": 10}, "memory_mb"),
    ({"network": "yes"}, "network"),
])
def test_a_bad_spec_is_refused_saying_why(change, words):
    spec = {**launch_spec(launcher=time_launcher(), args=[], env_name=None), **change}

    with pytest.raises(ValueError, match=words):
        LaunchSpec.from_dict(spec)
