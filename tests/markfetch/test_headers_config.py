"""The Chrome fingerprint derived from one UA, and start-up validation of every variable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from markfetch.config import load_settings, write_roots
from markfetch.errors import ConfigError
from markfetch.headers import DEFAULT_USER_AGENT, ChromeProfile

UA = "Mozilla/5.0 ({platform}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{major}.0.0.0{mobile} Safari/537.36"


@pytest.mark.parametrize(
    ("major", "brands"),
    [
        # Values real Chrome sends (Chromium's GREASE rotation).
        (120, '"Not_A Brand";v="8", "Chromium";v="120", "Google Chrome";v="120"'),
        (124, '"Chromium";v="124", "Google Chrome";v="124", "Not-A.Brand";v="99"'),
        (130, '"Chromium";v="130", "Google Chrome";v="130", "Not?A_Brand";v="99"'),
        (131, '"Google Chrome";v="131", "Chromium";v="131", "Not_A Brand";v="24"'),
    ],
)
def test_brands_follow_the_major_version(major: int, brands: str) -> None:
    profile = ChromeProfile.from_user_agent(UA.format(platform="X11; Linux x86_64", major=major, mobile=""))
    assert profile.brands() == brands


@pytest.mark.parametrize(
    ("platform", "mobile", "expected_platform", "expected_mobile"),
    [
        ("Windows NT 10.0; Win64; x64", "", '"Windows"', "?0"),
        ("Macintosh; Intel Mac OS X 10_15_7", "", '"macOS"', "?0"),
        ("X11; Linux x86_64", "", '"Linux"', "?0"),
        ("Linux; Android 14; Pixel 8", " Mobile", '"Android"', "?1"),
        ("X11; CrOS x86_64 14541.0.0", "", '"Chrome OS"', "?0"),
    ],
)
def test_platform_and_mobile_follow_the_ua(platform, mobile, expected_platform, expected_mobile) -> None:
    ua = UA.format(platform=platform, major=131, mobile=mobile)
    headers = ChromeProfile.from_user_agent(ua).headers(accept_language="fr", encodings={"gzip", "br"})
    assert headers["User-Agent"] == ua
    assert headers["Sec-CH-UA-Platform"] == expected_platform
    assert headers["Sec-CH-UA-Mobile"] == expected_mobile
    assert headers["Accept-Language"] == "fr"
    assert headers["Accept-Encoding"] == "gzip, br"  # only what can be decoded, in Chrome's order
    assert headers["Sec-Fetch-Mode"] == "navigate" and headers["Sec-Fetch-Dest"] == "document"
    assert headers["Upgrade-Insecure-Requests"] == "1"


@pytest.mark.parametrize(
    "ua",
    [
        "curl/8.5.0",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:126.0) Gecko/20100101 Firefox/126.0",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36 Edg/125.0.0.0",
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/125.0.0.0 Safari/537.36",
        "Mozilla/5.0 (PlayStation) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36",
        "Mozilla/5.0 (X11; Linux) Chrome/125.0.0.0\r\nX-Injected: 1",
    ],
)
def test_non_chrome_user_agent_fails_at_start(ua: str) -> None:
    with pytest.raises(ConfigError, match="MARKFETCH_USER_AGENT"):
        load_settings({"MARKFETCH_USER_AGENT": ua})


def test_defaults() -> None:
    settings = load_settings({})
    assert (settings.timeout_ms, settings.max_bytes, settings.user_agent) == (
        30000,
        5000000,
        DEFAULT_USER_AGENT,
    )
    assert settings.cache_dir is None and settings.proxy is None and settings.allow_hosts == ()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MARKFETCH_TIMEOUT_MS": "abc"}, "MARKFETCH_TIMEOUT_MS='abc' is not a whole number"),
        ({"MARKFETCH_TIMEOUT_MS": "0"}, "must be above 0"),
        ({"MARKFETCH_TIMEOUT_MS": "99999999"}, "above the maximum"),
        ({"MARKFETCH_MAX_BYTES": "-5"}, "MARKFETCH_MAX_BYTES='-5' must be above 0"),
        ({"MARKFETCH_ACCEPT_LANGUAGE": "de\nX: y"}, "MARKFETCH_ACCEPT_LANGUAGE"),
        ({"MARKFETCH_ALLOW_HOSTS": "http://localhost"}, "not a host name or IP address"),
        ({"MARKFETCH_PROXY_URL": "ftp://proxy:21"}, "must be an http://, https:// or socks5://"),
        ({"MARKFETCH_CACHE_TTL": "soon"}, "MARKFETCH_CACHE_TTL='soon'"),
        ({"MARKFETCH_CACHE_TTL": "60", "MARKFETCH_CACHE_DIR": "relative/dir"}, "must be an absolute path"),
    ],
)
def test_bad_values_fail_at_start_with_the_variable_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env)
    assert message in str(info.value)


def test_allow_hosts_proxy_accept_language_and_cache(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "MARKFETCH_ALLOW_HOSTS": "localhost, 127.0.0.1,[::1],,intranet.example",
            "MARKFETCH_PROXY_URL": "http://proxy.example:3128",
            "MARKFETCH_ACCEPT_LANGUAGE": "de-DE,de;q=0.9",
            "MARKFETCH_CACHE_TTL": "600",
            "MARKFETCH_CACHE_DIR": str(tmp_path / "cache"),
        }
    )
    assert settings.allow_hosts == ("localhost", "127.0.0.1", "::1", "intranet.example")
    assert settings.proxy == "http://proxy.example:3128"
    assert settings.accept_language == "de-DE,de;q=0.9"
    assert settings.cache_ttl_s == 600 and settings.cache_dir == tmp_path / "cache"
    assert (tmp_path / "cache").is_dir()


def test_write_roots_default_and_override(tmp_path: Path) -> None:
    import tempfile

    assert write_roots({}, cwd="/somewhere") == [tempfile.gettempdir(), "/somewhere"]
    assert write_roots({"MARKFETCH_ALLOWED_WRITE_ROOTS": f"{tmp_path}{os.pathsep}/tmp"}) == [
        str(tmp_path),
        "/tmp",
    ]
    with pytest.raises(ConfigError, match="not an absolute path"):
        write_roots({"MARKFETCH_ALLOWED_WRITE_ROOTS": "relative/dir"})


def test_the_cache_cap_is_a_setting_and_the_cache_keeps_to_it(tmp_path: Path) -> None:
    from markfetch.cache import ResponseCache

    settings = load_settings(
        {
            "MARKFETCH_CACHE_TTL": "600",
            "MARKFETCH_CACHE_DIR": str(tmp_path / "c"),
            "MARKFETCH_CACHE_MAX_MB": "2",
        }
    )
    assert settings.cache_max_bytes == 2 * 1024 * 1024
    assert load_settings({}).cache_max_bytes == 256 * 1024 * 1024  # the default
    with pytest.raises(ConfigError, match="MARKFETCH_CACHE_MAX_MB='0' must be above 0"):
        load_settings({"MARKFETCH_CACHE_MAX_MB": "0"})

    now = [1_000.0]
    folder = tmp_path / "pages"
    cache = ResponseCache(folder, ttl_s=600, clock=lambda: now[0], max_bytes=50_000)
    for number in range(30):
        now[0] += 1
        cache.put(
            f"k{number:02}", url=f"https://example.com/{number}", content_type="text/html", body=b"<p>" * 3000
        )
        assert sum(p.stat().st_size for p in folder.iterdir()) <= 50_000
    assert cache.get("k29") is not None and cache.get("k00") is None
    now[0] += 601  # all expired: a later process's first write clears them
    ResponseCache(folder, ttl_s=600, clock=lambda: now[0], max_bytes=50_000).put(
        "new", url="https://example.com/new", content_type="text/html", body=b"x"
    )
    assert [p.name for p in folder.iterdir()] == ["new.cache"]
