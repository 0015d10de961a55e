"""Bytes of an uploaded or read file → text: which encoding it is in, and refusing what is not
text at all (archives, images, binary data, files that mix encodings)."""

from __future__ import annotations

import codecs
import unicodedata

from app.inputs.characters import check_characters
from app.inputs.errors import InputError, listing

_MAGIC = (
    (b"PK\x03\x04", "a ZIP archive (an .xlsx/.docx file?); save the sheet as CSV"),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\xd0\xcf\x11\xe0", "an old Office document (.xls/.doc?); save the sheet as CSV"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"SQLite format 3", "an SQLite database"),
)


def decode_bytes(data: bytes, encoding: str | None = None) -> tuple[str, str]:
    """Bytes → (text, encoding name). Tries UTF-8 (with or without BOM), UTF-16, then cp1252;
    an explicit ``encoding`` decodes the whole file in that one encoding instead.

    UTF-8 is checked line by line: a file whose UTF-8 lines hold non-ASCII text but where some
    lines are not UTF-8 mixes encodings, and is refused with those line numbers, because reading
    it in any one encoding would garble the good lines. Only a file with no non-ASCII UTF-8 line
    is read as cp1252 (its ASCII lines read the same either way).

    Raises ``InputError`` for binary data, text in none of these encodings, or characters that
    are not text (``check_characters``).
    """
    for magic, what in _MAGIC:
        if data.startswith(magic):
            raise InputError(f"this is not a text file: it looks like {what}")
    if encoding is not None:
        return _decode_as(data, encoding), encoding
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = None
    # UTF-16 without a BOM is often valid UTF-8 full of NULs, so NULs send it on to the next test.
    if text is not None and "\x00" not in text:
        return _reject_binary(text, "utf-8"), "utf-8"
    utf16 = _utf16_codec(data)
    if utf16:
        try:
            return _reject_binary(data.decode(utf16), "utf-16"), "utf-16"
        except UnicodeDecodeError:
            raise InputError("the file looks like UTF-16 text but does not decode as it") from None
    if text is not None:  # UTF-8 text with a stray NUL: named by line, as in pasted text
        return _reject_binary(text, "utf-8"), "utf-8"
    if b"\x00" in data:
        raise InputError("this looks like a binary file (it contains NUL bytes), not text")
    _refuse_mixed_utf8(data)
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        raise InputError(
            "could not read the file as text: it is not UTF-8, UTF-16 or Windows-1252 "
            "(cp1252). Save it as UTF-8 and try again."
        ) from None
    return _reject_binary(text, "cp1252"), "cp1252"


def _decode_as(data: bytes, encoding: str) -> str:
    """The whole file in the encoding its owner named (``--encoding``), strictly."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise InputError(
            f"unknown encoding {encoding!r}: name one Python knows (utf-8, cp1252, latin-1, "
            "utf-16, shift_jis, …)"
        ) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].decode(encoding, "replace").count("\n") + 1
        raise InputError(
            f"line {line} is not valid {encoding} ({exc.reason}); the whole file must be in the "
            "one encoding named"
        ) from None
    return _reject_binary(text.removeprefix("\ufeff"), encoding)


def _refuse_mixed_utf8(data: bytes) -> None:
    """Refuse a file that is UTF-8 in some lines and not in others (see ``decode_bytes``)."""
    bad_lines, utf8_text = [], data.startswith(codecs.BOM_UTF8)
    for number, line in enumerate(data.split(b"\n"), 1):
        if line.isascii():
            continue
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            bad_lines.append(str(number))
        else:
            utf8_text = True
    if utf8_text and bad_lines:
        which = (
            f"line {bad_lines[0]} is" if len(bad_lines) == 1 else f"lines {listing(bad_lines)} are"
        )
        raise InputError(
            f"the file mixes encodings: {which} not UTF-8 while the other lines are, and "
            "reading it in any one encoding would garble the rest. Fix those lines and save the "
            "file as UTF-8, or name the encoding of the whole file (--encoding on the command "
            "line)."
        )


def _utf16_codec(data: bytes) -> str | None:
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    # Without a BOM, mostly-ASCII UTF-16 has a NUL in every other byte.
    sample = data[:4096]
    if len(sample) >= 4 and len(data) % 2 == 0:
        odd_nuls = sample[1::2].count(0) / (len(sample) // 2)
        even_nuls = sample[0::2].count(0) / (len(sample) // 2)
        if odd_nuls > 0.6 and even_nuls < 0.1:
            return "utf-16-le"
        if even_nuls > 0.6 and odd_nuls < 0.1:
            return "utf-16-be"
    return None


def _reject_binary(text: str, encoding: str) -> str:
    controls = sum(
        1
        for char in text[:200_000]
        if unicodedata.category(char) == "Cc" and char not in "\t\n\v\f\r"
    )
    if controls > max(2, len(text[:200_000]) // 100):
        raise InputError(
            f"this does not look like a text file (it decodes as {encoding} but is full of "
            "control characters); upload CSV, JSONL, JSON or TXT"
        )
    check_characters(text)
    return text
