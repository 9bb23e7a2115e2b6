"""Secret-named assignments: ``password=``, ``"dbPassword": "…"``, ``this.secretKey = '…'``, ``PGPASSWORD=…``.

A candidate is a name holding one of the secret words, a separator and a value. Which names are secret is decided on
the name alone (``name_kind``); the value must be a literal (``literal.literal_secret``)."""

from __future__ import annotations

from collections.abc import Iterator

from pi_compact.redact.finding import Finding
from pi_compact.redact.literal import literal_secret, passphrase, words
from pi_compact.redact.patterns import compile_pattern

_ASSIGNMENT = compile_pattern(
    r"(?P<name>[A-Za-z0-9_.$@-]*?(?i:pass|pwd|secret|token|key|auth|credential)[A-Za-z0-9_.-]*)"
    r"(?P<close>[\"'`]?)[ \t]*(?P<sep>:=|=>|\?=|=|:)[ \t]*"
    r"(?:\"(?P<dq>(?:[^\"\\\n]|\\.)*)\"|'(?P<sq>(?:[^'\\\n]|\\.)*)'|`(?P<bq>[^`\n]*)`"
    r"|(?P<bare>[^\s\"'`,;()\[\]{}<>\\]+))"
)
_NAME_WORDS = compile_pattern(r"[A-Z]*[a-z]+|[A-Z]+|[0-9]+")
# Trailing words that do not change what a name holds: DB_PASSWORD_PROD, SECRET_KEY_BASE, api_key_2.
_NAME_SUFFIXES = words(
    "prod production dev development staging stage test testing local live old new primary secondary value "
    "base b64 base64 str string raw enc encrypted"
)
_PASSWORD_WORDS = ("password", "passwd", "passphrase")
_SECRET_WORDS = (
    "secret",
    "token",
    "apikey",
    "accesskey",
    "privatekey",
    "secretkey",
    "authkey",
    "signingkey",
    "encryptionkey",
    "masterkey",
    "credential",
    "credentials",
)
_KEY_QUALIFIERS = words("api secret private access auth signing encryption master account shared client app license")
_NOT_SECRET_NAMES = frozenset({"pwd", "oldpwd"})  # the shell's working directories


def _name_kind(name: str) -> str | None:
    """``password`` or ``secret`` when the name says it holds one (its last word does), else None."""
    bare = name.lstrip("$@._-")
    if bare.lower() in _NOT_SECRET_NAMES:
        return None
    words = [m.group() for m in _NAME_WORDS.finditer(bare)]
    while len(words) > 1 and (words[-1].isdigit() or words[-1].lower() in _NAME_SUFFIXES):
        words.pop()
    if not words:
        return None
    last = words[-1].lower()
    if last.endswith(_PASSWORD_WORDS):  # PGPASSWORD, dbPassword, DB_PASSWORD
        return "password"
    if last in ("pass", "pwd") or (words[-1].isupper() and last.endswith(("pass", "pwd"))):  # DB_PASS, SMTPPASS
        return "password"
    if last.endswith(_SECRET_WORDS) or last == "auth":  # GITHUBTOKEN, accessToken, client_secret, "auth"
        return "secret"
    if last == "key" and len(words) > 1 and words[-2].lower() in _KEY_QUALIFIERS:  # secretKey, AccountKey
        return "secret"
    return None


_VALUE_GROUPS = ("dq", "sq", "bq", "bare")


def assignments(text: str) -> Iterator[Finding]:
    for match in _ASSIGNMENT.finditer(text):
        name = match.group("name")
        if text.endswith("://", 0, match.start()):  # a URL's user name: the URL rule masks its password
            continue
        kind = _name_kind(name)
        if kind is None:
            continue
        group = next(g for g in _VALUE_GROUPS if match.group(g) is not None)
        value = match.group(group)
        start, end = match.span(_ASSIGNMENT.groupindex[group])
        quoted = group != "bare"
        if not quoted:
            if end < len(text) and text[end] in "([{<":  # a call or an index: code
                continue
            if name.lower().endswith("passphrase") and match.group("sep") in (":", "="):
                # An unquoted passphrase (YAML, INI) runs to the end of the line.
                line_end = text.find("\n", end, end + 400)
                rest = text[end : line_end if line_end >= 0 else min(len(text), end + 400)].rstrip()
                if rest.strip() and not rest.lstrip().startswith("#"):
                    value, end, quoted = value + rest, end + len(rest), True
        if " " in value or "\t" in value:
            if kind != "password" and not name.lower().endswith("secret"):
                continue
            if not passphrase(value):
                continue
        env_style = not quoted and match.group("sep") == "=" and name.upper() == name and not match.group("close")
        if not literal_secret(value, quoted=quoted, env_style=env_style):
            continue
        yield Finding(kind, start, end)
