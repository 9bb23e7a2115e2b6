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


def passphrase(value: str) -> bool:
    """Whether a value with spaces reads as a passphrase rather than as a sentence for a user."""
    words = value.split()
    if len(words) < 2 or value.rstrip()[-1:] in ".!?:":
        return False
    return not any(word.strip(",;()").lower() in _PROSE_WORDS for word in words)
