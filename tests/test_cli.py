"""Settings and the `assoc serve` command line (no server started)."""

from __future__ import annotations

import pytest

import assoc
from assoc.cli import main
from assoc.server.settings import SPECS, Settings


def test_defaults() -> None:
    s = Settings.from_sources([], environ={})
    assert s == Settings()
    assert s.api_version == "12.207.0"
    assert s.efe_mode == 0
    assert s.cpu_overload_threshold == 90.0
    assert s.cpu_overload_sample_time == 30
    assert s.memory_budget_bytes == 0


def test_environment_and_pairs_with_pairs_winning() -> None:
    environ = {"ASSOC_EFEMode": "1", "ASSOC_MaxUploadBytes": "100", "ASSOC_BENCH_SCALE": "0.1"}
    s = Settings.from_sources(["MaxUploadBytes=200", "apiversion=12.171.0"], environ=environ)
    assert s.efe_mode == 1
    assert s.max_upload_bytes == 200
    assert s.api_version == "12.171.0"
    s = Settings.from_sources(["MemoryBudgetMB=2", "Threads=1"], environ={})
    assert s.memory_budget_bytes == 2 * 1024 * 1024
    assert s.threads == 1


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("Nonsense=1", "unknown setting 'Nonsense'"),
        ("EFEMode", "is not Name=Value"),
        ("EFEMode=2", "EFEMode='2': must be 0 or 1"),
        ("ApiVersion=13.0.0", "must be one of 12.207.0, 12.171.0"),
        ("CpuOverloadThreshold=101", "must be 0..100"),
        ("CpuOverloadSampleTime=0", "must be 1..3600"),
        ("MaxUploadBytes=lots", "must be a whole number"),
        ("ValidateJsonWebTokens=3", "must be one of 0, 1, 2"),
        ("ValidateJsonWebTokens=2", "needs JsonWebTokenSecret or JsonWebTokenPath"),
        ("JsonWebTokenPath=/no/such/key.pem", "is not a readable file"),
    ],
)
def test_bad_settings_are_refused(pair: str, message: str) -> None:
    with pytest.raises(assoc.Error, match=message):
        Settings.from_sources([pair], environ={})


def test_bad_environment_value_names_the_variable() -> None:
    with pytest.raises(assoc.Error, match="ASSOC_RamOverloadThreshold='high'"):
        Settings.from_sources([], environ={"ASSOC_RamOverloadThreshold": "high"})


def test_secret_is_hidden_in_the_summary() -> None:
    s = Settings(json_web_token_secret="hush")
    assert s.as_dict()["JsonWebTokenSecret"] == "***"
    assert set(s.as_dict()) == {spec.name for spec in SPECS}


def test_serve_help_documents_every_setting(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    for option in ("--host", "--port", "--data-dir", "-S Name=Value", "127.0.0.1", "9076"):
        assert option in out
    for spec in SPECS:
        assert spec.name in out
        assert spec.help[:30] in " ".join(out.split())
    assert "ASSOC_<Name>" in out


def test_serve_stops_on_a_bad_setting(capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    assert main(["serve", "--data-dir", str(tmp_path), "-S", "Bogus=1"]) == 2
    err = capsys.readouterr().err
    assert "unknown setting 'Bogus'" in err
    assert main(["serve", "--data-dir", str(tmp_path), "--port", "70000"]) == 2
    assert "not a port number" in capsys.readouterr().err


def test_bare_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    assert "serve" in capsys.readouterr().out


def test_serve_stops_when_its_port_is_taken(
    capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["serve", "--data-dir", str(tmp_path), "--port", str(port)]) == 2
    assert "in use" in capsys.readouterr().err
