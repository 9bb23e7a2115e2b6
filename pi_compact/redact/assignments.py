"""Secret-named assignments: ``password=``, ``"dbPassword": "…"``, ``this.secretKey = '…'``, ``PGPASSWORD=…``.

A candidate is a name holding one of the secret words, a separator and a value. Which names are secret is decided on
the name alone (``name_kind``); the value must be a literal (``literal.literal_secret``)."""

from __future__ import annotations

from collections.abc import Iterator

from pi_compact.redact.finding import Finding
from pi_compact.redact.literal import assigned_secret, passphrase, words
from pi_compact.redact.patterns import compile_pattern

_ASSIGNMENT = compile_pattern(
    r"(?P<name>[A-Za-z0-9_.$@-]*?(?i:pass|pwd|secret|token|key|auth|credential)[A-Za-z0-9_.-]*)"
    r"(?P<close>[\"'`]?)[ \t]*(?P<sep>:=|=>|\?=|=|:)[ \t]*"
    r"(?:\"(?P<dq>(?:[^\"\\\n]|\\.)*)\"|'(?P<sq>(?:[^'\\\n]|\\.)*)'|`(?P<bq>[^`\n]*)`"
    r"|(?P<brace>\{[^\s{}\"'`]{1,64}\})|(?P<bare>[^\s\"'`,;()\[\]{}<>\\]+))"
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


_VALUE_GROUPS = ("dq", "sq", "bq", "brace", "bare")
# What may come before an assignment that starts a line of a config file, an env file or a header.
_LINE_LEAD = compile_pattern(r"^[ \t]*(?:(?:- |export |set |setx |ENV |declare -x |readonly )[ \t]*)?$")
_LOOK_BACK = 48  # characters before an assignment read to tell whether it starts a line


_HEADER_FLAG = compile_pattern(r"(?:^|[ \t])(?:-H|--header)[ \t]+[\"']?$")  # curl -H 'X-Api-Key: …'


def _after_header_flag(text: str, start: int) -> bool:
    return _HEADER_FLAG.search(text[max(0, start - 12) : start]) is not None


def _starts_line(text: str, start: int) -> bool:
    low = max(0, start - _LOOK_BACK)
    newline = text.rfind("\n", low, start)
    if newline < 0 and low > 0:
        return False
    return _LINE_LEAD.search(text[newline + 1 : start]) is not None


def _rest_of_line(text: str, end: int, style: str) -> str:
    """What follows a bare value on its line, up to a comment (and, in a shell, a command separator)."""
    line_end = text.find("\n", end, end + 400)
    rest = text[end : line_end if line_end >= 0 else min(len(text), end + 400)]
    for stop in (" #", "\t#") + ((";", "&", "|", "`") if style == "env" else ()):
        cut = rest.find(stop)
        if cut >= 0:
            rest = rest[:cut]
    return rest.rstrip().rstrip("\r")


_XML_ELEMENT = compile_pattern(r"<(?P<name>[A-Za-z_][A-Za-z0-9_.:-]{0,64})>(?P<value>[^<>\n]{1,256})</")
_KEY_VALUE = compile_pattern(
    r"(?i:key|name)=\"(?P<name>[A-Za-z0-9_.:-]{1,64})\"[ \t]+(?i:value)=\"(?P<value>[^\"\n]{1,256})\""
)  # .NET's <add key="ApiSecret" value="…" />


def config_elements(text: str) -> Iterator[Finding]:
    """``<password>…</password>`` (XML, Maven's settings.xml) and ``<add key="…Secret" value="…" />``."""
    for pattern in (_XML_ELEMENT, _KEY_VALUE):
        for match in pattern.finditer(text):
            kind = _name_kind(match.group("name"))
            if kind is not None and assigned_secret(match.group("value"), kind=kind, style="quoted"):
                yield Finding(kind, *match.span(pattern.groupindex["value"]))


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
        sep = match.group("sep")
        if group not in ("bare", "brace") or (sep == ":" and _after_header_flag(text, match.start())):
            style = "quoted"  # a string, or a header's value
        elif sep == "=" and not match.group("close") and name.upper() == name:
            style = "env"
        elif sep in (":", "=") and _starts_line(text, match.start()):
            style = "config"
        else:
            style = "code"
        if group == "bare" and end < len(text) and text[end] in "([{<" and style != "env":
            continue  # a call or an index: code
        if style != "quoted" and (
            style == "config" or name.lower().endswith("passphrase") or _starts_line(text, match.start())
        ):
            # A bare value at the start of a line (YAML, INI, an env file) runs to the end of the line.
            rest = _rest_of_line(text, end, style)
            if rest and assigned_secret(value, kind=kind, style=style, sep=sep):
                longer = value + rest
                if not (" " in longer or "\t" in longer) or (
                    (kind == "password" or name.lower().endswith("secret")) and passphrase(longer)
                ):
                    value, end = longer, end + len(rest)
        if " " in value or "\t" in value:
            if kind != "password" and not name.lower().endswith("secret"):
                continue
            if not passphrase(value):
                continue
        if style == "config" and sep == ":" and text.startswith(",", end):
            style = "code"  # an object literal's member: { password: password, }
        if not assigned_secret(value, kind=kind, style=style, sep=sep):
            continue
        yield Finding(kind, start, end)
