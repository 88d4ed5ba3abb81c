"""Host and card names and addresses derive from the PE index, and invert exactly."""

import pytest

from topologies.addressing import card_name, host_ip, host_mac, host_name, pe_of_ip, pe_of_mac


@pytest.mark.parametrize("pe", [0, 1, 254, 255, 256, 65535, 2**20])
def test_addresses_round_trip(pe: int) -> None:
    assert pe_of_ip(host_ip(pe)) == pe
    assert pe_of_mac(host_mac(pe)) == pe
    assert host_name(pe) == f"h{pe}"


def test_addresses_are_distinct_over_a_large_network() -> None:
    pes = range(4096)
    assert len({host_ip(pe) for pe in pes}) == 4096
    assert len({host_mac(pe) for pe in pes}) == 4096


def test_bad_inputs_name_the_problem() -> None:
    with pytest.raises(ValueError, match="PE index -1"):
        host_ip(-1)
    with pytest.raises(ValueError, match="not in the host network"):
        pe_of_ip("192.0.2.1")
    with pytest.raises(ValueError, match="card id"):
        card_name(-3)
