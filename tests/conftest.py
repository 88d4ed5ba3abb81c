"""Shared pytest set-up: tests marked ``root`` need root, network namespaces and Mininet.

They run in CI (which is root). Elsewhere, without root, they are skipped with the reason.
"""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.geteuid() == 0:
        return
    if os.environ.get("CI") == "true":
        raise pytest.UsageError("CI must run as root: the emulation tests are part of the suite")
    skip = pytest.mark.skip(reason="needs root (network namespaces, Mininet): run scripts/test.sh with sudo")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def card_program():
    """p4src/card.p4 compiled by the embedded target, or a skip naming why there is none."""
    from emulation.card_vectors import CARD_PROGRAM, compile_card_or_reason

    compiled, reason = compile_card_or_reason(CARD_PROGRAM)
    if compiled is None:
        pytest.skip(reason)
    return compiled
