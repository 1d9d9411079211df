"""Make text that came from input (paths, op and host names, error messages) safe to print.

A trace can hold anything: ANSI escapes (``"\\u001b[2J"`` clears the screen), newlines that
split a one-line error in two, lone surrogates that no encoder accepts, and text that rich
would read as markup (``run[/]x.json``). Everything from input goes through one of these:

    clean("a\\x1b[2Jb")        # 'a␛[2Jb'   one visible character per control character
    escaped("bad\\nname.json")  # 'bad\\\\nname.json'  backslash escapes, for one-line messages
    text(path, style="bold")   # a rich Text (never parsed as markup) of clean(path)
    safe_text(line)            # a rich Text with its characters cleaned, styles kept

``clean`` keeps the length (rich spans stay aligned); ``escaped`` is for plain messages.
"""

from __future__ import annotations

import re

from rich.text import Text

# C0 controls -> Unicode "control pictures" (U+2400 + code); DEL -> U+2421; C1 -> U+FFFD
_PICTURES = {c: 0x2400 + c for c in range(0x20)}
_PICTURES[0x7F] = 0x2421
_PICTURES.update({c: 0xFFFD for c in range(0x80, 0xA0)})
_PICTURES.update({c: 0xFFFD for c in range(0xD800, 0xE000)})  # lone surrogates
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def clean(value: object) -> str:
    """``str(value)`` with control characters and lone surrogates made visible, one
    character each."""
    s = str(value)
    return s.translate(_PICTURES) if _UNSAFE.search(s) else s


def escaped(value: object) -> str:
    """``str(value)`` with control characters and lone surrogates as backslash escapes
    (``\\n``, ``\\x1b``, ``\\udcff``): one line, ASCII-safe for what was unsafe."""
    s = str(value)
    if not _UNSAFE.search(s):
        return s
    return _UNSAFE.sub(
        lambda m: m.group().encode("unicode_escape", "backslashreplace").decode("ascii"), s
    )


def text(value: object, style: str = "") -> Text:
    """A rich Text of ``clean(value)``: shown as is, never parsed as markup."""
    return Text(clean(value), style=style)


def safe_text(t: Text) -> Text:
    """``t`` with its characters cleaned; styles and spans kept (same length)."""
    plain = t.plain
    if not _UNSAFE.search(plain):
        return t
    return Text(
        clean(plain),
        style=t.style,
        justify=t.justify,
        overflow=t.overflow,
        no_wrap=t.no_wrap,
        end=t.end,
        spans=list(t.spans),
    )
