"""The rules: one per issuer's format (the published ones, as gitleaks and detect-secrets use them), and the
patterns of URLs with a password, Authorization headers and command-line flags; each an RE2 pattern and the checks on
its match."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pi_compact.redact.literal import METAVAR, REFERENCE, assigned_secret, literal_secret
from pi_compact.redact.patterns import compile_pattern
from pi_compact.redact.private_keys import NEWLINE, pem_body_prefixes


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


def _url_password_ok(match: Any) -> bool:
    value = match.group("secret")
    return not (REFERENCE.search(value) or value.lower() in ("password", "pass", "x-oauth-basic"))


def _has_digit(match: Any) -> bool:
    return any(c.isdigit() for c in match.group())


def _flag_value_ok(match: Any) -> bool:
    value = next(v for v in (match.group("secret"), match.group("secret_q"), match.group("secret_s")) if v is not None)
    if METAVAR.search(value):
        return False
    return literal_secret(value, quoted=True, env_style=False, min_length=4)


def _any_value_ok(match: Any) -> bool:
    """A password given on a command line: anything but a reference (``"$PASS"``) or a placeholder."""
    value = next((v for v in (match.group("secret"), match.group("secret_q"), match.group("secret_s")) if v), "")
    return assigned_secret(value, kind="password", style="quoted")


_AUTHORIZATION = r"(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?"  # the header, as a line or in code
_CREDENTIAL = r"[A-Za-z0-9._~+/=:$-]{4,}"


def _header_value_ok(match: Any) -> bool:
    return assigned_secret(match.group("secret"), kind="secret", style="quoted")


def _user_password_ok(match: Any) -> bool:
    value = match.group("secret")
    return not value.isdigit() and not REFERENCE.search(value) and value.lower() not in ("password", "pass")


def _discord_ok(match: Any) -> bool:
    """A Discord bot token: its first part is a user id in base64 (digits in it), its parts not all letters."""
    first = match.group().split(".", 1)[0]
    return any(c.isdigit() for c in first) and any(c.isdigit() for c in match.group()[len(first) :])


def _telegram_ok(match: Any) -> bool:
    """A Telegram bot token: the bot's id, a colon and 35 characters mixing cases or digits (not a word)."""
    secret = match.group("secret").split(":", 1)[1]
    return any(c.isupper() for c in secret) and any(c.islower() for c in secret)


_TOKEN = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
_WORD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_FLAG_VALUE = (
    r"(?:[ \t]+|=)(?:\"(?P<secret_q>[^\"\n]+)\"|'(?P<secret_s>[^'\n]+)'"
    r"|(?P<secret>[^\s\"'()\[\]{}<>,;-][^\s\"'()\[\]{}<>,;]*))"
)


def _token(kind: str, pattern: str, **options: Any) -> Rule:
    """A key with an issuer's prefix; it may be wrapped onto a second line."""
    return Rule(kind, compile_pattern(pattern), wrap=options.pop("wrap", _TOKEN), **options)


# Each pattern starts with a literal (the issuer's prefix) where it can; the word boundary before a token is
# checked afterwards (``Rule.boundary``), like what a lookahead would check after it (``Rule.after``).
RULES: tuple[Rule, ...] = (
    Rule(
        "private-key",
        compile_pattern(
            rf"Private-Lines: *\d+[ \t]*{NEWLINE}(?P<secret>(?:[A-Za-z0-9+/=]+{NEWLINE})*[A-Za-z0-9+/=]+"
            rf"(?:{NEWLINE}Private-(?:MAC|Hash): *[0-9a-fA-F]+)?)"
        ),
        boundary=False,
    ),  # PuTTY: the private lines and their MAC
    Rule(
        "private-key",
        compile_pattern(rf"(?:{pem_body_prefixes()})[A-Za-z0-9+/]*={{0,2}}(?:{NEWLINE}[A-Za-z0-9+/]+={{0,2}})*"),
    ),  # a PEM body without its header
    Rule("age-key", compile_pattern(r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"), after=_WORD),
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
    Rule(
        "slack-token", compile_pattern(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}")
    ),
    _token("stripe-key", r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b"),
    _token("stripe-key", r"whsec_[A-Za-z0-9]{24,}\b"),
    Rule("aws-access-key", compile_pattern(r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b")),
    Rule(
        "aws-secret-key",
        compile_pattern(
            r"(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY|aws_secret_key|AWS_SECRET_KEY|ecretAccessKey)"
            r"[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9/+]{40})"  # ecretAccessKey: secretAccessKey, Secret…
        ),
        boundary=False,
        after=_B64,
    ),
    Rule(
        "azure-key",
        compile_pattern(r"(?:AccountKey|SharedAccessKey|SharedSecret)=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})"),
        after=_B64,
    ),
    _token("google-api-key", r"AIza[0-9A-Za-z_-]{35}", after=_TOKEN),
    _token("google-oauth-secret", r"GOCSPX-[A-Za-z0-9_-]{28}", after=_TOKEN),
    _token("huggingface-token", r"hf_[A-Za-z0-9]{34,}\b"),
    _token("npm-token", r"npm_[A-Za-z0-9]{36}\b"),
    Rule("npm-token", compile_pattern(r"_authToken=(?P<secret>[A-Za-z0-9._~+/=-]{16,})"), boundary=False),
    _token("pypi-token", r"pypi-AgE[A-Za-z0-9_-]{50,}"),
    _token("sendgrid-key", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b"),
    _token("jwt", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{10,}", wrap=_TOKEN + "."),
    # More issuers, by their published formats (gitleaks' rule set has the same shapes).
    _token("twilio-key", r"SK[0-9a-fA-F]{32}", after=_WORD),
    _token("mailgun-key", r"key-[0-9a-f]{32}", after=_WORD),
    _token("shopify-token", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}", after=_WORD),
    _token(
        "discord-token",
        r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}",
        accept=_discord_ok,
        after=_TOKEN,
        wrap="",
    ),
    _token("telegram-token", r"(?:bot)?(?P<secret>\d{8,10}:[A-Za-z0-9_-]{35})", accept=_telegram_ok, after=_TOKEN),
    _token("vault-token", r"hv[sbr]\.[A-Za-z0-9_-]{24,}"),
    _token("doppler-token", r"dp\.(?:st|pt|sa|ct|scim|audit)\.(?:[a-z0-9_-]{1,40}\.)?[A-Za-z0-9]{40,}", after=_WORD),
    _token("linear-key", r"lin_(?:api|oauth)_[A-Za-z0-9]{40,64}", after=_WORD),
    _token("notion-token", r"(?:ntn_[0-9]{11}[A-Za-z0-9]{32,40}|secret_[A-Za-z0-9]{43})", after=_WORD),
    _token("atlassian-token", r"AT(?:ATT|CTT)[A-Za-z0-9_=-]{60,}", after=_TOKEN),
    _token("digitalocean-token", r"do[opr]_v1_[a-f0-9]{64}", after=_WORD),
    _token("supabase-token", r"(?:sbp_(?:oauth_)?[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{20,})", after=_WORD),
    _token("sentry-token", r"(?:sntrys_eyJ[A-Za-z0-9_=+/-]{50,}|sntryu_[a-f0-9]{64})", wrap=_TOKEN + "+/="),
    _token("postman-key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", after=_WORD),
    _token("databricks-token", r"dapi[a-f0-9]{32}(?:-\d)?", after=_WORD),
    _token("pulumi-token", r"pul-[a-f0-9]{40}", after=_WORD),
    _token("terraform-token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}"),
    _token("facebook-token", r"EAA[CGM][A-Za-z0-9]{60,}", after=_WORD),
    _token(
        "square-token", r"(?:sq0atp-[A-Za-z0-9_-]{22}|sq0csp-[A-Za-z0-9_-]{43}|EAAA[A-Za-z0-9_-]{60})", after=_TOKEN
    ),
    Rule(
        "braintree-token",
        compile_pattern(r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}"),
        after=_WORD,
    ),
    _token("fcm-key", r"AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,}"),
    Rule(
        "url-password",
        compile_pattern(r":(?:\\?/){2}[^\s:/@'\"<>\\]{0,256}:(?P<secret>[^\s/'\"<>\\]{1,256})@"),
        _url_password_ok,
        boundary=False,
    ),  # scheme://user:password@host, scheme://:password@host, and JSON's https:\/\/user:password@host
    # The auth scheme is case-insensitive (RFC 9110): HTTP/2 tools print "authorization: bearer …".
    Rule("bearer-token", compile_pattern(r"(?i:bearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{20,}=*)")),
    Rule(
        "basic-auth",
        compile_pattern(
            r"(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic)[ \t]+(?P<secret>[A-Za-z0-9+/]{4,}={0,2})"
        ),
        after=_B64,
    ),
    Rule(
        "bearer-token",
        compile_pattern(rf"{_AUTHORIZATION}(?i:bearer)[ \t]+(?P<secret>{_CREDENTIAL})"),
        _header_value_ok,
    ),  # a short bearer token in an Authorization header
    Rule(
        "secret",
        compile_pattern(
            rf"{_AUTHORIZATION}(?i:token|bot|sso-key|api-?key|key|hmac|jwt|splunk|ghtoken|oauth)[ \t]+"
            rf"(?P<secret>{_CREDENTIAL})"
        ),
        _header_value_ok,
    ),  # Authorization: token X (GitHub), Bot X (Discord), SSWS X, …
    Rule(
        "secret",
        compile_pattern(
            rf"{_AUTHORIZATION}(?i:digest|negotiate|ntlm|aws4-hmac-sha256|hawk|ssws|signature)[ \t]+"
            r"(?P<secret>[^\r\n]{4,1000})"
        ),
    ),  # a scheme with parameters: the rest of the header
    Rule(
        "secret",
        compile_pattern(r"(?:(?i:cookie)[ \t]*:|--cookie)[ \t]*[\"']?(?P<secret>[^\s=;,\"']+=[^\r\n\"']+)"),
    ),  # Cookie: and Set-Cookie: headers, curl --cookie
    Rule(
        "password",
        compile_pattern(r"(?:-u[ \t]*|--user[ \t=]+)[\"']?[^\s:\"'$]+:(?P<secret>[^\s\"']{3,})"),
        _user_password_ok,
    ),  # curl -u user:password
    Rule(
        "password",
        compile_pattern(
            r"(?:mysql|mysqldump|mysqladmin|mysqlsh|mysqlimport|mariadb)(?:[ \t][^\n]*?)?[ \t]-p"
            r"(?:\"(?P<secret_q>[^\"\n]+)\"|'(?P<secret_s>[^'\n]+)'|(?P<secret>[^\s\"'-][^\s\"']*))"
        ),
        _any_value_ok,
    ),  # mysql -pPASSWORD, -p'PASSWORD'
    Rule(
        "password",
        compile_pattern(
            r"redis-cli(?:[ \t][^\n]*?)?[ \t](?:-a|--pass)[ \t]+"
            r"(?:\"(?P<secret_q>[^\"\n]+)\"|'(?P<secret_s>[^'\n]+)'|(?P<secret>[^\s\"'-][^\s\"']*))"
        ),
        _any_value_ok,
    ),  # redis-cli -a PASSWORD
    Rule(
        "password",
        compile_pattern(
            r"sshpass[ \t]+(?:-[A-Za-z][ \t]+)*-p[ \t]*"
            r"(?:\"(?P<secret_q>[^\"\n]+)\"|'(?P<secret_s>[^'\n]+)'|(?P<secret>[^\s\"']+))"
        ),
        _any_value_ok,
    ),  # sshpass -p PASSWORD
    Rule(
        "password",
        compile_pattern(
            r"(?m:^[ \t]*[^\s:#][^\s:]*:(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:(?P<secret>[^\s:][^\s]*)[ \t]*\r?$)"
        ),
        _user_password_ok,
        boundary=False,
    ),  # a .pgpass line: host:port:database:user:password
    Rule(
        "password",
        compile_pattern(
            r"(?:machine[ \t]+(?:[A-Za-z0-9_-]+\.[A-Za-z0-9_.-]+|localhost|\[[0-9a-fA-F:]+\])|default)"
            r"(?:\s+(?:login|account|port|protocol|user)[ \t]+\S+)*\s+password[ \t]+"
            r"(?P<secret>\S+)"
        ),
        _user_password_ok,
    ),  # a .netrc entry: machine HOST login USER password PASSWORD, on one line or several
    Rule(
        "password",
        compile_pattern(rf"--(?:[a-z0-9]+-)*(?:password|passwd|pass|pwd|passphrase){_FLAG_VALUE}"),
        _flag_value_ok,
    ),  # --password PASSWORD, --db-password=PASSWORD
    Rule(
        "secret",
        compile_pattern(
            rf"--(?:[a-z0-9]+-)*(?:token|secret|api-key|apikey|access-key|secret-key|client-secret|auth-token)"
            rf"{_FLAG_VALUE}"
        ),
        _flag_value_ok,
    ),
)
