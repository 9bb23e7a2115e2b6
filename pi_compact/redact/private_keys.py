"""Private keys: PEM, OpenSSH, PGP and SSH2 blocks (a header to its end line, or to the end of the base64 after a
header whose end line is missing), and how the base64 of a key starts (for a PEM body pasted without its header)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from pi_compact.redact.finding import Finding
from pi_compact.redact.patterns import compile_pattern

_BEGIN_KEY = compile_pattern(r"-{4,5} ?BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)? ?-{4,5}")
_END_KEY = compile_pattern(r"-{4,5} ?END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)? ?-{4,5}")
NEWLINE = r"(?:\r?\n|\\r?\\n)"  # a line break, or one written as a JSON escape
# A line of a key's base64, also inside a string literal ("MIIE…\\n" +) or indented (a YAML block).
_BODY_LINE = r"[ \t]*(?:\+[ \t]*)?[\"']?[A-Za-z0-9+/=]+(?:\\n)?[\"']?[ \t]*[,+]?[ \t]*"
# The body after a header whose end line is missing: header lines (Proc-Type, Comment), then base64 lines.
_KEY_BODY = compile_pattern(
    rf"^(?:\\n)?[\"']?[ \t]*[,+]?(?:[ \t]*{NEWLINE})*(?:[A-Za-z][A-Za-z-]*:[^\n\\]*{NEWLINE})*"
    rf"(?:{_BODY_LINE}(?:{NEWLINE}|$))*"
)
# The base64 lines before an end line whose header is not in the text (the text starts inside the key).
_KEY_TAIL = compile_pattern(rf"(?:{_BODY_LINE}{NEWLINE})+[ \t]*[\"']?$")
_KEY_SPAN = 20_000  # characters from a header to its end line, at most


def private_key_blocks(text: str) -> Iterator[Finding]:
    begins = [(m.start(), m.end()) for m in _BEGIN_KEY.finditer(text)]
    ends = [(m.start(), m.end()) for m in _END_KEY.finditer(text)] if "END" in text else []
    blocks = list(_blocks(text, begins, ends))
    for start, end in blocks:
        yield Finding("private-key", start, end)
    # An end line no block reached: the base64 lines right before it are the end of a key whose start is not in
    # the text. Each stretch of text before an end line is read once.
    k = 0
    boundary = 0  # where the stretch read for the next end line may start
    for end_start, end_end in ends:
        while k < len(blocks) and blocks[k][1] <= end_start:
            boundary = max(boundary, blocks[k][1])
            k += 1
        if k < len(blocks) and blocks[k][0] < end_end:  # inside a block
            continue
        tail = _KEY_TAIL.search(text[max(boundary, end_start - _KEY_SPAN) : end_start])
        if tail is not None and tail.end() - tail.start() >= 16:
            yield Finding("private-key", max(boundary, end_start - _KEY_SPAN) + tail.start(), end_end)
        boundary = end_end


def _blocks(text: str, begins: list[tuple[int, int]], ends: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    end_starts = [start for start, _ in ends]
    covered = 0
    for i, (start, header_end) in enumerate(begins):
        if start < covered:
            continue
        limit = min(header_end + _KEY_SPAN, begins[i + 1][0] if i + 1 < len(begins) else len(text))
        k = bisect_left(end_starts, header_end)
        if k < len(ends) and ends[k][0] <= limit:
            covered = ends[k][1]
            yield start, covered
            continue
        body = _KEY_BODY.search(text[header_end:limit])  # regions end at the next header: each is read once
        if body is not None and body.end() >= 16:
            covered = header_end + body.end()
            yield start, covered


def pem_body_prefixes() -> str:
    """How the base64 of a private key starts, by format (the DER or OpenSSH header, before any key bytes)."""
    b64 = "[A-Za-z0-9+/]"
    return "|".join(
        (
            f"MII{b64}{{3}}IBAAKC",  # PKCS#1 RSA
            f"MII{b64}{{3}}IBADANBgkqhkiG9w0BAQEFAAS",  # PKCS#8 RSA
            f"MIG{b64}AgEAMBMGByqGSM49AgEG",  # PKCS#8 EC
            f"MII{b64}{{5}}BgkqhkiG9w0BBQ0w",  # PKCS#8 encrypted
            "MHcCAQEEI",  # SEC1 EC (P-256)
            "MIGkAgEBBD",  # SEC1 EC (P-384)
            "MC4CAQAwBQYDK2VwBCIEI",  # PKCS#8 Ed25519
            "b3BlbnNzaC1rZXktdjE",  # OpenSSH ("openssh-key-v1")
        )
    )
