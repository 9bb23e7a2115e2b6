"""Secret redaction: find credentials in text before it leaves the machine, and mask them.

Every rule lives here. A detected secret is replaced by a placeholder ``[REDACTED:kind:N]``; one `Redactor` numbers
the secrets of each kind in the order it first meets them, so the same secret gets the same placeholder in every
request of one run and two different secrets stay apart.

Why rules of our own rather than a scanning library: the libraries look for secrets in files to report them
(detect-secrets reports a private key by its header line, knows no Anthropic keys, and flags any quoted
high-entropy string, which includes every lockfile hash); masking needs the exact span of the secret and few false
positives on ordinary code. The rules follow the published formats of each issuer (the same ones gitleaks and
detect-secrets use) and, for ``password=``/``secret=``/``token=`` assignments, only mask literal values.

Linear time, whatever the input. Every pattern is compiled by RE2 (``google-re2``), which never backtracks: one
search costs time linear in the text it is given. Each pattern is run once over the text (``finditer``), never again
from positions inside it, and the checks made in Python on a match look only at the match and a bounded stretch
after it; matches of one pattern do not overlap, so those checks add up to the length of the text too.

Text is searched twice when it holds JSON escapes (``\\"``, ``\\/``, ``\\u0041``, ``\\n``): as it is, and decoded,
so a key inside a JSON string written into another JSON string (``{\\"dbPassword\\": \\"…\\"}``,
``https:\\/\\/u:pw@h``) or written with ``\\u`` escapes is found too; what the decoded text matches is masked in
the text as it is.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import re2

COMPILED: list[Any] = []  # every pattern this module runs: all RE2 (the tests check it)


def _compile(pattern: str) -> Any:
    options = re2.Options()
    options.max_mem = 64 << 20
    options.log_errors = False
    compiled = re2.compile(pattern, options)
    COMPILED.append(compiled)
    return compiled


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


PLACEHOLDER = _compile(r"\[REDACTED:[a-z0-9-]+:\d+\]")


@dataclass(frozen=True)
class Rule:
    """One detector: ``pattern``'s first group named ``secret…`` that matched (or the whole match) is the secret.

    ``accept`` may veto a match; ``boundary``: the match must not follow a letter, digit or underscore; ``after``:
    characters that must not follow it (what a lookahead would say; RE2 has none); ``wrap``: the characters of the
    secret, for a key a terminal wrapped onto the next line (that line is taken too)."""

    kind: str
    pattern: Any  # an RE2 pattern
    accept: Callable[[Any], bool] | None = None
    boundary: bool = True
    after: str = ""
    wrap: str = ""


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    if not text:
        return 0.0
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


# ---------------------------------------------------------------------------------------------------------------
# What a literal secret looks like, as opposed to code, a reference or a placeholder

_REFERENCE = _compile(
    r"^(?:"
    r"\$\{?[A-Za-z_]"  # $VAR, ${VAR}
    r"|\{\{.*\}\}$|\{[A-Za-z_][\w.]*\}$|<[^>]*>$"  # templates: {{x}}, {name}, <your-token>
    r"|%\(?[A-Za-z_]"  # %(name)s, %VAR%
    r"|(?:process\.env|os\.environ|os\.getenv|getenv|env|ENV|secrets|vars|settings|config|self|this)\b"
    r"|[*xX.•_-]+$"  # ****, xxxx, ...
    r")"
)
_WORDY = _compile(r"^[a-z]+(?:[_-][a-z]+)*$")  # bearer, required, string, my-value: words, not secrets
_METAVAR = _compile(r"^[A-Z][A-Z_]*$")  # --password PASSWORD in a usage text
_PLACEHOLDER_WORDS = (
    "example",
    "placeholder",
    "changeme",
    "your",
    "dummy",
    "redacted",
    "xxxxx",
    "none",
    "null",
    "undefined",
    "true",
    "false",
)
# Words of a sentence shown to a user ("Enter your password", "Invalid token"), not of a passphrase.
_PROSE_WORDS = _words(
    "enter invalid incorrect wrong required missing expired please must should cannot forgot reset confirm "
    "current new the a an is are not for to of with at least characters"
)


def _literal_secret(value: str, *, quoted: bool, env_style: bool, min_length: int = 6) -> bool:
    """Whether the value of a secret-named assignment is a literal secret rather than code or a placeholder."""
    if len(value) < min_length or PLACEHOLDER.search(value) or _REFERENCE.search(value):
        return False
    lowered = value.lower()
    if any(word in lowered for word in _PLACEHOLDER_WORDS):
        return False
    if value.isdigit():
        return len(value) >= 12
    if quoted or env_style:
        return not (_WORDY.search(value) and len(value) <= 12)
    # Unquoted after ``key:`` or ``key =`` in code or YAML: ``token: str``, ``password = form.get(...)`` are code.
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and _entropy(value) >= 3.0


def _passphrase(value: str) -> bool:
    """Whether a value with spaces reads as a passphrase rather than as a sentence for a user."""
    words = value.split()
    if len(words) < 2 or value.rstrip()[-1:] in ".!?:":
        return False
    return not any(word.strip(",;()").lower() in _PROSE_WORDS for word in words)


# ---------------------------------------------------------------------------------------------------------------
# Secret-named assignments: ``password=``, ``"dbPassword": "…"``, ``this.secretKey = '…'``, ``PGPASSWORD=…``

# A candidate: a name holding one of these words, a separator, a value. Which names are secret is decided on the
# name alone (``_name_kind``); the value must be a literal (``_literal_secret``).
_ASSIGNMENT = _compile(
    r"(?P<name>[A-Za-z0-9_.$@-]*?(?i:pass|pwd|secret|token|key|auth|credential)[A-Za-z0-9_.-]*)"
    r"(?P<close>[\"'`]?)[ \t]*(?P<sep>:=|=>|\?=|=|:)[ \t]*"
    r"(?:\"(?P<dq>(?:[^\"\\\n]|\\.)*)\"|'(?P<sq>(?:[^'\\\n]|\\.)*)'|`(?P<bq>[^`\n]*)`"
    r"|(?P<bare>[^\s\"'`,;()\[\]{}<>\\]+))"
)
_NAME_WORDS = _compile(r"[A-Z]*[a-z]+|[A-Z]+|[0-9]+")
# Trailing words that do not change what a name holds: DB_PASSWORD_PROD, SECRET_KEY_BASE, api_key_2.
_NAME_SUFFIXES = _words(
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
_KEY_QUALIFIERS = _words("api secret private access auth signing encryption master account shared client app license")
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


def _assignments(text: str) -> Iterator[Finding]:
    for match in _ASSIGNMENT.finditer(text):
        name = match.group("name")
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
            if not _passphrase(value):
                continue
        env_style = not quoted and match.group("sep") == "=" and name.upper() == name and not match.group("close")
        if not _literal_secret(value, quoted=quoted, env_style=env_style):
            continue
        yield Finding(kind, start, end)


# ---------------------------------------------------------------------------------------------------------------
# Private keys: PEM, OpenSSH, PGP and SSH2 blocks, PuTTY files, and a PEM body pasted without its header

_BEGIN_KEY = _compile(r"-{4,5} ?BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)? ?-{4,5}")
_END_KEY = _compile(r"-{4,5} ?END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)? ?-{4,5}")
_NEWLINE = r"(?:\r?\n|\\r?\\n)"  # a line break, or one written as a JSON escape
# The body after a header whose end line is missing: header lines (Proc-Type, Comment), then base64 lines.
_KEY_BODY = _compile(
    rf"^(?:[ \t]*{_NEWLINE})*(?:[A-Za-z][A-Za-z-]*:[^\n\\]*{_NEWLINE})*"
    rf"(?:[A-Za-z0-9+/=]+[ \t]*(?:{_NEWLINE}|$))*"
)
_KEY_SPAN = 20_000  # characters from a header to its end line, at most


def _private_key_blocks(text: str) -> Iterator[Finding]:
    begins = [(m.start(), m.end()) for m in _BEGIN_KEY.finditer(text)]
    if not begins:
        return
    ends = [(m.start(), m.end()) for m in _END_KEY.finditer(text)]
    end_starts = [start for start, _ in ends]
    covered = 0
    for i, (start, header_end) in enumerate(begins):
        if start < covered:
            continue
        limit = min(header_end + _KEY_SPAN, begins[i + 1][0] if i + 1 < len(begins) else len(text))
        k = bisect_left(end_starts, header_end)
        if k < len(ends) and ends[k][0] <= limit:
            covered = ends[k][1]
            yield Finding("private-key", start, covered)
            continue
        body = _KEY_BODY.search(text[header_end:limit])  # regions end at the next header: each is read once
        if body is not None and body.end() >= 16:
            covered = header_end + body.end()
            yield Finding("private-key", start, covered)


def _pem_body_prefixes() -> str:
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


# ---------------------------------------------------------------------------------------------------------------
# The rules


def _url_password_ok(match: Any) -> bool:
    value = match.group("secret")
    return not (_REFERENCE.search(value) or value.lower() in ("password", "pass", "x-oauth-basic"))


def _has_digit(match: Any) -> bool:
    return any(c.isdigit() for c in match.group())


def _flag_value_ok(match: Any) -> bool:
    value = next(v for v in (match.group("secret"), match.group("secret_q"), match.group("secret_s")) if v is not None)
    if _METAVAR.search(value):
        return False
    return _literal_secret(value, quoted=True, env_style=False, min_length=4)


def _user_password_ok(match: Any) -> bool:
    value = match.group("secret")
    return not value.isdigit() and not _REFERENCE.search(value) and value.lower() not in ("password", "pass")


_TOKEN = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
_WORD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_FLAG_VALUE = (
    r"(?:[ \t]+|=)(?:\"(?P<secret_q>[^\"\n]+)\"|'(?P<secret_s>[^'\n]+)'"
    r"|(?P<secret>[^\s\"'()\[\]{}<>,;-][^\s\"'()\[\]{}<>,;]*))"
)


def _token(kind: str, pattern: str, **options: Any) -> Rule:
    """A key with an issuer's prefix; it may be wrapped onto a second line."""
    return Rule(kind, _compile(pattern), wrap=options.pop("wrap", _TOKEN), **options)


# Each pattern starts with a literal (the issuer's prefix) where it can; the word boundary before a token is
# checked afterwards (``Rule.boundary``), like what a lookahead would check after it (``Rule.after``).
RULES: tuple[Rule, ...] = (
    Rule(
        "private-key",
        _compile(
            rf"Private-Lines: *\d+[ \t]*{_NEWLINE}(?P<secret>(?:[A-Za-z0-9+/=]+{_NEWLINE})*[A-Za-z0-9+/=]+"
            rf"(?:{_NEWLINE}Private-(?:MAC|Hash): *[0-9a-fA-F]+)?)"
        ),
        boundary=False,
    ),  # PuTTY: the private lines and their MAC
    Rule(
        "private-key",
        _compile(rf"(?:{_pem_body_prefixes()})[A-Za-z0-9+/]*={{0,2}}(?:{_NEWLINE}[A-Za-z0-9+/]+={{0,2}})*"),
    ),  # a PEM body without its header
    Rule("age-key", _compile(r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"), after=_WORD),
    _token("anthropic-key", r"sk-ant-(?:api|admin|oat|sid)\d{2}-[A-Za-z0-9_-]{20,}"),
    _token("openrouter-key", r"sk-or-v1-[A-Za-z0-9]{32,}", after=_WORD),
    _token(
        "openai-key",
        r"sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{40,}|[A-Za-z0-9_-]{16,}T3BlbkFJ[A-Za-z0-9_-]{16,}"
        r"|[A-Za-z0-9]{48}\b)",
    ),
    _token("deepseek-key", r"sk-[a-f0-9]{32}\b"),
    _token("groq-key", r"gsk_[A-Za-z0-9]{48,}\b"),
    _token("xai-key", r"xai-[A-Za-z0-9]{60,}\b"),
    _token("cerebras-key", r"csk-[a-z0-9]{40,}\b"),
    _token("fireworks-key", r"fw_[A-Za-z0-9]{20,}\b", accept=_has_digit),
    _token("together-key", r"tgp_v1_[A-Za-z0-9_-]{30,}"),
    _token("github-token", r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    _token("gitlab-token", r"gl(?:pat|ptt|dt|rt|cbt|soat|ffct|imt|agent)-[A-Za-z0-9_-]{20,}"),
    _token("slack-token", r"(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}"),
    Rule("slack-token", _compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}")),
    _token("stripe-key", r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b"),
    _token("stripe-key", r"whsec_[A-Za-z0-9]{24,}\b"),
    Rule("aws-access-key", _compile(r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b")),
    Rule(
        "aws-secret-key",
        _compile(
            r"(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY|aws_secret_key|AWS_SECRET_KEY|ecretAccessKey)"
            r"[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9/+]{40})"  # ecretAccessKey: secretAccessKey, Secret…
        ),
        boundary=False,
        after=_B64,
    ),
    Rule(
        "azure-key",
        _compile(r"(?:AccountKey|SharedAccessKey|SharedSecret)=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})"),
        after=_B64,
    ),
    _token("google-api-key", r"AIza[0-9A-Za-z_-]{35}", after=_TOKEN),
    _token("google-oauth-secret", r"GOCSPX-[A-Za-z0-9_-]{28}", after=_TOKEN),
    _token("huggingface-token", r"hf_[A-Za-z0-9]{34,}\b"),
    _token("npm-token", r"npm_[A-Za-z0-9]{36}\b"),
    Rule("npm-token", _compile(r"_authToken=(?P<secret>[A-Za-z0-9._~+/=-]{16,})"), boundary=False),
    _token("pypi-token", r"pypi-AgE[A-Za-z0-9_-]{50,}"),
    _token("sendgrid-key", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b"),
    _token("jwt", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{10,}", wrap=_TOKEN + "."),
    Rule(
        "url-password",
        _compile(r":(?:\\?/){2}[^\s:/@'\"<>\\]{0,256}:(?P<secret>[^\s@/'\"<>\\]{3,256})@"),
        _url_password_ok,
        boundary=False,
    ),  # scheme://user:password@host, scheme://:password@host, and JSON's https:\/\/user:password@host
    # The auth scheme is case-insensitive (RFC 9110): HTTP/2 tools print "authorization: bearer …".
    Rule("bearer-token", _compile(r"(?i:bearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{20,}=*)")),
    Rule(
        "basic-auth",
        _compile(r"(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic)[ \t]+(?P<secret>[A-Za-z0-9+/]{4,}={0,2})"),
        after=_B64,
    ),
    Rule(
        "password",
        _compile(r"(?:-u[ \t]*|--user[ \t=]+)[\"']?[^\s:\"'$]+:(?P<secret>[^\s\"']{3,})"),
        _user_password_ok,
    ),  # curl -u user:password
    Rule(
        "password",
        _compile(
            r"(?:mysql|mysqldump|mysqladmin|mysqlsh|mysqlimport|mariadb)(?:[ \t][^\n]*?)?[ \t]-p"
            r"(?P<secret>[^\s\"'-][^\s\"']*)"
        ),
        _user_password_ok,
    ),  # mysql -pPASSWORD
    Rule(
        "password",
        _compile(rf"--(?:[a-z0-9]+-)*(?:password|passwd|pass|pwd|passphrase){_FLAG_VALUE}"),
        _flag_value_ok,
    ),  # --password PASSWORD, --db-password=PASSWORD
    Rule(
        "secret",
        _compile(
            rf"--(?:[a-z0-9]+-)*(?:token|secret|api-key|apikey|access-key|secret-key|client-secret|auth-token)"
            rf"{_FLAG_VALUE}"
        ),
        _flag_value_ok,
    ),
)
SCANNERS: tuple[Callable[[str], Iterator[Finding]], ...] = (_private_key_blocks, _assignments)


# ---------------------------------------------------------------------------------------------------------------
# Finding


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


_WRAP_LINE = 512  # characters of a wrapped key's next line looked at


def _wrapped_end(text: str, end: int, alphabet: str) -> int:
    """Where a key that ends at a line break ends, when a terminal wrapped it: its next line (or two) holds only
    characters of the key (at least 8 of them, or a digit), or starts with at least 16 of them."""
    for _ in range(3):
        if text.startswith("\r\n", end):
            start = end + 2
        elif text.startswith("\n", end):
            start = end + 1
        else:
            break
        stop, limit = start, min(len(text), start + _WRAP_LINE)
        while stop < limit and text[stop] in alphabet:
            stop += 1
        run = text[start:stop]
        at_line_end = stop == len(text) or text[stop] in "\r\n"
        if not run or not ((at_line_end and (len(run) >= 8 or any(c.isdigit() for c in run))) or len(run) >= 16):
            break
        end = stop
        if not at_line_end:
            break
    return end


def _rule_findings(text: str) -> Iterator[Finding]:
    for rule in RULES:
        groups = [i for name, i in rule.pattern.groupindex.items() if name.startswith("secret")]
        for match in rule.pattern.finditer(text):
            if rule.boundary and match.start() > 0 and _word_char(text[match.start() - 1]):
                continue
            if rule.after and match.end() < len(text) and text[match.end()] in rule.after:
                continue
            if rule.accept is not None and not rule.accept(match):
                continue
            start, end = match.span(next((i for i in groups if match.group(i)), 0))
            if rule.wrap:
                end = _wrapped_end(text, end, rule.wrap)
            yield Finding(rule.kind, start, end)


def _scanned(text: str) -> Iterator[Finding]:
    for scanner in SCANNERS:
        yield from scanner(text)


_ESCAPE = _compile(r"\\(?:u[0-9a-fA-F]{4}|[\"\\/bfnrt])")
_ESCAPED = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _decoded(text: str) -> tuple[str, Callable[[int], int]] | None:
    """The text with its JSON escapes decoded, and a map from a position in it to one in the text; None when the
    text has none."""
    if "\\" not in text:
        return None
    parts: list[str] = []
    at = 0
    positions: list[int] = []  # where each decoded escape is in the decoded text
    shifts: list[int] = []  # characters the escapes up to and including it took beyond one
    shift = 0
    for match in _ESCAPE.finditer(text):
        start, end = match.start(), match.end()
        parts.append(text[at:start])
        code = match.group()
        parts.append(chr(int(code[2:], 16)) if code[1] == "u" else _ESCAPED[code[1]])
        positions.append(start - shift)
        shift += end - start - 1
        shifts.append(shift)
        at = end
    if not positions:
        return None
    parts.append(text[at:])

    def to_text(position: int) -> int:
        k = bisect_left(positions, position)  # escapes before this position
        return position + (shifts[k - 1] if k else 0)

    return "".join(parts), to_text


def find_secrets(text: str) -> list[Finding]:
    """Every detected secret in text, as non-overlapping spans in order (the earlier, then longer, match wins)."""
    decoded = _decoded(text)
    found: list[Finding] = []
    # An issuer's format names the secret better than the assignment it is in: on the same span, it comes first.
    for find in (_rule_findings, _scanned):
        found.extend(find(text))
        if decoded is not None:
            view, to_text = decoded
            found.extend(Finding(f.kind, to_text(f.start), to_text(f.end)) for f in find(view))
    if not found:
        return []
    found.sort(key=lambda f: (f.start, -(f.end - f.start)))
    masked = [(m.start(), m.end()) for m in PLACEHOLDER.finditer(text)] if "[REDACTED:" in text else []
    masked_starts = [start for start, _ in masked]
    out: list[Finding] = []
    for finding in found:
        if out and finding.start < out[-1].end:
            continue
        k = bisect_right(masked_starts, finding.end) - 1
        if k >= 0 and masked[k][1] > finding.start:  # already masked (text masked twice)
            continue
        out.append(finding)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Masking


@dataclass(frozen=True)
class Masked:
    """Masked text and where its placeholders are: ``spans`` holds, for each secret in order, its (start, end) in
    the original text and its placeholder's (start, end) in ``text``."""

    text: str
    spans: tuple[tuple[int, int, int, int], ...] = ()

    def position(self, offset: int, *, inside: str = "end") -> int:
        """Where a position of the original text is in the masked one. A position inside a secret is the end of its
        placeholder (``inside="start"``: its start), so a cut there leaves the placeholder whole on one side."""
        k = bisect_right(self.spans, (offset, math.inf)) - 1
        if k < 0:
            return offset
        start, end, masked_start, masked_end = self.spans[k]
        if offset >= end:
            return masked_end + offset - end
        if offset == start:
            return masked_start
        return masked_end if inside == "end" else masked_start


class Redactor:
    """Masks secrets with placeholders numbered per kind, stable for the life of the object (one run)."""

    def __init__(self) -> None:
        self._numbers: dict[tuple[str, str], int] = {}
        self._per_kind: Counter[str] = Counter()
        self.occurrences: Counter[str] = Counter()

    def placeholder(self, kind: str, secret: str) -> str:
        key = (kind, secret)
        if key not in self._numbers:
            self._per_kind[kind] += 1
            self._numbers[key] = self._per_kind[kind]
        return f"[REDACTED:{kind}:{self._numbers[key]}]"

    def mask(self, text: str) -> Masked:
        """text with every detected secret replaced by its placeholder, and where each one went."""
        findings = find_secrets(text)
        if not findings:
            return Masked(text)
        parts: list[str] = []
        spans: list[tuple[int, int, int, int]] = []
        at = 0
        size = 0
        for finding in findings:
            parts.append(text[at : finding.start])
            size += finding.start - at
            placeholder = self.placeholder(finding.kind, text[finding.start : finding.end])
            parts.append(placeholder)
            spans.append((finding.start, finding.end, size, size + len(placeholder)))
            size += len(placeholder)
            self.occurrences[finding.kind] += 1
            at = finding.end
        parts.append(text[at:])
        return Masked("".join(parts), tuple(spans))

    def redact(self, text: str) -> str:
        """text with every detected secret replaced by its placeholder."""
        return self.mask(text).text

    @property
    def counts(self) -> dict[str, int]:
        """Distinct secrets masked so far, by kind (never the secrets themselves)."""
        return dict(sorted(self._per_kind.items()))


def describe_counts(counts: dict[str, int]) -> str:
    """``3 secrets (github-token 1, password 2)`` or ``no secrets``."""
    total = sum(counts.values())
    if not total:
        return "no secrets"
    kinds = ", ".join(f"{kind} {n}" for kind, n in counts.items())
    return f"{total} secret{'s' if total != 1 else ''} ({kinds})"


__all__ = ["PLACEHOLDER", "RULES", "Finding", "Masked", "Redactor", "Rule", "describe_counts", "find_secrets"]
