"""Service settings: one object, read from `-S Name=Value` pairs and `ASSOC_<Name>` variables."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from assoc import Error

API_VERSIONS = ("12.207.0", "12.171.0")
QIX_COMPRESSION = ("auto", "on", "off")  # QixCompression's values (qix/wire.py)


def _flag(text: str) -> int:
    if text not in ("0", "1"):
        raise ValueError("must be 0 or 1")
    return int(text)


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in allowed:
            raise ValueError("must be one of " + ", ".join(allowed))
        return text

    return parse


def _int_range(low: int, high: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise ValueError("must be a whole number") from None
        if value < low or (high is not None and value > high):
            bound = f"{low}..{high}" if high is not None else f"at least {low}"
            raise ValueError(f"must be {bound}")
        return value

    return parse


def _float_range(low: float, high: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError("must be a number") from None
        if not low <= value <= high:
            raise ValueError(f"must be {low:g}..{high:g}")
        return value

    return parse


def _text(text: str) -> str:
    return text


def _store_url(text: str) -> str:
    if text:
        from assoc.server.store.s3 import StoreUrl

        StoreUrl.parse(text)
    return text


def _http_url(text: str) -> str:
    if text and not text.startswith(("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL")
    return text


def _absolute_paths(text: str) -> str:
    for path in (p.strip() for p in text.split(";")):
        if path and not os.path.isabs(path):
            raise ValueError(f"{path!r} is not an absolute path")
    return text


@dataclass(frozen=True)
class SettingSpec:
    """How one setting is named, parsed and documented."""

    name: str
    attr: str
    parse: Callable[[str], Any]
    help: str


SPECS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "EnableLameDuckHealthCheck",
        "enable_lame_duck_health_check",
        _flag,
        "0/1, default 0: with 1, GET /health answers 429 while the engine is saturated",
    ),
    SettingSpec(
        "EFEMode", "efe_mode", _flag, "0/1, default 0: with 1, imports may use mode=AUTOREPLACE"
    ),
    SettingSpec(
        "ApiVersion",
        "api_version",
        _choice(*API_VERSIONS),
        "12.207.0 (default) or 12.171.0: the interface description the service answers",
    ),
    SettingSpec(
        "CpuOverloadThreshold",
        "cpu_overload_threshold",
        _float_range(0, 100),
        "percent, default 90: CPU use above it (averaged) makes the engine saturated",
    ),
    SettingSpec(
        "CpuOverloadSampleTime",
        "cpu_overload_sample_time",
        _int_range(1, 3600),
        "seconds, default 30: the window the CPU use is averaged over",
    ),
    SettingSpec(
        "RamOverloadThreshold",
        "ram_overload_threshold",
        _float_range(0, 100),
        "percent, default 90: physical RAM in use above it makes the engine saturated",
    ),
    SettingSpec(
        "MaxUploadBytes",
        "max_upload_bytes",
        _int_range(1),
        "bytes, default 1073741824 (1 GiB): larger request bodies get 413",
    ),
    SettingSpec(
        "Threads", "threads", _int_range(0, 4096), "default 0 = all logical cores: engine threads"
    ),
    SettingSpec(
        "MemoryBudgetMB",
        "memory_budget_mb",
        _int_range(0),
        "MB, default 0 = no budget: idle apps beyond it are evicted and load again on use",
    ),
    SettingSpec(
        "BodyReadTimeout",
        "body_read_timeout",
        _int_range(1, 3600),
        "seconds, default 60: a request body that sends nothing for this long gets 408",
    ),
    SettingSpec(
        "HeaderReadTimeout",
        "header_read_timeout",
        _int_range(1, 3600),
        "seconds, default 10: a request whose headers have not all arrived by then gets 408",
    ),
    SettingSpec(
        "MaxIncompleteRequestsPerAddress",
        "max_incomplete_requests_per_address",
        _int_range(1, 100_000),
        "default 64: requests one client address may have sending headers at once; past it "
        "the oldest gets 429",
    ),
    SettingSpec(
        "ShutdownTimeout",
        "shutdown_timeout",
        _int_range(0, 3600),
        "seconds, default 30: on SIGTERM, requests still running after this are dropped",
    ),
    SettingSpec(
        "ValidateJsonWebTokens",
        "validate_json_web_tokens",
        _choice("0", "1", "2"),
        "0 (default) no tokens; 1 a Bearer token is required, signed or unsigned; "
        "2 a signed token is required",
    ),
    SettingSpec(
        "JsonWebTokenSecret",
        "json_web_token_secret",
        _text,
        "the shared secret that HS256/HS384/HS512 tokens are signed with",
    ),
    SettingSpec(
        "JsonWebTokenPath",
        "json_web_token_path",
        _text,
        "a PEM public key file that RS*/ES*/PS* tokens are verified with",
    ),
    SettingSpec(
        "EngineVersion",
        "engine_version",
        _text,
        "what QIX EngineVersion reports (qComponentVersion); default the ApiVersion",
    ),
    SettingSpec(
        "QixMaxMessageBytes",
        "qix_max_message_bytes",
        _int_range(1024, 1 << 30),
        "bytes, default 16777216 (16 MiB): a larger QIX WebSocket message closes its socket (1009)",
    ),
    SettingSpec(
        "QixMaxObjectsPerSession",
        "qix_max_objects_per_session",
        _int_range(1, 1_000_000),
        "default 10000: handles (fields, objects) one QIX session may hold open",
    ),
    SettingSpec(
        "QixMaxKeptSessions",
        "qix_max_kept_sessions",
        _int_range(0, 1_000_000),
        "default 1000: QIX sessions kept after their last socket (/ttl/N); past it the oldest ends",
    ),
    SettingSpec(
        "QixEngineThreads",
        "qix_engine_threads",
        _int_range(0, 1024),
        "default 0 = the logical cores (2 at least): QIX requests computed at once; more wait",
    ),
    SettingSpec(
        "QixCompression",
        "qix_compression",
        _choice(*QIX_COMPRESSION),
        "auto (default), on or off: permessage-deflate on QIX sockets whose client offers it; "
        "auto leaves it off for a client on this host that connects directly (loopback, no "
        "Forwarded or X-Forwarded-For header), where it only costs both sides CPU",
    ),
    SettingSpec(
        "PrometheusPort",
        "prometheus_port",
        _int_range(0, 65535),
        "default 0 = none: a port that serves only the Prometheus metrics (also at GET /metrics)",
    ),
    SettingSpec(
        "AllowedFolders",
        "allowed_folders",
        _absolute_paths,
        "absolute paths separated by ';', default <data-dir>/files: the folders load-script "
        "connections may point into",
    ),
    SettingSpec(
        "AppStore",
        "app_store",
        _store_url,
        "s3://bucket/prefix, default none (the data dir): apps live in that S3-compatible "
        "object store, the data dir is a cache (credentials and region from AWS_* variables)",
    ),
    SettingSpec(
        "S3Endpoint",
        "s3_endpoint",
        _http_url,
        "the object store's URL for AppStore, default AWS_ENDPOINT_URL or AWS itself",
    ),
    SettingSpec(
        "AppStoreGraceSeconds",
        "app_store_grace_seconds",
        _int_range(60),
        "seconds, default 3600: versions no pointer names, and unfinished multipart uploads, "
        "are removed from the AppStore once this old (the janitor runs every half of it)",
    ),
)

_BY_NAME = {spec.name.lower(): spec for spec in SPECS}


@dataclass(frozen=True)
class Settings:
    """Every setting of the service, with its default."""

    enable_lame_duck_health_check: int = 0
    efe_mode: int = 0
    api_version: str = "12.207.0"
    cpu_overload_threshold: float = 90.0
    cpu_overload_sample_time: int = 30
    ram_overload_threshold: float = 90.0
    max_upload_bytes: int = 1 << 30
    threads: int = 0
    memory_budget_mb: int = 0
    body_read_timeout: int = 60
    header_read_timeout: int = 10
    max_incomplete_requests_per_address: int = 64
    shutdown_timeout: int = 30
    validate_json_web_tokens: str = "0"
    json_web_token_secret: str = ""
    json_web_token_path: str = ""
    engine_version: str = ""
    qix_max_message_bytes: int = 16 << 20
    qix_max_objects_per_session: int = 10_000
    qix_max_kept_sessions: int = 1000
    qix_engine_threads: int = 0
    qix_compression: str = "auto"
    prometheus_port: int = 0
    allowed_folders: str = ""
    app_store: str = ""
    s3_endpoint: str = ""
    app_store_grace_seconds: int = 3600

    @classmethod
    def from_sources(
        cls, pairs: Iterable[str] = (), environ: Mapping[str, str] | None = None
    ) -> Settings:
        """Settings from `ASSOC_<Name>` variables, overridden by `Name=Value` pairs."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for spec in SPECS:
            text = environ.get("ASSOC_" + spec.name)
            if text is not None:
                values[spec.attr] = _parse(spec, text, "ASSOC_" + spec.name)
        for pair in pairs:
            name, sep, text = pair.partition("=")
            found = _BY_NAME.get(name.strip().lower())
            if not sep or found is None:
                known = ", ".join(s.name for s in SPECS)
                what = f"unknown setting {name.strip()!r}" if sep else f"{pair!r} is not Name=Value"
                raise Error(f"{what} (settings: {known})")
            values[found.attr] = _parse(found, text.strip(), found.name)
        settings = cls(**values)
        settings.check()
        return settings

    def replace(self, **changes: Any) -> Settings:
        """A copy with some settings changed (checked like the original)."""
        settings = dataclasses.replace(self, **changes)
        settings.check()
        return settings

    def check(self) -> None:
        """Raises assoc.Error when settings contradict each other."""
        if self.api_version not in API_VERSIONS:
            raise Error(f"ApiVersion must be one of {', '.join(API_VERSIONS)}")
        if self.validate_json_web_tokens == "2" and not (
            self.json_web_token_secret or self.json_web_token_path
        ):
            raise Error(
                "ValidateJsonWebTokens=2 needs JsonWebTokenSecret or JsonWebTokenPath "
                "to check tokens"
            )
        if self.json_web_token_path and not os.path.isfile(self.json_web_token_path):
            raise Error(f"JsonWebTokenPath {self.json_web_token_path!r} is not a readable file")

    @property
    def component_version(self) -> str:
        """The version QIX EngineVersion reports: EngineVersion, else the ApiVersion."""
        return self.engine_version or self.api_version

    def allowed_folder_list(self, data_dir: str | os.PathLike[str]) -> list[str]:
        """AllowedFolders as a list; `<data_dir>/files` when the setting is empty."""
        folders = [p.strip() for p in self.allowed_folders.split(";") if p.strip()]
        return folders or [os.path.join(os.fspath(data_dir), "files")]

    @property
    def memory_budget_bytes(self) -> int:
        """The memory budget in bytes; 0 means none."""
        return self.memory_budget_mb * 1024 * 1024

    def as_dict(self) -> dict[str, Any]:
        """Setting name to value, secrets hidden."""
        out: dict[str, Any] = {}
        for spec in SPECS:
            value = getattr(self, spec.attr)
            out[spec.name] = "***" if spec.name == "JsonWebTokenSecret" and value else value
        return out


def _parse(spec: SettingSpec, text: str, source: str) -> Any:
    try:
        return spec.parse(text)
    except ValueError as exc:
        raise Error(f"{source}={text!r}: {exc}") from None


def settings_help() -> str:
    """One line per setting: name and meaning, for `assoc serve --help`."""
    width = max(len(spec.name) for spec in SPECS)
    return "\n".join(f"  {spec.name:<{width}}  {spec.help}" for spec in SPECS)
