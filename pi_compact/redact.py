"""Secret redaction: find credentials in text before it leaves the machine, and mask them.

Every rule lives here. A detected secret is replaced by a placeholder ``[REDACTED:kind:N]``; one `Redactor` numbers
the secrets of each kind in the order it first meets them, so the same secret gets the same placeholder in every
request of one run and two different secrets stay apart.

Why rules of our own rather than a scanning library: the libraries look for secrets in files to report them
(detect-secrets reports a private key by its header line, knows no Anthropic keys, and flags any quoted
high-entropy string, which includes every lockfile hash); masking needs the exact span of the secret and few false
positives on ordinary code. The rules follow the published formats of each issuer (the same ones gitleaks and
detect-secrets use) and, for ``password=``/``secret=``/``token=`` assignments, only mask literal values.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9-]+:\d+\]")


@dataclass(frozen=True)
class Rule:
    """One detector: ``pattern``'s group ``secret`` (or the whole match) is the secret; ``accept`` may veto it."""

    kind: str
    pattern: re.Pattern[str]
    accept: Callable[[re.Match[str]], bool] | None = None
    boundary: bool = True  # the match must not follow a letter, digit or underscore


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    if not text:
        return 0.0
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


_REFERENCE = re.compile(
    r"""^(?:
        \$\{?[A-Za-z_]                              # $VAR, ${VAR}
      | \{\{.*\}\}$ | \{[A-Za-z_][\w.]*\}$ | <[^>]*>$ # templates: {{x}}, {name}, <your-token>
      | %\(?[A-Za-z_]                               # %(name)s, %VAR%
      | (?:process\.env|os\.environ|os\.getenv|getenv|env|ENV|secrets|vars|settings|config|self|this)\b
      | [*xX.•_-]+$                                 # ****, xxxx, ...
    )""",
    re.VERBOSE,
)
_WORDY = re.compile(r"^[a-z]+(?:[_-][a-z]+)*$")  # bearer, required, string, my-value: words, not secrets
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


def _literal_secret(value: str, *, quoted: bool, env_style: bool) -> bool:
    """Whether the value of a secret-named assignment is a literal secret rather than code or a placeholder."""
    if len(value) < 6 or PLACEHOLDER.search(value) or _REFERENCE.match(value):
        return False
    lowered = value.lower()
    if any(word in lowered for word in _PLACEHOLDER_WORDS):
        return False
    if value.isdigit():
        return len(value) >= 12
    if quoted or env_style:
        return not (_WORDY.match(value) and len(value) <= 12)
    # Unquoted after ``key:`` or ``key =`` in code or YAML: ``token: str``, ``password = form.get(...)`` are code.
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and _entropy(value) >= 3.0


_SECRET_NAME = (
    r"(?:[A-Za-z0-9]+[_.-])*"
    r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|auth[_-]?key|client[_-]?secret|credentials?|auth)"
    r"(?:[_.-][A-Za-z0-9]+)*"
)
_ASSIGNMENT = re.compile(
    rf"""(?<![A-Za-z0-9])(?P<name>{_SECRET_NAME})(?![A-Za-z0-9])
        (?P<close>["']?)[ \t]*(?P<sep>:=|=|:)[ \t]*
        (?:
            (?P<q>["'`])(?P<qsecret>[^"'`\s\\]{{1,400}})(?P=q)
          | (?P<secret>[^\s"'`,;()\[\]{{}}<>\\]{{1,400}})(?=[\s"'`,;)\]}}\\]|$)
        )""",
    re.IGNORECASE | re.VERBOSE,
)


_KEYWORD = re.compile(r"pass|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|auth|credential")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _assignments(text: str) -> list[Finding]:
    """Secret-named assignments with a literal value: the keyword is found first (in an ASCII-lowercased copy, the
    same length), then the assignment is matched from the start of the name around it."""
    found: dict[tuple[int, int], str] = {}
    lowered = text.translate(_ASCII_LOWER)
    tried: set[int] = set()
    for hit in _KEYWORD.finditer(lowered):
        start = hit.start()
        while start > 0 and text[start - 1] in _NAME_CHARS:
            start -= 1
        # The name may start at the run's start or after any separator inside it (``x.db_password``).
        for pos in [start] + [i + 1 for i in range(start, hit.start()) if text[i] in "_.-"] + [hit.start()]:
            if pos in tried:
                continue
            tried.add(pos)
            match = _ASSIGNMENT.match(text, pos)
            if match is None:
                continue
            value = _assignment_value(match)
            if value is not None:
                found.setdefault((value[1], value[2]), _assignment_kind(match))
            break
    return [Finding(kind, start, end) for (start, end), kind in found.items()]


def _assignment_value(match: re.Match[str]) -> tuple[str, int, int] | None:
    group = "qsecret" if match.group("qsecret") is not None else "secret"
    value = match.group(group)
    env_style = (
        group == "secret"
        and match.group("sep") == "="
        and match.group("name").upper() == match.group("name")
        and not match.group("close")
    )
    if not _literal_secret(value, quoted=group == "qsecret", env_style=env_style):
        return None
    return value, match.start(group), match.end(group)


def _assignment_kind(match: re.Match[str]) -> str:
    name = match.group("name").lower()
    return "password" if any(w in name for w in ("pass", "pwd")) else "secret"


def _url_password_ok(match: re.Match[str]) -> bool:
    value = match.group("secret")
    return not (_REFERENCE.match(value) or value.lower() in ("password", "pass", "x-oauth-basic"))


# Each pattern starts with a literal (the issuer's prefix), which lets the regex engine skip ahead to candidates:
# a leading \b would make it try every position (a hundred times slower on a large history). The word
# boundary before a token is checked afterwards instead (``Rule.boundary``).
RULES: tuple[Rule, ...] = (
    Rule(
        "private-key",
        re.compile(
            r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]{0,20000}?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,-]{16,20000})"
        ),
        boundary=False,
    ),
    Rule("anthropic-key", re.compile(r"sk-ant-(?:api|admin|oat|sid)\d{2}-[A-Za-z0-9_-]{20,}")),
    Rule(
        "openai-key",
        re.compile(
            r"sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{40,}"
            r"|[A-Za-z0-9_-]{16,}T3BlbkFJ[A-Za-z0-9_-]{16,}"
            r"|[A-Za-z0-9]{48}\b)"
        ),
    ),
    Rule("github-token", re.compile(r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b")),
    Rule("gitlab-token", re.compile(r"gl(?:pat|ptt|dt|rt|cbt|soat|ffct|imt|agent)-[A-Za-z0-9_-]{20,}")),
    Rule("slack-token", re.compile(r"xox[abposre]-[A-Za-z0-9-]{10,}")),
    Rule("slack-token", re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}")),
    *(Rule("stripe-key", re.compile(rf"{prefix}_(?:live|test)_[A-Za-z0-9]{{16,}}\b")) for prefix in ("sk", "rk")),
    Rule("stripe-key", re.compile(r"whsec_[A-Za-z0-9]{24,}\b")),
    Rule("aws-access-key", re.compile(r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b")),
    *(
        Rule(
            "aws-secret-key",
            re.compile(rf"{name}[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9/+]{{40}})(?![A-Za-z0-9/+])"),
            boundary=False,
        )
        for name in (
            "aws_secret_access_key",
            "AWS_SECRET_ACCESS_KEY",
            "aws_secret_key",
            "AWS_SECRET_KEY",
            "ecretAccessKey",  # secretAccessKey, SecretAccessKey, awsSecretAccessKey
        )
    ),
    Rule("google-api-key", re.compile(r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])")),
    Rule("huggingface-token", re.compile(r"hf_[A-Za-z0-9]{34,}\b")),
    Rule("npm-token", re.compile(r"npm_[A-Za-z0-9]{36}\b")),
    Rule("pypi-token", re.compile(r"pypi-AgE[A-Za-z0-9_-]{50,}")),
    Rule("sendgrid-key", re.compile(r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b")),
    Rule("jwt", re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{10,}")),
    Rule(
        "url-password",
        re.compile(r"://[^\s:/@'\"<>]{1,256}:(?P<secret>[^\s@/'\"<>]{3,256})@"),
        _url_password_ok,
        boundary=False,
    ),
    # The auth scheme is case-insensitive (RFC 9110): HTTP/2 tools print "authorization: bearer …".
    Rule("bearer-token", re.compile(r"[Bb][Ee][Aa][Rr][Ee][Rr][ \t]+(?P<secret>[A-Za-z0-9._~+/-]{20,}=*)")),
)


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


def find_secrets(text: str) -> list[Finding]:
    """Every detected secret in text, as non-overlapping spans in order (the earlier, then longer, match wins)."""
    found: list[Finding] = []
    for rule in RULES:
        for match in rule.pattern.finditer(text):
            if rule.boundary and match.start() > 0 and _word_char(text[match.start() - 1]):
                continue
            if rule.accept is not None and not rule.accept(match):
                continue
            group = "secret" if "secret" in rule.pattern.groupindex and match.group("secret") else 0
            found.append(Finding(rule.kind, match.start(group), match.end(group)))
    found.extend(_assignments(text))
    found.sort(key=lambda f: (f.start, -(f.end - f.start)))
    out: list[Finding] = []
    for finding in found:
        if out and finding.start < out[-1].end:
            continue
        if PLACEHOLDER.search(text, finding.start, finding.end):  # already masked (text masked twice)
            continue
        out.append(finding)
    return out


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

    def redact(self, text: str) -> str:
        """text with every detected secret replaced by its placeholder."""
        findings = find_secrets(text)
        if not findings:
            return text
        parts: list[str] = []
        at = 0
        for finding in findings:
            parts.append(text[at : finding.start])
            parts.append(self.placeholder(finding.kind, text[finding.start : finding.end]))
            self.occurrences[finding.kind] += 1
            at = finding.end
        parts.append(text[at:])
        return "".join(parts)

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


__all__ = ["PLACEHOLDER", "RULES", "Finding", "Redactor", "Rule", "describe_counts", "find_secrets"]
