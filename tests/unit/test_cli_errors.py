"""One error base: every twinnet error class derives from TwinnetError, and `twinnet` turns
TwinnetError, p4switch's errors, ValueError and OSError into one line and exit status 2."""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil

import pytest

from emulation import cli
from emulation.card_vectors import VectorError
from emulation.network import NetworkError
from p4switch.errors import EntryError, P4CompileError, P4SwitchError, PacketError
from topologies.errors import TwinnetError
from topologies.model import TopologyError

PARTS = ("topologies", "controller", "emulation", "p4src")


def twinnet_exception_classes() -> list[type[BaseException]]:
    """Every exception class defined in a module of twinnet's parts (found by importing them all)."""
    found = []
    for part in PARTS:
        package = importlib.import_module(part)
        for info in pkgutil.walk_packages(package.__path__, f"{part}."):
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if (
                    inspect.isclass(value)
                    and issubclass(value, BaseException)
                    and value.__module__ == info.name
                ):
                    found.append(value)
    return found


def test_every_twinnet_error_derives_from_the_base() -> None:
    classes = twinnet_exception_classes()
    outside = [f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, TwinnetError)]
    assert not outside
    assert len(classes) > 20  # the walk did find the parts' modules


def test_p4switch_errors_share_their_own_base() -> None:
    assert all(issubclass(c, P4SwitchError) for c in (P4CompileError, EntryError, PacketError))
    assert not issubclass(P4SwitchError, TwinnetError)


def run_raising(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> int:
    """`twinnet topo ...` with the sub-command's main replaced by one that raises `error`."""

    def failing_main(args: argparse.Namespace) -> int:
        raise error

    module = importlib.import_module(cli.SUBCOMMANDS["topo"][0])
    monkeypatch.setattr(module, "main", failing_main)
    return cli.main(["topo", "fattree", "--k", "2", "--n", "2"])


ONE_LINE_ERRORS = [
    pytest.param(lambda: NetworkError("a"), id="runtime-based"),
    pytest.param(lambda: TopologyError("b"), id="value-based"),
    pytest.param(lambda: VectorError("c"), id="assert-based"),
    pytest.param(lambda: P4CompileError("card.p4", 3, 1, "d"), id="p4switch"),
    pytest.param(lambda: ValueError("e"), id="ValueError"),
    pytest.param(lambda: OSError("f"), id="OSError"),
]


@pytest.mark.parametrize("make_error", ONE_LINE_ERRORS)
def test_the_cli_prints_one_line_and_exits_2(monkeypatch, capsys, make_error) -> None:
    error = make_error()
    assert run_raising(monkeypatch, error) == 2
    assert capsys.readouterr().err == f"twinnet topo: error: {error}\n"


def test_other_exceptions_are_not_hidden(monkeypatch) -> None:
    with pytest.raises(TypeError):
        run_raising(monkeypatch, TypeError("a bug stays a traceback"))


def test_a_real_bad_input_still_reads_as_before(capsys) -> None:
    """`twinnet cost --nodes 1`: the cost model's own message, behind the command's name."""
    from topologies.cost import CostModelError, check_nodes

    with pytest.raises(CostModelError) as expected:
        check_nodes(1)
    assert cli.main(["cost", "--nodes", "1"]) == 2
    assert capsys.readouterr().err == f"twinnet cost: error: {expected.value}\n"
