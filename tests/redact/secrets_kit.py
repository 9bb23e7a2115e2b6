"""Planted secrets of every kind the redactor knows, and a session that holds them where real ones turn up."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.helpers.sessions import SessionBuilder

# kind -> a realistic secret of that format (all made up; none is a live credential).
PLANTED: dict[str, str] = {
    "anthropic-key": "sk-ant-api03-Zq8xW2vLk9PmRt4YhN6cB1dF3gJ5sA7eU0iO-Lp_Kj2Hq4Wm6Xn8",
    "openai-key": "sk-proj-Qw3eRt5yUi7oPa9sDf1gHj3kLz5xCv7bNm9qWe1rTy3uIo5pAs7dFg9hJk1lZx3cVb5n",
    "github-token": "ghp_R2d4F6h8J0k2L4z6X8c0V2b4N6m8Q0w2E4r6",
    "gitlab-token": "glpat-Hx7Kp2Wq9Lm4Rt6Yv3Zn",
    "slack-token": "xoxb-246813579024-1357924680135-Qm4Wn8Er2Ty6Ui0Op3As7Df1",
    "stripe-key": "sk_live_51Mz9Qx7Rw5Ty3Ui1Op8As6Df4Gh2Jk",
    "aws-access-key": "AKIAZ7Q3WX5RT9YU2PLM",
    "aws-secret-key": "Xk9/Qw3eRt5yUi7oPa9sDf1gHj3kLz5xCv7bNm9+",
    "google-api-key": "AIzaSyD4f6H8j0K2l4Z6x8C0v2B4n6M8q0W2e4R",
    "jwt": (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwicm9sZSI6ImFkbWluIn0."
        "7Hq2Wm9Xn4Kp8Rt3Yv6Zc1Lf5Jd0Ga"
    ),
    "private-key": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
        "QyNTUxOQAAACBm7Q2x9Wk3Lp5Rt8Yv1Zc4Jd6Ga0Hq2Wm9Xn4Kp8Rt3AAAAJgAAAAAAAAAA\n"
        "-----END OPENSSH PRIVATE KEY-----"
    ),
    "url-password": "Pg-Pa55w0rd-7731",
    "password": "hunter2-Corr3ct-Horse",
    "secret": "f3a9c1e7b5d2a8c4e6f0b1d3a5c7e9f2",
    "bearer-token": "tok_9Hq2Wm4Xn6Kp8Rt0Yv2Zc4Lf6Jd8Ga",
    "huggingface-token": "hf_Qw3eRt5yUi7oPa9sDf1gHj3kLz5xCv7bNm",
    "npm-token": "npm_Qw3eRt5yUi7oPa9sDf1gHj3kLz5xCv7bNm9q",
}


# How each secret appears in a session: a pasted key, an .env read by a tool, a config file, command output.
def texts() -> dict[str, str]:
    p = PLANTED
    return {
        "user": f"Use this key for the deploy: {p['anthropic-key']} and the OpenAI one {p['openai-key']}.",
        "env": (
            "# .env\n"
            f"GITHUB_TOKEN={p['github-token']}\n"
            f"GITLAB_TOKEN={p['gitlab-token']}\n"
            f"SLACK_BOT_TOKEN={p['slack-token']}\n"
            f"STRIPE_SECRET_KEY={p['stripe-key']}\n"
            f"AWS_ACCESS_KEY_ID={p['aws-access-key']}\n"
            f"AWS_SECRET_ACCESS_KEY={p['aws-secret-key']}\n"
            f"GOOGLE_API_KEY={p['google-api-key']}\n"
            f"DATABASE_URL=postgres://app:{p['url-password']}@db.internal:5432/app\n"
            f"DB_PASSWORD={p['password']}\n"
            f"HF_TOKEN={p['huggingface-token']}\n"
            f"NPM_TOKEN={p['npm-token']}\n"
        ),
        "config": f'{{"client": {{"api_key": "{p["secret"]}", "session": "{p["jwt"]}"}}}}',
        "key": f"$ cat ~/.ssh/id_ed25519\n{p['private-key']}\n",
        "curl": f"$ curl -H 'Authorization: Bearer {p['bearer-token']}' https://api.internal/v1/me\n{{\"ok\": true}}",
    }


# Ordinary text that must come through unmasked.
ORDINARY = {
    "lockfile": (
        'lodash@^4.17.21:\n  version "4.17.21"\n  resolved "https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz'
        '#679591c564c3bffaae8454cf0b3df370c3d6911c"\n  integrity sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrs'
        "Q+LFTGHVxVjcXPs17LhbZVGedAJv8XZ1tvj5FvSg==\n"
    ),
    "package-lock": '"integrity": "sha1-PXz0Rk22RG6mRL9LOVB/mFEAjo0=", "resolved": "https://registry.npmjs.org/a/-/a-1.0.0.tgz"',
    "uuid": "session 550e8400-e29b-41d4-a716-446655440000 and 6fa459ea-ee8a-3ca4-894e-db77e160355e",
    "image": (
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJ"
        "RU5ErkJggg=="
    ),
    "git": "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nAuthor: A <a@example.com>\nMerge: 1a2b3c4 5d6e7f8",
    "code": (
        "def login(token: str, password: str) -> Session:\n"
        "    api_key = os.environ['API_KEY']\n"
        "    secret = settings.SECRET\n"
        "    max_tokens = 4096\n"
        "    token = get_token(user)\n"
        "    password = request.form['password']\n"
        '    headers = {"Authorization": f"Bearer {token}"}\n'
        "    tokenizer = 'cl100k_base'\n"
        "    return Session(token=token, auth=auth)\n"
    ),
    "template": 'API_KEY=${OPENAI_API_KEY}\npassword: "<your-password>"\nTOKEN=changeme\nSECRET=xxxxxxxx',
    "urls": "git clone https://github.com/owner/repo.git; see https://user@host.example.com/path?x=1",
    "sha256": "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
}


def secrets_session(path: Path) -> Path:
    """A session whose early turns hold every planted secret (and ordinary text), then enough turns to compact."""
    t = texts()
    sb = SessionBuilder()
    sb.user(t["user"] + " " + "u" * 200)
    sb.assistant("Reading the config.", tool_calls=[("c1", "read", {"path": ".env"})])
    sb.tool_result("c1", "read", t["env"])
    sb.assistant("And the client config.", tool_calls=[("c2", "read", {"path": "config.json"})])
    sb.tool_result("c2", "read", t["config"])
    sb.assistant("The deploy key.", tool_calls=[("c3", "bash", {"command": "cat ~/.ssh/id_ed25519"})])
    sb.tool_result("c3", "bash", t["key"])
    sb.assistant("Checking the API.", tool_calls=[("c4", "bash", {"command": "curl"})])
    sb.tool_result("c4", "bash", t["curl"])
    sb.assistant("Lockfile and code.", tool_calls=[("c5", "read", {"path": "yarn.lock"})])
    sb.tool_result("c5", "read", "\n".join(ORDINARY.values()))
    sb.assistant("Installing.", tool_calls=[("c6", "bash", {"command": "npm install"})])
    sb.tool_result("c6", "bash", "\n".join(f"added package-{n} in {n % 7}s" for n in range(600)))
    sb.assistant(f"Noted. I will reuse {PLANTED['github-token']} for the push.")
    for i in range(5):
        sb.user(f"Later turn {i}: check src/late{i}.py " + "l" * 400)
        sb.assistant(f"late{i} is fine " + "k" * 400)
    return sb.write(path)


# ---------------------------------------------------------------------------------------------------------------
# A corpus of the formats secrets come in, each planted the way it turns up, and of look-alikes that must stay.


def fake(alphabet: str, n: int, seed: int) -> str:
    """n characters of ``alphabet``, the same for the same seed (made-up secrets, none a live credential)."""
    import random

    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def _lines(text: str, width: int = 64) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


def _u_escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in text)


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # the placeholder kind it is masked as
    secret: str  # as the text holds it; no line of it (nor its JSON-decoded form) may be sent
    text: str  # the secret where it turns up


_ANTHROPIC_WRAPPED = "sk-ant-api03-" + fake(URLSAFE, 95, 1)
_PUTTY_PRIVATE = _lines(fake(B64, 14 * 64, 2)) + "\nPrivate-MAC: " + fake(HEX, 64, 3)
_SSH2_BODY = _lines(fake(B64, 12 * 70, 4), 70)
_PEM_BODY = _lines("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ" + fake(B64, 14 * 64, 5))
_GITHUB_ESCAPED = "ghp_" + fake(ALNUM, 36, 6)
_ANTHROPIC_ESCAPED = "sk-ant-api03-" + fake(ALNUM, 90, 7)


def _cases() -> list[Case]:
    c = [
        # Keyword glued on, camelCase keys in JSON and code (the README's promise: env files, JSON, YAML, code).
        Case("glued-env", "password", "Pg-Secr3t-2291", "$ PGPASSWORD=Pg-Secr3t-2291 psql -h db.internal app"),
        Case("glued-token", "secret", "Gt9Hq2Wm4Xn6Kp8Rt0Yv2Zc", "export GITHUBTOKEN=Gt9Hq2Wm4Xn6Kp8Rt0Yv2Zc"),
        Case("json-camel-password", "password", "Db-Pa55-Wd-8812", '{"dbPassword": "Db-Pa55-Wd-8812", "port": 5432}'),
        Case("json-camel-token", "secret", "at_7Hq2Wm9Xn4Kp8Rt3Yv6Zc1", '{"accessToken":"at_7Hq2Wm9Xn4Kp8Rt3Yv6Zc1"}'),
        Case("code-this", "secret", "Sk3y-Zq8xW2vLk9PmRt4Y", "    this.secretKey = 'Sk3y-Zq8xW2vLk9PmRt4Y';"),
        Case("code-self", "password", "Pw-self-7731x", '        self.password = "Pw-self-7731x"'),
        Case(
            "js-apikey",
            "secret",
            "ak-4Rt6Yv8Zc0Lf2Jd4Ga6",
            "const client = new Api({ apiKey: 'ak-4Rt6Yv8Zc0Lf2Jd4Ga6' });",
        ),
        Case("env-db-pass", "password", "Env-Pass-8821", "DB_PASS=Env-Pass-8821"),
        Case("env-token", "secret", "et-5Hq2Wm4Xn6Kp8", "token=et-5Hq2Wm4Xn6Kp8"),
        Case("yaml-password", "password", "Yaml-Pw-4471x", "database:\n  user: app\n  password: Yaml-Pw-4471x\n"),
        Case("yaml-token", "secret", "yt-9Hq2Wm4Xn6Kp8Rt", 'slack:\n  token: "yt-9Hq2Wm4Xn6Kp8Rt"\n'),
        Case("kwarg-password", "password", "Kw-Pass-9931", 'connect(host="db", password="Kw-Pass-9931")'),
        Case(
            "docker-auth",
            "secret",
            "ZGVwbG95OlJlZy1QdzQ0MQ==",
            '{"auths": {"ghcr.io": {"auth": "ZGVwbG95OlJlZy1QdzQ0MQ=="}}}',
        ),
        # Credentials in commands and headers.
        Case(
            "basic-auth",
            "basic-auth",
            "ZGVwbG95OkJhc2ljLVB3LTU1MTI=",
            "Authorization: Basic ZGVwbG95OkJhc2ljLVB3LTU1MTI=",
        ),
        Case("curl-u", "password", "Curl-Pw-7731", "$ curl -u deploy:Curl-Pw-7731 https://api.internal/v1/me"),
        Case("mysql-p", "password", "My-Sql-Pw-4410", "$ mysql -u root -pMy-Sql-Pw-4410 app < dump.sql"),
        Case(
            "flag-password", "password", "Flag-Pw-5521", "$ docker login --username bot --password Flag-Pw-5521 ghcr.io"
        ),
        Case("flag-token", "secret", "Flag-Tok-6612x", "$ vault login --token=Flag-Tok-6612x"),
        # URL passwords.
        Case("url-no-user", "url-password", "Redis-Pw-6610", "REDIS_URL=redis://:Redis-Pw-6610@cache.internal:6379/0"),
        Case(
            "url-json-escaped",
            "url-password",
            "Esc-Pw-3390",
            '{"remote": "https:\\/\\/deploy:Esc-Pw-3390@git.internal\\/team\\/repo.git"}',
        ),
        # The key formats of the providers picompact calls, and other issuers.
        Case("openrouter", "openrouter-key", k := "sk-or-v1-" + fake(HEX, 64, 10), f"OPENROUTER_API_KEY={k}"),
        Case("groq", "groq-key", k := "gsk_" + fake(ALNUM, 52, 11), f"client = Groq(api_key={k!r})"),
        Case("xai", "xai-key", k := "xai-" + fake(ALNUM, 80, 12), f"XAI_API_KEY={k}"),
        Case("deepseek", "deepseek-key", k := "sk-" + fake(HEX, 32, 13), f"Use the DeepSeek key {k} for this."),
        Case(
            "slack-app", "slack-token", k := "xapp-1-A0123456789-1234567890123-" + fake(HEX, 64, 14), f"SLACK_APP={k}"
        ),
        Case(
            "azure-account",
            "azure-key",
            k := fake(B64, 86, 15) + "==",
            f"AZURE_STORAGE=DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={k};EndpointSuffix=core.windows.net",
        ),
        Case(
            "azure-sas",
            "azure-key",
            k := fake(B64, 43, 16) + "=",
            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
            f"SharedAccessKey={k}",
        ),
        Case(
            "npm-uuid",
            "npm-token",
            "3f2b8c1e-9a4d-4e7f-b6c5-0d1a2e3f4b5c",
            "//registry.npmjs.org/:_authToken=3f2b8c1e-9a4d-4e7f-b6c5-0d1a2e3f4b5c",
        ),
        Case(
            "google-oauth", "google-oauth-secret", k := "GOCSPX-" + fake(URLSAFE, 28, 17), f'{{"client_secret": "{k}"}}'
        ),
        Case("age", "age-key", k := "AGE-SECRET-KEY-1" + fake(BECH32, 58, 18), f"# created: 2026-01-01\n{k}\n"),
        # Private keys in other shapes than a PEM block.
        Case(
            "putty",
            "private-key",
            _PUTTY_PRIVATE,
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\n"
            "AAAAC3NzaC1lZDI1NTE5AAAAIHn8tWq1w2e3r4t5y6u7i8o9p0a1s2d3f4g5h6j7k8l9\nAAAA\n"
            f"Private-Lines: 14\n{_PUTTY_PRIVATE}\n",
        ),
        Case(
            "ssh2",
            "private-key",
            _SSH2_BODY,
            f'---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: "deploy key"\n{_SSH2_BODY}\n'
            "---- END SSH2 ENCRYPTED PRIVATE KEY ----\n",
        ),
        Case("pem-body", "private-key", _PEM_BODY, f"Here is the key body I copied:\n{_PEM_BODY}\nDoes it look right?"),
        # Escaped, wrapped, spaced.
        Case("u-escaped", "github-token", _u_escaped(_GITHUB_ESCAPED), f'{{"token": "{_u_escaped(_GITHUB_ESCAPED)}"}}'),
        Case(
            "u-escaped-dash",
            "anthropic-key",
            k := _ANTHROPIC_ESCAPED.replace("-", "\\u002d"),
            f'{{"env": {{"ANTHROPIC_API_KEY": "{k}"}}}}',
        ),
        Case(
            "wrapped",
            "anthropic-key",
            k := _ANTHROPIC_WRAPPED[:60] + "\n" + _ANTHROPIC_WRAPPED[60:],
            f"$ echo $ANTHROPIC_API_KEY\n{k}\n$ ",
        ),
        Case(
            "passphrase-env",
            "password",
            "correct horse battery staple",
            'GPG_PASSPHRASE="correct horse battery staple"',
        ),
        Case(
            "passphrase-yaml",
            "password",
            "tulip orbit canyon 42 maple",
            "signing:\n  passphrase: tulip orbit canyon 42 maple\n",
        ),
        Case("passphrase-json", "password", "my dog has seven fleas", '{"password": "my dog has seven fleas"}'),
    ]
    return c


CASES: tuple[Case, ...] = tuple(_cases())

# Look-alikes: text that must come through unmasked, character for character.
LOOKALIKES: dict[str, str] = {
    "git": (
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\n"
        "a1b2c3d Fix the parser\nMerge: 1a2b3c4 5d6e7f8\ngit checkout 3f2b8c1e9a4d4e7fb6c50d1a2e3f4b5c6d7e8f90"
    ),
    "hashes": (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
        'integrity "sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs17LhbZVGedAJv8XZ1tvj5FvSg=="\n'
        "md5 d41d8cd98f00b204e9800998ecf8427e  empty.txt"
    ),
    "uuids": (
        "request 550e8400-e29b-41d4-a716-446655440000 failed\n"
        '{"id": "6fa459ea-ee8a-3ca4-894e-db77e160355e", "session_id": "3f2b8c1e-9a4d-4e7f-b6c5-0d1a2e3f4b5d"}'
    ),
    "image": "data:image/png;base64," + "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ" + fake(B64, 900, 40) + "==",
    "base64-blob": fake(B64, 2000, 41),
    "code": (
        "import getpass, os\n"
        "password = getpass()\n"
        "password = getpass.getpass('Password: ')\n"
        'token = os.environ["GITHUB_TOKEN"]\n'
        'api_key = os.environ.get("API_KEY")\n'
        "secret = settings.SECRET_KEY\n"
        "self.password = password\n"
        "max_tokens = 4096\n"
        "const token = await getToken();\n"
        'tokenizer = AutoTokenizer.from_pretrained("gpt2")\n'
        "auth = HTTPBasicAuth(user, password)\n"
        "def check_token(token: str) -> bool:\n"
        "    if not password:\n"
        '        raise ValueError("Password is required")\n'
        'token_url = "https://oauth2.googleapis.com/token"\n'
        "PASSWORD_FILE=/run/secrets/db_password\n"
        "SECRET_NAME=app-credentials-v2\n"
    ),
    "ui": (
        '{"passwordHint": "At least 8 characters", "password_label": "Enter your password",\n'
        ' "tokenType": "Bearer", "error": "Invalid token", "secretName": "db-creds"}'
    ),
    "shell": (
        "PWD=/home/user/project\nOLDPWD=/home/user\n"
        'echo "$TOKEN" | docker login ghcr.io --username bot --password-stdin\n'
        'curl -u "$USER:$PASS" https://api.internal\n'
        "docker run -u 1000:1000 image\n"
        "mysql -u root -p app\n"
        "git push -u origin main\n"
        "usage: tool [--password PASSWORD] [--token TOKEN]\n"
        "export TOKEN=$(cat ~/.token)"
    ),
    "public-keys": (
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHn8tWq1w2e3r4t5y6u7i8o9p0a1s2d3f4g5h6j7k8l9 deploy@host\n"
        "-----BEGIN PUBLIC KEY-----\n"
        "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwyoxigaa4jTmPE3dVKFpeahG\n"
        "-----END PUBLIC KEY-----"
    ),
    "prose": (
        "Basic usage: run the tool with a session path.\nThe token budget is 8,192 per call; authorization "
        "happens in the proxy. Pass the key file with -i."
    ),
}


def case_leaks(text: str) -> list[str]:
    """The cases any line of whose secret (or of its JSON-decoded form) is in text."""
    import json

    leaks = []
    for case in CASES:
        forms = {case.secret, json.loads(f'"{case.secret}"') if "\\u" in case.secret else case.secret}
        if any(line in text for form in forms for line in form.splitlines() if len(line) >= 6):
            leaks.append(case.name)
    return leaks


def corpus_session(path: Path) -> Path:
    """A session holding every case (pasted by the user, read from files, printed by commands) and every
    look-alike, then enough turns to compact."""
    sb = SessionBuilder()
    sb.user("Set up the deploy. " + CASES[0].text + " " + "u" * 200)
    for i, case in enumerate(CASES):
        if i % 3 == 0:
            sb.user(f"Here is what I have ({case.name}):\n{case.text}")
            sb.assistant(f"Noted ({case.name}).")
        else:
            sb.assistant(f"Reading {case.name}.", tool_calls=[(f"c{i}", "bash", {"command": f"cat {case.name}"})])
            sb.tool_result(f"c{i}", "bash", case.text)
    for name, text in LOOKALIKES.items():
        sb.assistant(f"Looking at {name}.", tool_calls=[(f"l_{name}", "read", {"path": name})])
        sb.tool_result(f"l_{name}", "read", text)
    sb.assistant("Installing.", tool_calls=[("inst", "bash", {"command": "npm install"})])
    sb.tool_result("inst", "bash", "\n".join(f"added package-{n} in {n % 7}s" for n in range(600)))
    for i in range(5):
        sb.user(f"Later turn {i}: check src/late{i}.py " + "l" * 400)
        sb.assistant(f"late{i} is fine " + "k" * 400)
    return sb.write(path)
