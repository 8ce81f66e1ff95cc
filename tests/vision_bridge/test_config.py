"""Settings from the environment: required values, defaults, every bad value reported at once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vision_bridge.config import default_cache_dir, load_settings
from vision_bridge.errors import ConfigError

API = {"VISION_API_BASE_URL": "https://api.example.com/v1", "VISION_API_KEY": "k", "VISION_MODEL": "m"}


def load(env: dict[str, str], tmp_path: Path):
    return load_settings(env, cwd=str(tmp_path), tempdir=str(tmp_path), home=tmp_path, platform="linux")


def test_defaults_for_an_openai_setup(tmp_path: Path) -> None:
    settings = load(API, tmp_path)
    assert settings.backend == "openai"
    assert (settings.max_tokens, settings.timeout_s, settings.cache_ttl_s, settings.max_retries) == (
        4096,
        60.0,
        3600,
        2,
    )
    assert settings.cache_dir == tmp_path / ".cache" / "vision-bridge"
    assert settings.allowed_paths == (os.path.realpath(tmp_path),)
    assert settings.allow_hosts == ()
    assert settings.max_image_side is None
    assert "k" not in settings.describe().split()  # the key never reaches the log


def test_all_three_api_values_are_required_and_named_together(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load({}, tmp_path)
    message = str(info.value)
    for name in ("VISION_API_BASE_URL", "VISION_API_KEY", "VISION_MODEL", "VISION_BACKEND=tesseract"):
        assert name in message


def test_one_missing_value_is_named_alone(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"VISION_MODEL is not set"):
        load({**API, "VISION_MODEL": " "}, tmp_path)


def test_every_bad_value_is_reported_in_one_error(tmp_path: Path) -> None:
    env = {
        **API,
        "VISION_API_BASE_URL": "ftp://x",
        "VISION_API_FORMAT": "gemini",
        "VISION_MAX_TOKENS": "lots",
        "VISION_TIMEOUT": "0",
        "VISION_MAX_RETRIES": "-1",
        "VISION_ALLOWED_PATHS": str(tmp_path / "missing"),
    }
    with pytest.raises(ConfigError) as info:
        load(env, tmp_path)
    lines = str(info.value).splitlines()
    assert len(lines) == 6
    text = str(info.value)
    for fragment in (
        "not an http(s) URL",
        "'gemini'",
        "'lots' is not a whole number",
        "VISION_TIMEOUT='0'",
        "VISION_MAX_RETRIES='-1'",
        "does not exist",
    ):
        assert fragment in text


def test_anthropic_format_and_tesseract_backend(tmp_path: Path) -> None:
    assert load({**API, "VISION_API_FORMAT": "Anthropic"}, tmp_path).backend == "anthropic"
    offline = load({"VISION_BACKEND": "tesseract"}, tmp_path)
    assert offline.backend == "tesseract"
    assert not offline.uses_api
    with pytest.raises(ConfigError, match="VISION_BACKEND='gpu'"):
        load({"VISION_BACKEND": "gpu"}, tmp_path)


def test_cache_ttl_zero_or_negative_disables_the_cache(tmp_path: Path) -> None:
    assert not load({**API, "VISION_CACHE_TTL": "0"}, tmp_path).cache_enabled
    assert not load({**API, "VISION_CACHE_TTL": "-5"}, tmp_path).cache_enabled
    assert load({**API, "VISION_CACHE_TTL": "1"}, tmp_path).cache_ttl_s == 1


def test_allowed_paths_hosts_and_side_cap(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    env = {
        **API,
        "VISION_ALLOWED_PATHS": f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}",
        "VISION_ALLOW_HOSTS": "127.0.0.1, images.local ,",
        "VISION_MAX_IMAGE_SIDE": "2048",
        "VISION_TIMEOUT": "2.5",
    }
    settings = load(env, tmp_path)
    assert settings.allowed_paths == (os.path.realpath(tmp_path / "a"), os.path.realpath(tmp_path / "b"))
    assert settings.allow_hosts == ("127.0.0.1", "images.local")
    assert settings.max_image_side == 2048
    assert settings.timeout_s == 2.5


def test_default_cache_dir_per_platform(tmp_path: Path) -> None:
    assert (
        default_cache_dir({}, platform="darwin", home=tmp_path) == tmp_path / "Library/Caches/vision-bridge"
    )
    assert default_cache_dir({"LOCALAPPDATA": "C:/L"}, platform="win32", home=tmp_path) == Path(
        "C:/L/vision-bridge/Cache"
    )
    assert default_cache_dir({"XDG_CACHE_HOME": "/x"}, platform="linux", home=tmp_path) == Path(
        "/x/vision-bridge"
    )
    # A relative XDG_CACHE_HOME is invalid by the spec and ignored.
    assert default_cache_dir({"XDG_CACHE_HOME": "rel"}, platform="linux", home=tmp_path) == (
        tmp_path / ".cache/vision-bridge"
    )


def test_a_server_started_in_the_filesystem_root_defaults_to_home_not_the_whole_disk(tmp_path: Path) -> None:
    root = os.path.abspath(os.sep)
    home = tmp_path / "home"
    home.mkdir()
    settings = load_settings(API, cwd=root, tempdir=str(tmp_path), home=home, platform="linux")
    assert settings.allowed_paths == (os.path.realpath(home), os.path.realpath(tmp_path))
