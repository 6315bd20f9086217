"""Validators of the rule recognizers (:mod:`dptext.detect.recognizers`): a shape that
matched is an identifier only if its checksum or syntax holds."""

from __future__ import annotations

import ipaddress


def ipv4(value: str) -> bool:
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return True


def ipv6(value: str) -> bool:
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return value.count(":") >= 2


def vin(value: str) -> bool:
    """ISO 3779 check digit (position 9) - North American VINs carry it."""
    trans = dict(zip("ABCDEFGHJKLMNPRSTUVWXYZ", [1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 7, 9, 2,
                                                 3, 4, 5, 6, 7, 8, 9], strict=True))
    weights = (8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2)
    v = value.upper()
    total = sum((int(c) if c.isdigit() else trans.get(c, 0)) * w
                for c, w in zip(v, weights, strict=True))
    check = total % 11
    return v[8] == ("X" if check == 10 else str(check)) or any(c.isalpha() for c in v[:3])


def luhn(value: str) -> bool:
    digits = [int(c) for c in value if c.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0
