"""Names and addresses of hosts (PEs) and cards, derived from their indices.

This is the one function family every part of twinnet uses to go from a PE
index (docs/contracts.md numbering) to a Mininet host name, an IPv4 address
and a MAC address, and from a card id to a Mininet switch name.

>>> host_name(5), host_ip(5), host_mac(5)
('h5', '10.0.0.6', '02:00:00:00:00:06')
>>> pe_of_ip('10.0.1.0')
255
>>> card_name(12)
'c12'
"""

from __future__ import annotations

import ipaddress

#: Hosts live in 10.0.0.0/8; PE p has address 10.0.0.0 + p + 1 (10.0.0.0 is never a host).
HOST_NETWORK = ipaddress.IPv4Network("10.0.0.0/8")
HOST_PREFIX_LEN = HOST_NETWORK.prefixlen
MAX_PES = HOST_NETWORK.num_addresses - 2


def _check_pe(pe: int) -> int:
    if not 0 <= pe < MAX_PES:
        raise ValueError(f"PE index {pe} out of range: 0 <= pe < {MAX_PES}")
    return pe


def host_name(pe: int) -> str:
    """Mininet host name of PE `pe`."""
    return f"h{_check_pe(pe)}"


def host_ip(pe: int) -> str:
    """IPv4 address of PE `pe` (10.0.0.0 + pe + 1)."""
    return str(HOST_NETWORK.network_address + _check_pe(pe) + 1)


def host_mac(pe: int) -> str:
    """Locally administered MAC of PE `pe`: 02:00 followed by pe + 1 in 32 bits."""
    value = _check_pe(pe) + 1
    return "02:00:" + ":".join(f"{(value >> shift) & 0xFF:02x}" for shift in (24, 16, 8, 0))


def pe_of_ip(ip: str) -> int:
    """Inverse of host_ip; raises ValueError for an address that is no PE's."""
    address = ipaddress.IPv4Address(ip)
    if address not in HOST_NETWORK:
        raise ValueError(f"{ip} is not in the host network {HOST_NETWORK}")
    return _check_pe(int(address) - int(HOST_NETWORK.network_address) - 1)


def pe_of_mac(mac: str) -> int:
    """Inverse of host_mac."""
    octets = [int(part, 16) for part in mac.split(":")]
    if len(octets) != 6 or octets[:2] != [2, 0]:
        raise ValueError(f"{mac} is not a twinnet host MAC (02:00:xx:xx:xx:xx)")
    return _check_pe(int.from_bytes(bytes(octets[2:]), "big") - 1)


def interface_name(node: str, port: int) -> str:
    """Mininet interface of port `port` of card or host `node`: interface_name("c7", 3) == "c7-eth3"."""
    return f"{node}-eth{port}"


def card_name(card_id: int) -> str:
    """Mininet switch name of card `card_id`; its interfaces are c<id>-eth<port>."""
    if card_id < 0:
        raise ValueError(f"card id must be >= 0, got {card_id}")
    return f"c{card_id}"
