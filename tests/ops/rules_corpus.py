"""A judged corpus of user messages as people write them to a coding agent, for ``picompact rules``.

Each item is (language, message, the standing instructions in it). An instruction is named by a piece of the
sentence that states it (the sentence the classifier returns must contain it, or be contained in it); a message
with none is a request for the work at hand, a question, thanks, a status report, or pasted text (documentation,
logs, an agent's own output) whose "must" and "never" are not the user's. The labels were decided when each item
was written, before the classifier saw it: a standing instruction is one that holds for the project's next
sessions too (a rule, a convention, a preference, a fact about the setup such as the harness in use); "fix this",
"run the tests", "don't commit yet" are not.

``DEV`` is what the classifier was built on; ``HELD_OUT`` was written with it, and only scored after.
Shared by ``tests/ops/test_rules_judged.py`` and ``bench/rules_judged.py``.
"""

from __future__ import annotations

Item = tuple[str, str, tuple[str, ...]]

DEV: list[Item] = [
    # --- English: terse, misspelled, imperative without always/never -------------------------------------
    ("en", "no deprecation alias!", ("no deprecation alias",)),
    ("en", "rename it to parse_config. no deprecation aliases", ("no deprecation aliases",)),
    ("en", "run `make check` before committing", ("run `make check` before committing",)),
    ("en", "pls run make check before u commit", ("run make check before u commit",)),
    ("en", "Run the project's check command before you commit anything.", ("check command before you commit",)),
    ("en", "alwyas run npm run check b4 commiting", ("run npm run check",)),
    ("en", "nver push to main directly", ("nver push to main",)),
    ("en", "dont use mocks in the integration tests", ("dont use mocks",)),
    ("en", "You are running inside the Pi harness, not Claude Code.", ("running inside the Pi harness",)),
    ("en", "fyi you're in pi (the pi coding agent), not claude code", ("you're in pi",)),
    ("en", "this is the pi harness btw, there is no Task tool", ("this is the pi harness",)),
    ("en", "have a subagent review your diff first", ("have a subagent review",)),
    ("en", "get a subagent to review the change before you commit", ("get a subagent to review",)),
    ("en", "no emojis in commit messages", ("no emojis in commit messages",)),
    ("en", "no print statements, use the logger", ("no print statements",)),
    ("en", "keep commits small", ("keep commits small",)),
    ("en", "tabs not spaces", ("tabs not spaces",)),
    ("en", "use pnpm not npm", ("use pnpm not npm",)),
    ("en", "prefer composition over inheritance", ("prefer composition over inheritance",)),
    ("en", "stop adding comments to every line", ("stop adding comments",)),
    ("en", "don't ever edit the generated files under gen/", ("edit the generated files",)),
    ("en", "use ripgrep, not grep", ("use ripgrep, not grep",)),
    ("en", "Never commit .env", ("Never commit .env",)),
    ("en", "don't touch the lockfile", ("don't touch the lockfile",)),
    ("en", "tests go in tests/unit", ("tests go in tests/unit",)),
    ("en", "no new dependencies without asking", ("no new dependencies",)),
    ("en", "ask before deleting anything", ("ask before deleting anything",)),
    ("en", "DO NOT USE SED TO EDIT FILES", ("DO NOT USE SED",)),
    ("en", "dnt rename public apis", ("dnt rename public apis",)),
    ("en", "pleae dont reformat unrelated files", ("dont reformat unrelated files",)),
    ("en", "remember: python 3.9 compat", ("python 3.9 compat",)),
    ("en", "type hints everywhere pls", ("type hints everywhere",)),
    ("en", "all new code needs type hints", ("all new code needs type hints",)),
    ("en", "comments in english please", ("comments in english",)),
    ("en", "no force pushes", ("no force pushes",)),
    ("en", "use conventional commits", ("use conventional commits",)),
    ("en", "ok now fix the import error. and again: no deprecation alias!!", ("no deprecation alias",)),
    ("en", "the check command here is `just check`; run it before every commit", ("run it before every commit",)),
    ("en", "Always use the edit tool instead of sed.", ("Always use the edit tool",)),
    ("en", "quit writing summaries at the end of your replies", ("quit writing summaries",)),
    # --- English: not instructions ------------------------------------------------------------------------
    ("en", "fix the failing test in test_parser.py", ()),
    ("en", "can you add a --verbose flag?", ()),
    ("en", "why does this fail", ()),
    ("en", "run the tests", ()),
    ("en", "commit this", ()),
    ("en", "now push it", ()),
    ("en", "looks good, thanks", ()),
    ("en", "what does the `--strict` option do", ()),
    ("en", "rename foo to bar in utils.py", ()),
    ("en", "the build is broken again", ()),
    ("en", "I think the bug is in the tokenizer", ()),
    ("en", "ok do it", ()),
    ("en", "let's try the other approach", ()),
    ("en", "make the tests pass", ()),
    ("en", "check the logs", ()),
    ("en", "no, that's wrong", ()),
    ("en", "no luck, still failing", ()),
    ("en", "don't commit yet", ()),
    ("en", "Did you run make check?", ()),
    ("en", "it never returns when the queue is empty", ()),
    (
        "en",
        "here's the extension doc, implement the hook like this:\n\n## Events\n\nExtensions must export a default "
        "function. Never call `ctx.ui` from a background task. The handler should always return a promise.\n\n"
        "| event | when |\n|---|---|\n| session_start | on load |",
        (),
    ),
    (
        "en",
        "Error: ENOENT: no such file or directory, open 'config.json'\n    at Object.openSync (node:fs:573:3)\n"
        "    at readConfig (src/config.ts:12:9)",
        (),
    ),
    (
        "en",
        "from the README:\n\n> You must have Node 18 or later. Always run `npm install` first. Do not use yarn 1.",
        (),
    ),
    (
        "en",
        "Summary of changes:\n- The parser never allocates on the hot path\n- Callers must pass a buffer\n"
        "- Always returns a Result",
        (),
    ),
    ("en", "the docs say you should never call this from a hook, is that true?", ()),
    ("en", "great, that works. next: the export button", ()),
    # --- Korean -------------------------------------------------------------------------------------------
    ("ko", "먼저 서브에이전트한테 리뷰 받아", ("서브에이전트한테 리뷰",)),
    ("ko", "커밋하기 전에 서브에이전트로 먼저 리뷰해", ("서브에이전트로 먼저 리뷰",)),
    ("ko", "커밋 전에 make check 돌려", ("make check 돌려",)),
    ("ko", "절대 main에 직접 푸시하지 마", ("직접 푸시하지 마",)),
    ("ko", "deprecation alias 만들지 마세요", ("alias 만들지 마세요",)),
    ("ko", "테스트는 항상 tests/ 폴더에 넣어줘", ("항상 tests/ 폴더에",)),
    ("ko", "코드 수정 후에는 반드시 린트 돌려", ("반드시 린트 돌려",)),
    ("ko", "여기는 pi 하네스야, 클로드 코드 아니야", ("pi 하네스야",)),
    ("ko", "새 의존성 추가하지 마세요", ("새 의존성 추가하지 마세요",)),
    ("ko", ".env 파일은 건드리지 마", (".env 파일은 건드리지 마",)),
    ("ko", "이 함수 왜 실패하는지 알아봐 줄래?", ()),
    ("ko", "이 버그 고쳐줘", ()),
    ("ko", "README 업데이트해줘", ()),
    ("ko", "빌드가 깨졌어", ()),
    ("ko", "좋아, 고마워", ()),
    ("ko", "이제 커밋해", ()),
    ("ko", "다음 단계로 넘어가자", ()),
    ("ko", "아직 커밋하지 마", ()),
    # --- Japanese -----------------------------------------------------------------------------------------
    ("ja", "コミットする前に必ず make check を実行してください", ("必ず make check",)),
    ("ja", "mainブランチに直接pushしないで", ("直接pushしないで",)),
    ("ja", "非推奨のエイリアスは作らないこと", ("エイリアスは作らないこと",)),
    ("ja", "テストは常に tests/ に置いてください", ("常に tests/",)),
    ("ja", "先にサブエージェントにレビューさせて", ("サブエージェントにレビュー",)),
    ("ja", "コメントは英語で書くこと", ("英語で書くこと",)),
    ("ja", "このエラーの原因は何ですか？", ()),
    ("ja", "このバグを直してください", ()),
    ("ja", "READMEを更新して", ()),
    ("ja", "ありがとう、完璧です", ()),
    ("ja", "ビルドが失敗しました。ログを見てください。", ()),
    # --- Chinese ------------------------------------------------------------------------------------------
    ("zh", "提交之前一定要运行 make check", ("一定要运行 make check",)),
    ("zh", "不要添加弃用别名", ("不要添加弃用别名",)),
    ("zh", "永远不要直接推送到 main 分支", ("永远不要直接推送",)),
    ("zh", "先让子代理审查一下再提交", ("子代理审查",)),
    ("zh", "注释一律用英文", ("注释一律用英文",)),
    ("zh", "这个函数为什么报错？", ()),
    ("zh", "帮我修一下这个 bug", ()),
    ("zh", "运行一下测试", ()),
    ("zh", "谢谢，很好", ()),
    ("zh", "构建失败了，日志如下", ()),
    # --- German -------------------------------------------------------------------------------------------
    ("de", "Vor jedem Commit bitte make check ausführen.", ("Vor jedem Commit",)),
    ("de", "Keine Deprecation-Aliase!", ("Keine Deprecation-Aliase",)),
    ("de", "Niemals direkt auf main pushen.", ("Niemals direkt auf main",)),
    ("de", "Verwende immer pnpm statt npm.", ("Verwende immer pnpm",)),
    ("de", "Lass zuerst einen Subagenten reviewen.", ("Subagenten reviewen",)),
    ("de", "Kannst du den Fehler in main.py beheben?", ()),
    ("de", "Warum schlägt der Test fehl?", ()),
    ("de", "Danke, das sieht gut aus.", ()),
    ("de", "Schreib eine Funktion, die die CSV-Datei einliest.", ()),
    # --- Spanish ------------------------------------------------------------------------------------------
    ("es", "Siempre ejecuta make check antes de hacer commit.", ("Siempre ejecuta make check",)),
    ("es", "Nunca hagas push directo a main.", ("Nunca hagas push",)),
    ("es", "No uses mocks en los tests de integración.", ("No uses mocks",)),
    ("es", "Sin alias de deprecación.", ("Sin alias de deprecación",)),
    ("es", "Los comentarios deben estar en inglés.", ("comentarios deben estar en inglés",)),
    ("es", "¿Por qué falla este test?", ()),
    ("es", "Arregla el bug del parser.", ()),
    ("es", "Gracias, perfecto.", ()),
    ("es", "Añade un flag --verbose al comando.", ()),
]

HELD_OUT: list[Item] = [
    ("en", "no backwards-compat shims!", ("no backwards-compat shims",)),
    ("en", "always run `uv run pytest` before u push", ("run `uv run pytest` before u push",)),
    ("en", "befor commiting run the linter", ("run the linter",)),
    ("en", "you are in pi, so there's no TodoWrite tool", ("you are in pi",)),
    ("en", "the harness is pi, not codex", ("the harness is pi",)),
    ("en", "let a subagent review the plan first", ("subagent review",)),
    ("en", "no todo comments in the code", ("no todo comments",)),
    ("en", "never ever git push --force", ("git push --force",)),
    ("en", "use httpx not requests", ("use httpx not requests",)),
    ("en", "keep functions short", ("keep functions short",)),
    ("en", "dont add new files to the root", ("dont add new files",)),
    ("en", "stop apologizing", ("stop apologizing",)),
    ("en", "please add a docstring to parse()", ()),
    ("en", "what's the difference between these two?", ()),
    ("en", "delete the old migration", ()),
    ("en", "no idea why it broke", ()),
    ("en", "the tests pass now", ()),
    ("en", "push it", ()),
    (
        "en",
        "see the spec:\n\n# Format\n\nEach line must be a JSON object. Readers must never split on U+2028. "
        "Writers should always end with a newline.",
        (),
    ),
    ("en", "npm ERR! code ERESOLVE\nnpm ERR! Could not resolve dependency: must be >=18", ()),
    ("ko", "커밋하기 전에 항상 테스트 돌려", ("항상 테스트 돌려",)),
    ("ko", "PR 올리기 전에 서브에이전트한테 먼저 검토 맡겨", ("서브에이전트한테 먼저 검토",)),
    ("ko", "주석은 영어로 써", ("주석은 영어로",)),
    ("ko", "print 말고 logger 써", ("print 말고 logger",)),
    ("ko", "로그 좀 보여줘", ()),
    ("ko", "왜 이게 안 돼?", ()),
    ("ko", "테스트 돌려봐", ()),
    ("ja", "絶対に .env を編集しないで", (".env を編集しないで",)),
    ("ja", "npmではなくpnpmを使うこと", ("pnpmを使うこと",)),
    ("ja", "関数名を変えてください", ()),
    ("ja", "なぜ失敗するの？", ()),
    ("zh", "别动 .env 文件", ("别动 .env",)),
    ("zh", "每次提交前都要跑 lint", ("每次提交前都要跑",)),
    ("zh", "把这个函数重命名一下", ()),
    ("zh", "为什么测试失败了？", ()),
    ("de", "Keine neuen Abhängigkeiten ohne Rückfrage.", ("Keine neuen Abhängigkeiten",)),
    ("de", "Benutze nie print, sondern logging.", ("Benutze nie print",)),
    ("de", "Bitte führe die Tests aus.", ()),
    ("es", "Nunca toques el archivo .env.", ("Nunca toques",)),
    ("es", "Usa pnpm en lugar de npm.", ("Usa pnpm en lugar de npm",)),
    ("es", "¿Puedes revisar este archivo?", ()),
    ("es", "Ejecuta los tests, por favor.", ()),
]


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def score(items: list[Item], extract: object) -> dict[str, object]:
    """Precision and recall of ``extract`` (a message -> the sentences it takes for standing instructions) on
    ``items``: a sentence is right when it holds one of the message's labelled pieces not yet credited (or lies
    inside one); recall is the labelled pieces credited over all of them. Returns the counts and the errors."""
    taken = right = expected = found = 0
    wrong: list[str] = []
    missed: list[str] = []
    for lang, message, pieces in items:
        sentences = list(extract(message))  # type: ignore[operator]
        open_pieces = [_norm(p) for p in pieces]
        expected += len(pieces)
        for sentence in sentences:
            taken += 1
            s = _norm(sentence)
            hit = next((p for p in open_pieces if p in s or s in p), None)
            if hit is None:
                wrong.append(f"{lang}: {sentence!r}")
                continue
            right += 1
            found += 1
            open_pieces.remove(hit)
        missed.extend(f"{lang}: {p!r} in {message[:60]!r}" for p in open_pieces)
    return {
        "taken": taken,
        "right": right,
        "expected": expected,
        "found": found,
        "precision": right / taken if taken else 1.0,
        "recall": found / expected if expected else 1.0,
        "wrong": wrong,
        "missed": missed,
    }


# Harder: requests that carry a cue word for the moment, pasted text without an introducer, other languages' docs
# and logs, terse notes that are not rules. Written after DEV and HELD_OUT were scored, and scored once.
HARD: list[Item] = [
    ("en", "before you start, read src/main.py", ()),
    ("en", "always the same error, see above", ()),
    ("en", "never mind, I found it", ()),
    ("en", "use the second option", ()),
    ("en", "no tests were run", ()),
    ("en", "I always forget how this works", ()),
    ("en", "fix it before the release tomorrow", ()),
    ("en", "first, reproduce the bug", ()),
    ("en", "We never got the webhook", ()),
    ("en", "The function must return None when the list is empty, right?", ()),
    ("en", "Users must log in before they can post comments.\nAdmins can delete any comment.", ()),
    (
        "en",
        "I ran it:\n\nFAILED tests/test_io.py::test_roundtrip - AssertionError: must not be empty\n1 failed, 20 passed",
        (),
    ),
    ("en", "btw never use `git add -A` here, it picks up the build dir", ("never use `git add -A`",)),
    ("en", "reminder: pnpm only", ("pnpm only",)),
    ("en", "new rule: every PR needs a changelog entry", ("every PR needs a changelog entry",)),
    ("en", "youre running in pi btw not claude code", ("running in pi",)),
    ("en", "please always ask a subagent to review before you call it done", ("subagent to review",)),
    ("en", "Don't add comments that restate the code.", ("Don't add comments",)),
    ("en", "no mocks!!", ("no mocks",)),
    ("en", "use snake_case for file names", ("snake_case for file names",)),
    ("ko", "항상 한국어로 답해줘", ("항상 한국어로",)),
    ("ko", "이거 먼저 봐줘", ()),
    ("ko", "테스트가 또 실패했어", ()),
    ("ko", "작업 끝나면 서브에이전트 돌려서 리뷰받아", ("서브에이전트 돌려서 리뷰",)),
    ("ko", "커밋 메시지는 영어로 써줘, 항상", ("커밋 메시지는 영어로",)),
    ("ja", "ログはこちらです。エラー: 必ず引数を指定してください", ()),
    ("ja", "まずテストを実行して", ()),
    ("ja", "いつもありがとう", ()),
    ("ja", "新しい依存関係を追加しないでください", ("依存関係を追加しないで",)),
    ("zh", "先看一下这个文件", ()),
    ("zh", "每次回复都用中文", ("每次回复都用中文",)),
    ("zh", "以后不要再加注释了", ("不要再加注释",)),
    ("de", "Der Build schlägt immer noch fehl.", ()),
    ("de", "Commit-Nachrichten immer auf Englisch.", ("Commit-Nachrichten immer auf Englisch",)),
    ("es", "El test sigue fallando.", ()),
    ("es", "Siempre responde en español.", ("Siempre responde en español",)),
    ("es", "No funciona.", ()),
]

# Long messages as sent mid-session, several sentences each, an instruction somewhere in some of them. Written
# after the classifier was finished and scored once, as it is (not tuned on).
FRESH: list[Item] = [
    (
        "en",
        "ok the migration ran but the seed script is still broken. can you look at scripts/seed.ts? also, going "
        "forward, don't hand-edit the generated prisma client",
        ("don't hand-edit the generated prisma client",),
    ),
    (
        "en",
        "I pushed a fix for the login bug. Please review PR #412 and leave comments. Thanks!",
        (),
    ),
    (
        "en",
        "That's close. Two things: the error message should mention the file name, and the exit code must be 2. "
        "Then rerun the tests.",
        (),
    ),
    (
        "en",
        "we're on windows btw so paths need backslashes in the docs examples. otherwise fine",
        (),
    ),
    (
        "en",
        "you keep adding try/except around everything. stop doing that, let errors propagate unless there's a reason",
        ("stop doing that",),
    ),
    (
        "en",
        "Here is what the linter printed:\n\nsrc/app.py:12:1: E302 expected 2 blank lines\nsrc/app.py:40:80: E501 "
        "line too long\n\nfix those please",
        (),
    ),
    (
        "en",
        "great work. from now on write the commit message yourself, short and in the imperative",
        ("from now on write the commit message yourself",),
    ),
    (
        "en",
        "Hmm, the CI uses node 20 but locally I have 18. Can we make it work on both?",
        (),
    ),
    (
        "en",
        "before you do anything else, read CONTRIBUTING.md. and never run the e2e suite locally, it hits prod",
        ("never run the e2e suite locally",),
    ),
    (
        "en",
        "the deploy failed with 'permission denied (publickey)'. I think the key expired.",
        (),
    ),
    (
        "ko",
        "로그인 버그 고쳤어. 이제 PR 만들어줘. 그리고 앞으로 PR 설명은 한국어로 써줘",
        ("앞으로 PR 설명은 한국어로",),
    ),
    ("ko", "이 부분 좀 더 간단하게 바꿔줄 수 있어? 너무 복잡해 보여", ()),
    ("ko", "테스트 다 통과했어. 수고했어!", ()),
    (
        "ko",
        "마이그레이션 파일은 절대 직접 수정하지 마. 항상 새 마이그레이션을 만들어",
        ("절대 직접 수정하지 마", "항상 새 마이그레이션을 만들어"),
    ),
    ("ja", "ビルドは通りました。次はドキュメントを更新してください。", ()),
    ("ja", "今後、コミットメッセージは英語で書いてください。", ("コミットメッセージは英語で",)),
    ("ja", "このテストが遅すぎる気がします。原因を調べてもらえますか？", ()),
    ("zh", "登录的问题修好了。接下来把文档更新一下。", ()),
    ("zh", "以后所有的提交信息都用英文写。", ("提交信息都用英文",)),
    ("zh", "这个接口返回太慢了，你看看能不能优化。", ()),
    ("de", "Der Login-Bug ist behoben. Als Nächstes bitte die Doku aktualisieren.", ()),
    ("de", "Ab jetzt bitte keine Emojis mehr in Commit-Nachrichten.", ("keine Emojis mehr",)),
    ("es", "Ya arreglé el bug del login. Ahora actualiza la documentación.", ()),
    ("es", "A partir de ahora, nunca modifiques los archivos generados.", ("nunca modifiques los archivos generados",)),
]
