"""Make text that came from input (paths, op and host names, error messages) safe to show.

A trace can hold anything: ANSI escapes (``"\\u001b[2J"`` clears the screen), NUL, newlines
that split a one-line error in two, lone surrogates that no encoder accepts (a 0-byte HTML
page), bidirectional overrides (U+202E shows ``exe.txt`` as ``txt.exe``) and text that rich
would read as markup (``run[/]x.json``). Every string from input reaches the reader through
exactly one of these, one per medium:

    clean("a\\x1b[2Jb")        # 'a␛[2Jb'   the one cleaning step, for every medium
    text(path, style="bold")   # terminal: a rich Text of clean(path), never read as markup
    safe_text(line)            # terminal: a rich Text with its characters cleaned, styles kept
    html_text(name)            # HTML: clean() then escaped for text and attribute values
    escaped("bad\\nname.json")  # 'bad\\\\nname.json'  backslash escapes, for one-line messages

``clean`` keeps the length (rich spans stay aligned) and its output is always encodable as
UTF-8, has no control character, no bidi control and no Unicode noncharacter.
"""

from __future__ import annotations

import html
import re

from rich.text import Text

# What is never shown raw: C0 and C1 controls, DEL, lone surrogates, line/paragraph
# separators, the bidi controls (ALM, LRM, RLM, LRE..RLO, LRI..PDI) and noncharacters.
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
    "\ufdd0-\ufdef\ufffe\uffff"
    + "".join(f"{chr(p * 0x10000 + 0xFFFE)}{chr(p * 0x10000 + 0xFFFF)}" for p in range(1, 17))
    + "]"
)
_ESCAPE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")  # what breaks a one-line message


def _picture(m: re.Match[str]) -> str:
    """C0 controls -> their Unicode "control picture" (U+2400 + code), DEL -> U+2421,
    anything else -> U+FFFD."""
    c = ord(m.group())
    return chr(0x2400 + c) if c < 0x20 else "\u2421" if c == 0x7F else "\ufffd"


def clean(value: object) -> str:
    """``str(value)`` with every unsafe character made visible, one character for one."""
    s = str(value)
    return _UNSAFE.sub(_picture, s) if _UNSAFE.search(s) else s


def escaped(value: object) -> str:
    """``str(value)`` with control characters and lone surrogates as backslash escapes
    (``\\n``, ``\\x1b``, ``\\udcff``) and bidi controls made visible: one line, encodable."""
    s = str(value)
    if _ESCAPE.search(s):
        s = _ESCAPE.sub(
            lambda m: m.group().encode("unicode_escape", "backslashreplace").decode("ascii"), s
        )
    return clean(s)


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


def html_text(value: object) -> str:
    """``clean(value)`` escaped for HTML text and (quoted) attribute values."""
    return html.escape(clean(value), quote=True)
