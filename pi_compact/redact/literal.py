"""What a literal secret looks like, as opposed to code, a reference or a placeholder: the checks made on the value
of a secret-named assignment or flag before it is masked."""

from __future__ import annotations

import math
from collections import Counter

from pi_compact.redact.patterns import PLACEHOLDER, compile_pattern


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    if not text:
        return 0.0
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


REFERENCE = compile_pattern(
    r"^(?:"
    r"\$\{?[A-Za-z_]"  # $VAR, ${VAR}
    r"|\{\{.*\}\}$|\{[A-Za-z_][\w.]*\}$|<[^>]*>$"  # templates: {{x}}, {name}, <your-token>
    r"|%\(?[A-Za-z_]"  # %(name)s, %VAR%
    r"|(?:process\.env|os\.environ|os\.getenv|getenv|env|ENV|secrets|vars|settings|config|self|this)\b"
    r"|[*xX.•_-]+$"  # ****, xxxx, ...
    r")"
)
_WORDY = compile_pattern(r"^[a-z]+(?:[_-][a-z]+)*$")  # bearer, required, string, my-value: words, not secrets
METAVAR = compile_pattern(r"^[A-Z][A-Z_]*$")  # --password PASSWORD in a usage text
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
_PROSE_WORDS = words(
    "enter invalid incorrect wrong required missing expired please must should cannot forgot reset confirm "
    "current new the a an is are not for to of with at least characters"
)


def literal_secret(value: str, *, quoted: bool, env_style: bool, min_length: int = 6) -> bool:
    """Whether the value of a secret-named assignment is a literal secret rather than code or a placeholder."""
    if len(value) < min_length or PLACEHOLDER.search(value) or REFERENCE.search(value):
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


# Values that say what a field is rather than hold it, after ``key:`` or ``key =`` in config or code.
_NOT_SECRET_VALUES = words(
    "none null nil undefined true false yes no on off required optional string str int integer bool boolean "
    "number float bytes any object text hidden secret secrets password passwd token key bearer basic header query "
    "cookie env file async await function lambda new def fn class require import return yield typeof"
)
_CODE_VALUE = compile_pattern(
    r"^(?:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"  # an attribute: request.form, self.token
    r"|[A-Za-z_0-9]*(?i:pass|pwd|secret|token|key|auth|cred)[A-Za-z0-9_]*"  # a variable: password, new_token
    r"|[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+|[A-Z]+[a-z][A-Za-z]*"  # a type: SecretStr, APIKey, Optional
    r"|[!&|>].*)$"  # YAML: a tag, an anchor, a block scalar
)
_TEMPLATE = compile_pattern(r"^\{[A-Za-z_]*(?i:pass|pwd|secret|token|key|auth|cred)[A-Za-z0-9_.]*\}$")
_EMPTY_WORDS = words("none null nil undefined true false")


_SECRET_WORDS = words("secret secrets password passwd token key")
_WORD = compile_pattern(r"^[a-z]+$")


def assigned_secret(value: str, *, kind: str, style: str, sep: str = "=") -> bool:
    """Whether the value of an assignment to a secret name (``kind``: password or secret) is a secret to mask.

    ``style``: ``quoted`` (a string literal), ``env`` (``NAME=value`` in an env file or a shell), ``config`` (a YAML,
    TOML, INI or properties line: ``password: value``, ``password = value``) or ``code`` (anything else unquoted).
    A quoted, env or config value is masked whatever it looks like (``hunter2``, ``secret``, ``{abc}``, ``123456``),
    unless it is empty, a reference (``$VAR``, ``${{ secrets.X }}``, ``process.env.X``), a placeholder
    (``<redacted>``, ``changeme``, ``****``), a template field naming a secret (``{password}``) or a bare
    ``null``/``true``; config and code values that read as code (``password``, ``request.form``, ``SecretStr``,
    ``str``) stay too. A number is masked when it could be a PIN (4 digits, for a password) or a key (8 digits,
    12 in code): ``token: 42`` is a count. In code, an unquoted value is masked only when it mixes letters and
    digits with some entropy (``token = get_token()`` and ``password = password`` stay).
    """
    if not value or PLACEHOLDER.search(value) or _TEMPLATE.search(value):
        return False
    if REFERENCE.search(value) and not (value.startswith("{") and not value.startswith("{{")):
        return False
    lowered = value.lower()
    if lowered in _EMPTY_WORDS or any(word in lowered for word in _PLACEHOLDER_WORDS):
        return False
    if "..." in value or "…" in value:  # elided: sk-ant-..., ghp_…
        return False
    if value.isdigit():
        return len(value) >= (4 if kind == "password" else 12 if style == "code" else 8)
    if style == "code":
        return literal_secret(value, quoted=False, env_style=False)
    if style == "config":
        # ``password: secret`` in YAML is a password; ``password = password`` and ``password: str`` are code.
        yaml_word = sep == ":" and _WORD.search(value) is not None and value in _SECRET_WORDS
        if not yaml_word and (lowered in _NOT_SECRET_VALUES or _CODE_VALUE.search(value)):
            return False
    return len(value) >= (1 if kind == "password" else 3)


def passphrase(value: str) -> bool:
    """Whether a value with spaces reads as a passphrase rather than as a sentence for a user."""
    words = value.split()
    if len(words) < 2 or value.rstrip()[-1:] in ".!?:":
        return False
    return not any(word.strip(",;()").lower() in _PROSE_WORDS for word in words)
