"""People's names as the products record them: which characters a screen draws as nothing.

Pure (no I/O): the table's login (controller/web/auth.py) and the jackpot controller's audited
commands (jackpot/parameters.py) refuse a name holding one, so a name cannot show blank nor
pass for another person's (issue 26, issue 27).
"""

from __future__ import annotations

__all__ = ["INVISIBLE", "invisible"]

INVISIBLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
    (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)  # fmt: skip
"""Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt, 15.0): characters a
screen draws as nothing. Python counts four of them letters (the Hangul fillers U+115F,
U+1160, U+3164, U+FFA0), so a name of them once passed as a name that shows blank."""


def invisible(char: str) -> bool:
    """Whether ``char`` is drawn as nothing (Default_Ignorable_Code_Point).

    >>> invisible("\N{HANGUL FILLER}"), invisible("\N{ZERO WIDTH SPACE}"), invisible("A")
    (True, True, False)
    """
    code = ord(char)
    return any(low <= code <= high for low, high in INVISIBLE)
