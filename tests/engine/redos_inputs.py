"""The ReDoS bait, shared by ``test_redos.py`` (which holds growth ratios on it) and
``benchmarks/bench_matcher.py`` (which times the matcher on the same text).

A plain module, not a test module: the benchmark imports it, and no benchmark imports a
test module (``tests/test_house_rules.py``).
"""

from __future__ import annotations

from collections.abc import Callable

EVIL_PATTERNS = [
    r"(a+)+b",
    r"^(\w+\s?)*$",
    r"(.*a){25}",
    r".*(?:.*=.*)",  # CF-2019
    r"(a+)+$",
    r"^[\s\u200c]+|[\s\u200c]+$",  # SO-2016
]
# Hostile input families, each as a function of its size in characters: the bar's inputs
# (``a``*30 + ``!``, 20k spaces, ``x=``*2500, ...) are members at one size each.
EVIL_INPUTS: dict[str, Callable[[int], str]] = {
    "a!": lambda n: "a" * n + "!",
    "a": lambda n: "a" * n,
    "spaces": lambda n: " " * n,
    "spaces-x": lambda n: " " * n + "x",  # SO-2016: spaces then a non-space
    "x=": lambda n: "x=" * (n // 2),
    "words": lambda n: "word " * (n // 5) + "!",
    "nested": lambda n: "(a+)+b " * (n // 7),
    "=a": lambda n: "=" * n + "a",
    "lines": lambda n: ("a" * 300 + "b\n") * (n // 302),
    "zwnj": lambda n: "\u200c" * n + "x",
}
SIZE = 20_000  # the smaller of the two sizes (the bar's 20k spaces)


def paste(size: int) -> str:
    """A realistic paste of ``size`` characters (the bar's is 256 KiB): log lines, a few
    real errors, long lines, unicode."""
    block = (
        "2024-01-26T05:40:23.291957186Z  INFO risingwave_ctl::common: using meta addr 1:5690\n"
        "2024-01-26T05:40:23.292539856Z  WARN risingwave_rpc_client::meta_client: Failed to "
        "connect to meta server 127.0.0.1:5690, trying again error=transport error\n"
        "django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but "
        "settings are not configured. You must either define the environment variable "
        "DJANGO_SETTINGS_MODULE or call settings.configure() before accessing settings.\n"
        + "connection refused by peer - données ünïcode " * 20
        + "\n"
    )
    return (block * (size // len(block) + 1))[:size]


def paste_256k() -> str:
    return paste(256 * 1024)
