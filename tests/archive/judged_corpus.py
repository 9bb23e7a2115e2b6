"""A judged corpus for ``picompact search``: sessions as Pi users write them (decisions, error reports, paths,
identifiers, misspellings; English, Korean, Japanese, Chinese), with the entries that answer each query decided
here, while the sessions are built, never from what a ranking returns.

Every story is one session of a project: the user says or decides something (or the agent concludes it), and then
the work goes on as it does in real sessions: the agent greps, reads and edits files that repeat the same words,
tools print logs that repeat them more, the user mentions some of them again in passing. Around the stories,
sessions of the same projects made of that kind of work alone (``_noise``), seeded, so the corpus is the same on
every run. ``build(root)`` writes the sessions under ``root`` (Pi's layout) and returns the judged queries.

Used by ``tests/archive/test_judged_search.py`` (the thresholds) and ``bench/search_quality.py`` (the figures).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from random import Random

from tests.helpers.sessions import SessionBuilder


@dataclass
class Judged:
    """A query and the entries that answer it (any of them first is a right answer)."""

    query: str
    kind: str  # decision, error, path, identifier, conclusion, typo-in-text, korean, japanese, chinese
    answers: set[tuple[str, str]] = field(default_factory=set)  # (session file, entry id)


@dataclass
class Story:
    """One session: what the user or agent says (``say``/``conclude``, marked as answers), then the work."""

    project: str
    builder: SessionBuilder
    path: Path
    rng: Random
    marks: dict[str, list[str]] = field(default_factory=dict)

    def mark(self, key: str, entry_id: str) -> None:
        self.marks.setdefault(key, []).append(entry_id)

    def user(self, text: str, key: str | None = None) -> str:
        entry = self.builder.user(text)
        if key:
            self.mark(key, entry)
        return entry

    def reply(self, text: str, key: str | None = None) -> str:
        entry = self.builder.assistant(text)
        if key:
            self.mark(key, entry)
        return entry

    def grep(self, pattern: str, hits: list[str]) -> None:
        """The agent greps; the output lists every line that holds the words, in many files."""
        lines = []
        for n, line in enumerate(hits):
            lines.append(f"src/{self.rng.choice(_DIRS)}/{self.rng.choice(_FILES)}:{n * 7 + 3}:    {line}")
        self.builder.tool("grep", {"pattern": pattern, "path": "."}, "\n".join(lines))

    def read(self, path: str, text: str) -> None:
        self.builder.tool("read", {"path": path}, text)

    def edit(self, path: str, old: str, new: str) -> None:
        self.builder.tool("edit", {"path": path, "oldText": old, "newText": new}, f"Successfully edited {path}")

    def bash(self, command: str, output: str, failed: bool = False) -> None:
        self.builder.tool("bash", {"command": command}, output, is_error=failed)

    def work(self, words: list[str], rounds: int = 2) -> None:
        """What follows a decision: greps, reads, edits and logs that repeat ``words`` more than it did."""
        for _ in range(rounds):
            phrase = " ".join(words)
            self.grep(words[0], [f"// {phrase}: {self.rng.choice(_FILLER)} {w}" for w in words * 4])
            self.edit(
                f"src/{self.rng.choice(_DIRS)}/{self.rng.choice(_FILES)}",
                f"{phrase} {self.rng.choice(_FILLER)}",
                f"{phrase} {' '.join(words)} {self.rng.choice(_FILLER)}",
            )
            self.bash(
                self.rng.choice(_COMMANDS),
                "\n".join(f"[{i:02d}] {self.rng.choice(_FILLER)} {phrase} {w}" for i, w in enumerate(words * 5)),
            )
            self.builder.assistant(f"Checking {words[-1]} again.")


# Words of the corpus in scripts without spaces, and Korean, each inside longer tokens somewhere (particles,
# compounds, sentences without spaces): a word search must find every entry `-F` finds for each.
CJK_WORDS = [
    "배포",
    "세션",
    "캐시",
    "금요일",
    "데이터",
    "테스트",
    "キャッシュ",
    "テスト",
    "方針",
    "数据库",
    "日志",
    "连接池",
    "事务",
]

_DIRS = ["server", "client", "lib", "api", "worker", "config", "db", "ui"]
_FILES = ["index.ts", "main.py", "util.ts", "handler.go", "store.rs", "app.tsx", "settings.toml", "README.md"]
_COMMANDS = ["pnpm test", "make check", "cargo test", "pytest -q", "go test ./...", "npm run build", "docker logs api"]
_FILLER = [
    "TODO revisit",
    "see the ticket",
    "updated",
    "from the config",
    "as before",
    "per review",
    "WARN deprecated",
    "INFO ok",
    "set in CI",
]


def _story(root: Path, project: str, name: str, rng: Random) -> Story:
    folder = root / "sessions" / f"--home-dev-{project}--"
    folder.mkdir(parents=True, exist_ok=True)
    builder = SessionBuilder(cwd=f"/home/dev/{project}", session_id=f"{project}-{name}")
    return Story(project, builder, folder / f"2026-01-01T00-00-00_{name}.jsonl", rng)


def _stories(root: Path, rng: Random) -> tuple[list[Story], list[tuple[str, str, list[str]]]]:
    """The stories, and the queries: (query, kind, the marks that answer it)."""
    stories: list[Story] = []
    queries: list[tuple[str, str, list[str]]] = []

    def new(project: str, name: str) -> Story:
        story = _story(root, project, name, rng)
        stories.append(story)
        return story

    def ask(query: str, kind: str, *keys: str) -> None:
        queries.append((query, kind, list(keys)))

    # --- English: decisions, identifiers, paths --------------------------------------------------------------
    s = new("shop", "pnpm")
    s.user("pnpm install is slow on CI again")
    s.user("Use pnpm for the monorepo, not npm: the lockfile must stay pnpm-lock.yaml", key="pnpm")
    s.work(["pnpm", "monorepo", "workspace"])
    s.read("pnpm-workspace.yaml", "packages:\n  - 'apps/*'\n  - 'packages/*'\n# pnpm monorepo workspace\n" * 3)
    s.work(["pnpm-lock.yaml", "lockfile"])
    s.user("ok run the pnpm tests")
    ask("pnpm monorepo", "decision", "pnpm")
    ask("pnpm-lock.yaml", "path", "pnpm")

    s = new("shop", "merge")
    s.user("From now on we squash merge every PR into main; no merge commits on main.", key="squash")
    s.work(["squash", "merge", "main"])
    s.bash("git log --oneline", "\n".join(f"{i:07x} Merge branch 'feature-{i}' into main" for i in range(40)))
    s.reply("I squashed the branch and pushed it.")
    ask("squash merge", "decision", "squash")

    s = new("shop", "postgres")
    s.user("Stick with Postgres 16 in production until pgvector supports 17.", key="pg16")
    s.work(["Postgres", "16", "pgvector"])
    s.bash("psql -c 'select version()'", "PostgreSQL 16.2 on x86_64-pc-linux-gnu\n" * 3)
    s.user("is pgvector installed on staging?")
    s.bash(
        "docker compose logs db",
        "\n".join(f"db-1 | connect ECONNREFUSED 127.0.0.1:5432 attempt {i}" for i in range(30)),
        failed=True,
    )
    s.reply(
        "ECONNREFUSED on port 5432 means Postgres is not running in the container: start it with "
        "`docker compose up -d db` before the migrations.",
        key="econn",
    )
    s.work(["ECONNREFUSED", "5432"])
    ask("Postgres 16", "decision", "pg16")
    ask("ECONNREFUSED 5432", "error", "econn")

    s = new("tools", "rename")
    s.user("rename readHeader to parseSessionHeader everywhere, and keep the old name out of the docs", key="rename")
    for _ in range(3):
        s.grep(
            "parseSessionHeader",
            [f"export function parseSessionHeader(line) // parseSessionHeader {i}" for i in range(8)],
        )
        s.edit("src/session/header.ts", "function readHeader(", "function parseSessionHeader(")
    s.bash("pnpm test", "✓ parseSessionHeader parses v3\n✓ parseSessionHeader rejects v0\n" * 6)
    ask("parseSessionHeader", "identifier", "rename")

    s = new("tools", "auth")
    s.user("the bug is in src/server/auth/session.ts, don't touch the middleware", key="authpath")
    for _ in range(2):
        s.read("src/server/auth/session.ts", "// src/server/auth/session.ts\nexport const session = {}\n" * 10)
        s.edit("src/server/auth/session.ts", "const ttl = 60", "const ttl = 3600")
        s.grep("session", [f"src/server/auth/session.ts imports session from auth {i}" for i in range(10)])
    s.bash("tsc --noEmit", "src/server/auth/session.ts(14,3): error TS2322\nsrc server auth session ts\n" * 4, True)
    ask("src/server/auth/session.ts", "path", "authpath")

    s = new("tools", "retries")
    s.user("set max_retries to 5 in config/worker.toml, 3 is too low for the flaky S3 endpoint", key="retries")
    s.bash(
        "tail -n 40 worker.log",
        "\n".join(f"ERROR upload failed: max retries (3) exceeded for part {i}" for i in range(40)),
    )
    s.work(["max", "retries", "worker"])
    s.edit("config/worker.toml", "max_retries = 3", "max_retries = 5")
    ask("max_retries", "identifier", "retries")

    s = new("tools", "flaky")
    s.user("test_upload_retry is flaky on CI, skip it for now and open an issue", key="flaky")
    s.bash(
        "pytest -q tests/test_upload.py",
        "\n".join(f"FAILED tests/test_upload.py::test_upload retry {i} - TimeoutError" for i in range(25)),
        True,
    )
    s.work(["test_upload_retry", "flaky", "skip"])
    ask("test_upload_retry flaky", "identifier", "flaky")

    s = new("web", "dashboard")
    s.user(
        "the dashboard crashes with TypeError: Cannot read properties of undefined (reading 'map') when the list is "
        "empty",
        key="typeerror",
    )
    s.bash(
        "pnpm dev",
        "\n".join(
            "Uncaught TypeError: Cannot read properties of undefined (reading 'map')\n    at List (List.tsx:12)"
            for _ in range(12)
        ),
        True,
    )
    s.reply(
        "The crash comes from `items.map` on undefined when the API answers 204 with no body; I default `items` to "
        "[] in useOrders and the dashboard renders an empty state now.",
        key="typeerror",
    )
    s.work(["undefined", "map", "items"])
    ask('"Cannot read properties of undefined"', "error", "typeerror")
    ask("dashboard TypeError empty", "error", "typeerror")

    s = new("web", "images")
    s.user("sharp segfaults in CI since the runner upgrade, libvips version mismatch?", key="sharp")
    s.bash("pnpm build", "Segmentation fault (core dumped)\nsharp: libvips 8.15 expected 8.14\n" * 8, True)
    s.reply("Pinning sharp to 0.32.6, which bundles libvips 8.14, stops the segfault on the new runner.", key="sharp")
    s.work(["sharp", "libvips", "segfault"])
    ask("sharp segfault libvips", "error", "sharp")

    s = new("web", "leak")
    s.user("memory keeps growing on the orders page after a few minutes")
    s.work(["memory", "leak", "useWebSocket"])
    s.reply(
        "Root cause of the memory leak: the EventEmitter listeners added in useWebSocket are never removed on "
        "unmount, so every navigation adds another one. I return a cleanup from the effect now.",
        key="leak",
    )
    s.bash("node --inspect leak.js", "MaxListenersExceededWarning: Possible EventEmitter memory leak detected\n" * 10)
    ask("memory leak EventEmitter", "conclusion", "leak")

    s = new("web", "orders")
    s.user("the orders endpoint takes 4 seconds, find out why")
    s.bash(
        "tail log/development.log",
        "\n".join(f"  LineItem Load (0.4ms)  SELECT line_items WHERE order_id = {i}" for i in range(60)),
    )
    s.reply(
        "The slowness is an N+1 query in OrdersController#index: one SELECT per line item. `includes(:line_items)` "
        "brings it to two queries and 180 ms.",
        key="nplus1",
    )
    s.work(["OrdersController", "includes", "line_items"])
    ask("N+1 OrdersController", "conclusion", "nplus1")

    s = new("web", "dates")
    s.user("dont use the depreacted moment.js annymore, switch everything to date-fns", key="datefns")
    s.work(["moment", "date-fns", "format"])
    s.read("package.json", '{"dependencies": {"moment": "2.29.4", "date-fns": "3.0.0"}}')
    ask("moment.js date-fns", "typo-in-text", "datefns")
    ask("depreacted moment", "typo-in-text", "datefns")

    s = new("api", "migrations")
    s.user("teh migration must be reversibel, we roll back on every failed deploy", key="reversible")
    s.work(["migration", "rollback", "down"])
    s.bash("rails db:migrate:status", " up     20260101 Add orders index migration\n" * 20)
    ask("migration reversibel", "typo-in-text", "reversible")

    s = new("api", "secrets")
    s.user("Never commit .env files; secrets go in 1Password and CI reads them from there", key="secrets")
    s.work(["secrets", "env", "CI"])
    s.read(".gitignore", ".env\n.env.local\n# secrets\n")
    ask("1Password secrets", "decision", "secrets")

    s = new("api", "cloudrun")
    s.user("deploy to Cloud Run failed again")
    s.bash(
        "gcloud run deploy api",
        "ERROR: (gcloud.run.deploy) Image size exceeds the limit of 10 GB for Cloud Run\n" * 6,
        True,
    )
    s.reply(
        "The deploy failed because the Docker image exceeded the 10 GB Cloud Run limit; a multi-stage build "
        "brings it to 1.2 GB.",
        key="cloudrun",
    )
    s.work(["Cloud", "Run", "image", "limit"])
    ask("Cloud Run image limit", "conclusion", "cloudrun")

    s = new("api", "node")
    s.user("we're on Node 20 LTS; don't use features from Node 22 such as require(esm)", key="node")
    s.work(["Node", "22", "engines"])
    s.read(".nvmrc", "20\n")
    ask("Node 22", "decision", "node")

    s = new("api", "naming")
    s.user("call it retryWithBackoff, not retry2", key="backoff")
    for _ in range(3):
        s.edit("src/lib/retry.ts", "export function retry2(", "export function retryWithBackoff(")
        s.grep("retryWithBackoff", [f"retryWithBackoff(fn, {i}) // retryWithBackoff" for i in range(10)])
    ask("retryWithBackoff", "identifier", "backoff")

    s = new("api", "gateway")
    s.user("raise the gateway timeout to 30s, the export endpoint takes 20s", key="gateway")
    s.bash(
        "kubectl logs gateway",
        "\n".join(f"upstream timeout after 10s on /export (gateway) #{i}" for i in range(50)),
        True,
    )
    s.work(["gateway", "timeout", "30s"])
    ask("gateway timeout", "decision", "gateway")

    s = new("web", "lighthouse")
    s.user("why did the Lighthouse score drop to 61?")
    s.bash("npx lighthouse https://localhost:3000", "Performance: 61\nLargest Contentful Paint 6.1 s\n" * 5)
    s.reply(
        "The Lighthouse score dropped because the hero image is a 4 MB PNG; converted to WebP (220 KB) the score "
        "is back to 94.",
        key="webp",
    )
    s.work(["Lighthouse", "hero", "WebP"])
    ask("Lighthouse WebP", "conclusion", "webp")

    s = new("web", "staging")
    s.user("the staging URL is https://staging.acme.dev; use it for the e2e tests", key="staging")
    s.bash("pnpm e2e", "\n".join(f"GET https://staging.acme.dev/api/{i} 200" for i in range(40)))
    s.work(["staging", "e2e", "acme"])
    ask("staging.acme.dev", "path", "staging")

    s = new("shop", "lockfile")
    s.bash(
        "pnpm install --frozen-lockfile", "ERR_PNPM_OUTDATED_LOCKFILE  Cannot install with frozen-lockfile\n" * 4, True
    )
    s.reply(
        "ERR_PNPM_OUTDATED_LOCKFILE: package.json changed without the lockfile; run pnpm install and commit "
        "pnpm-lock.yaml.",
        key="outdated",
    )
    s.work(["lockfile", "frozen", "pnpm"])
    ask("ERR_PNPM_OUTDATED_LOCKFILE", "error", "outdated")

    # --- Korean ----------------------------------------------------------------------------------------------
    s = new("kr-app", "deploy")
    s.user("배포는 금요일에 하지 말자. 주말에 장애 나면 대응이 어렵다", key="friday")
    s.reply("배포 스크립트를 확인하겠습니다.")
    s.work(["배포", "스크립트", "deploy"])
    s.bash("./deploy.sh --dry-run", "배포 준비 중...\n배포 대상: api, web\n배포를 시작합니다\n" * 8)
    s.user("배포 로그 다시 보여줘")
    ask("금요일 배포", "korean", "friday")

    s = new("kr-app", "login")
    s.user("로그인 API는 JWT 대신 세션 쿠키를 쓰기로 했어", key="cookie")
    s.work(["session", "cookie", "JWT"])
    s.builder.tool(
        "edit", {"path": "src/auth.ts", "oldText": "jwt.sign(", "newText": "// 세션 쿠키를 설정\nsetCookie("}, "ok"
    )
    s.reply("세션 쿠키를 설정하는 코드로 바꿨습니다. 쿠키 만료는 7일입니다.")
    ask("세션 쿠키", "korean", "cookie")

    s = new("kr-app", "cache")
    s.user("Redis를 캐시로만 쓰고 영구 저장은 Postgres에 하자", key="redis")
    s.work(["Redis", "cache", "Postgres"])
    s.bash("redis-cli info", "redis_version:7.2.4\nused_memory:1024\n# Redis cache stats\n" * 10)
    ask("Redis 캐시", "korean", "redis")

    s = new("kr-app", "cron")
    s.user("새벽 작업이 한 시간 늦게 돌아요")
    s.bash("crontab -l", "0 3 * * * /app/bin/nightly\n# 크론 작업\n" * 5)
    s.reply(
        "원인은 타임존 설정입니다: 서버가 UTC인데 크론이 KST 기준으로 작성되어 있었습니다. TZ=Asia/Seoul을 넣었습니다.",
        key="tz",
    )
    s.work(["cron", "UTC", "KST"])
    ask("타임존 크론", "korean", "tz")

    s = new("kr-app", "seed")
    s.bash("pnpm test", "FAIL users.test.ts\n  expected 3 users, received 0\n" * 6, True)
    s.reply(
        "테스트가 실패한 이유는 시드 데이터가 없어서입니다. pnpm db:seed 를 테스트 전에 실행하도록 했습니다.",
        key="seed",
    )
    s.work(["seed", "test", "users"])
    ask("시드 데이터", "korean", "seed")

    s = new("kr-app", "users")
    s.user("src/api/users.ts 파일에서 에러 처리를 고쳐줘. 500 대신 404를 돌려줘야 해", key="users")
    s.read("src/api/users.ts", "export async function getUser(id) {\n  throw new Error('not found')\n}\n" * 6)
    s.work(["users", "error", "404"])
    ask("src/api/users.ts 에러", "korean", "users")

    # --- Japanese --------------------------------------------------------------------------------------------
    s = new("jp-app", "vitest")
    s.user("テストはVitestで書いてください。Jestは使わない方針です", key="vitest")
    s.work(["vitest", "jest", "test"])
    s.bash("pnpm vitest run", " ✓ src/a.test.ts (3)\n Test Files  1 passed\n vitest v1.2.0\n" * 8)
    ask("Vitest Jest", "japanese", "vitest")
    ask("使わない方針", "japanese", "vitest")

    s = new("jp-app", "cache")
    s.user("商品ページの表示が古いままです")
    s.bash("curl -I https://shop.example.jp", "cache-control: max-age=86400\nx-cache: HIT\n" * 5)
    s.reply("原因はキャッシュの有効期限です。TTLを86400秒から300秒に変更しました。", key="ttl")
    s.work(["cache", "TTL", "max-age"])
    ask("キャッシュ 有効期限", "japanese", "ttl")

    s = new("jp-app", "prod")
    s.user("本番環境のデータベースには直接接続しないでください。必ず読み取り専用のレプリカを使うこと", key="prod")
    s.work(["database", "replica", "readonly"])
    s.bash("psql $DATABASE_URL", "psql: 本番環境 データベース replica connected\n" * 3)
    ask("本番環境 データベース", "japanese", "prod")

    s = new("jp-app", "build")
    s.user("ビルドが失敗します: Module not found: Can't resolve 'fs'", key="fs")
    s.bash("pnpm build", "Module not found: Error: Can't resolve 'fs' in '/app/src'\n" * 10, True)
    s.reply("`fs` はブラウザにはありません。サーバー側のコードに移しました。", key="fs")
    s.work(["fs", "resolve", "webpack"])
    ask("ビルド Module not found", "japanese", "fs")

    # --- Chinese ---------------------------------------------------------------------------------------------
    s = new("cn-app", "db")
    s.user("我们决定使用PostgreSQL而不是MongoDB，因为需要事务", key="tx")
    s.work(["PostgreSQL", "MongoDB", "transaction"])
    s.bash("docker ps", "postgres:16   Up 3 hours\nmongo:7   Exited\n" * 5)
    ask("事务 PostgreSQL", "chinese", "tx")

    s = new("cn-app", "pool")
    s.user("高峰期接口超时")
    s.bash("tail app.log", "\n".join(f"WARN pool exhausted, waiting for connection {i}" for i in range(30)), True)
    s.reply("问题的原因是连接池太小，已经把连接池大小从5调整为20，超时没有再出现。", key="pool")
    s.work(["pool", "size", "timeout"])
    ask("连接池", "chinese", "pool")

    s = new("cn-app", "logs")
    s.user("日志统一用英文写，不要写中文日志", key="logs")
    s.work(["log", "english", "logger"])
    s.bash("grep -r logger src", "src/a.ts: logger.info('启动完成')\nsrc/b.ts: logger.warn('日志')\n" * 6)
    ask("日志 英文", "chinese", "logs")

    s = new("cn-app", "rename")
    s.user("把 user_id 改成 account_id，数据库和接口都要改", key="account")
    for _ in range(2):
        s.grep("user_id", [f"const account id = row.account_id ?? row.user_id // account {i}" for i in range(10)])
        s.edit("src/db/schema.ts", "user_id: integer", "account_id: integer")
    s.bash("psql -c '\\d accounts'", " account id | integer\n account_id | integer\n" * 5)
    ask("account_id", "chinese", "account")

    # --- Harder: the same words said in passing, or asked, by the user elsewhere -------------------------------
    s = new("shop", "slow")
    s.user("the pnpm monorepo build is slow today, check the cache")
    s.work(["build", "cache", "turbo"])
    s.user("and squash merge the fix when it is green")
    s.user("does Postgres 16 have the new vacuum settings?")
    s.user("세션 쿠키 만료는 며칠로 할까?")
    s.reply("7일이 일반적입니다. 세션 쿠키에 Secure와 HttpOnly를 붙이겠습니다.")
    s.user("连接池 是什么意思?")

    s = new("web", "lighthouse2")
    s.user("the Lighthouse score on mobile, is it WebP related too?")
    s.reply("Partly: the mobile score also suffers from render-blocking fonts.")
    ask("Lighthouse score", "conclusion", "webp")

    s = new("api", "memory")
    s.user("is the memory leak back? the pod restarted twice")
    s.reply("No: the restarts were OOM kills from the CSV export, not the EventEmitter leak fixed last week.")
    ask("EventEmitter leak", "conclusion", "leak")

    return stories, queries


_NOISE_USERS = [
    "run the tests again",
    "looks good, commit it",
    "what does this error mean?",
    "can you check the CI logs",
    "테스트 다시 돌려줘",
    "もう一度テストを実行してください",
    "再跑一次测试",
    "try again with verbose output",
]
_NOISE_WORDS = [
    "pnpm",
    "workspace",
    "timeout",
    "Postgres",
    "session",
    "cookie",
    "cache",
    "migration",
    "deploy",
    "image",
    "lockfile",
    "retries",
    "배포",
    "캐시",
    "세션",
    "キャッシュ",
    "データベース",
    "テスト",
    "数据库",
    "日志",
    "超时",
]


def _noise(root: Path, rng: Random, count: int) -> None:
    """Sessions of the same projects made of everyday work: tool output and replies that use the corpus's words."""
    for n in range(count):
        story = _story(
            root, rng.choice(["shop", "tools", "web", "api", "kr-app", "jp-app", "cn-app"]), f"noise{n}", rng
        )
        for _ in range(rng.randint(3, 8)):
            story.user(rng.choice(_NOISE_USERS))
            words = rng.sample(_NOISE_WORDS, 3)
            story.work(words, rounds=1)
            story.reply(f"Done: {' '.join(words)} {rng.choice(_FILLER)}.")
        story.builder.write(story.path)


def build(root: Path, noise: int = 40) -> list[Judged]:
    """Write the corpus under ``root`` (an agent dir: ``root/sessions/--project--/*.jsonl``); the judged queries."""
    rng = Random(31)
    stories, queries = _stories(root, rng)
    for story in stories:
        story.builder.write(story.path)
    _noise(root, rng, noise)
    judged = []
    for query, kind, keys in queries:
        item = Judged(query, kind)
        for story in stories:
            for key in keys:
                for entry in story.marks.get(key, []):
                    item.answers.add((str(story.path), entry))
        assert item.answers, query
        judged.append(item)
    return judged
