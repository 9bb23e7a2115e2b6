"""Planted secrets of every kind the redactor knows, and a session that holds them where real ones turn up."""

from __future__ import annotations

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
