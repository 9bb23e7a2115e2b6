"""Secret redaction: find credentials in text before it leaves the machine, and mask them.

The rules (``rules``: one per issuer's format; ``private_keys``; ``assignments``, whose values ``literal`` tells
from code and placeholders) are run over a text by ``scan.find_secrets``; ``masking.Redactor`` replaces what they
find. A detected secret is replaced by a placeholder ``[REDACTED:kind:N]``; one `Redactor` numbers the secrets of
each kind in the order it first meets them, so the same secret gets the same placeholder in every request of one run
and two different secrets stay apart.

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

from pi_compact.redact.finding import Finding
from pi_compact.redact.masking import Masked, Redactor, describe_counts
from pi_compact.redact.patterns import PLACEHOLDER
from pi_compact.redact.rules import RULES, Rule
from pi_compact.redact.scan import find_secrets

__all__ = ["PLACEHOLDER", "RULES", "Finding", "Masked", "Redactor", "Rule", "describe_counts", "find_secrets"]
