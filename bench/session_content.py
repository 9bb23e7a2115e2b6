"""Text and data builders for gen_session.py: one fake project's files, code, logs, prompts and images.

Kept apart from the session structure so each stays small; all randomness comes from the caller's seeded
Random, so the output is reproducible.
"""

from __future__ import annotations

import base64
import struct
import zlib
from dataclasses import dataclass
from random import Random
from typing import Any

# --------------------------------------------------------------------------------------------------------
# Vocabulary


NOUNS = (
    "cache",
    "account",
    "invoice",
    "ledger",
    "session",
    "token",
    "buffer",
    "schema",
    "router",
    "worker",
    "queue",
    "payment",
    "snapshot",
    "config",
    "handler",
    "request",
    "response",
    "report",
    "migration",
    "balance",
    "tax",
    "currency",
    "discount",
    "refund",
    "period",
    "forecast",
    "wind",
    "pressure",
    "humidity",
    "temperature",
    "segment",
    "frame",
    "entry",
    "lock",
    "status",
    "template",
    "query",
    "user",
    "customer",
    "rollback",
    "backoff",
    "provider",
    "format",
    "unit",
    "table",
    "commit",
    "render",
    "merge",
    "index",
    "page",
    "cursor",
    "batch",
)
VERBS = (
    "get",
    "set",
    "load",
    "save",
    "parse",
    "build",
    "apply",
    "flush",
    "read",
    "write",
    "open",
    "close",
    "render",
    "compute",
    "validate",
    "merge",
    "sync",
    "fetch",
    "resolve",
    "encode",
    "decode",
    "normalize",
    "split",
    "collect",
    "emit",
    "update",
)

EXOTIC_SNIPPETS = (
    "🚀 ship it! but first run the tests 🧪✅",
    "バグを見つけて直してください。テストも追加してください。",
    "请帮我检查一下这个函数为什么返回空值 🤔",
    "버그를 찾아서 고쳐 주세요. 테스트도 추가해 주세요.",
    "Привет! Почему тест падает с ошибкой «неверная сумма»?",
    "non-breaking\u00a0space, zero\u200bwidth space, line\u2028separator and paragraph\u2029separator",
    "مرحبا، هل يمكنك مراجعة هذا الكود؟",
    "Ünïcödé ñämes in paths: docs/réservé/naïve-café.md",
    "emoji in identifiers? 👨‍👩‍👧‍👦 family, 🏳️‍🌈 flag, 🇯🇵 JP",
)


@dataclass(frozen=True)
class Profile:
    """A fake project: language, files and commands, so outputs look like one codebase."""

    name: str
    lang: str
    files: tuple[str, ...]
    test_cmds: tuple[str, ...]
    build_cmds: tuple[str, ...]
    line_templates: tuple[str, ...]


PROFILES = (
    Profile(
        name="weatherly",
        lang="python",
        files=(
            "src/weatherly/cli.py",
            "src/weatherly/cache.py",
            "src/weatherly/forecast.py",
            "src/weatherly/units.py",
            "src/weatherly/api/client.py",
            "src/weatherly/api/models.py",
            "tests/test_cache.py",
            "tests/ops/test_forecast.py",
            "tests/test_cli.py",
            "pyproject.toml",
            "README.md",
            "CHANGELOG.md",
            "docs/usage.md",
        ),
        test_cmds=("pytest -q", "pytest -x tests/test_cache.py", "python -m pytest -v", "pytest -k forecast"),
        build_cmds=("ruff check .", "mypy src", "python -m build"),
        line_templates=(
            "def {a}(self, {n1}: {t}) -> {t}:",
            "    {n1} = self.{a}({n2})",
            "    if {n1} is None:",
            '        raise ValueError(f"invalid {n1}: {{{n1}!r}}")',
            "    return {a}({n1}, {n2}={num})",
            "from weatherly.{n1} import {a}, {b}",
            "import {n1}",
            "class {C}({C2}):",
            '    """{Doc}"""',
            "    # TODO: {doc}",
            "        assert {a}({num}) == {num2}",
            "    for {n1} in self.{n2}s:",
            "        self._{n1}[{n2}.id] = {n2}",
            "",
            '    logger.debug("{a} took %.2fms", elapsed)',
        ),
    ),
    Profile(
        name="acme-billing",
        lang="typescript",
        files=(
            "src/services/tax.ts",
            "src/services/invoice.ts",
            "src/db/migrations/0007_add_tax_rate.ts",
            "src/routes/payments.ts",
            "src/lib/money.ts",
            "src/index.ts",
            "test/invoices.test.ts",
            "test/tax.test.ts",
            "package.json",
            "tsconfig.json",
            "README.md",
            "docs/api.md",
        ),
        test_cmds=("npm test", "npx vitest run test/tax.test.ts", "npx vitest run", "npm run test:ci"),
        build_cmds=("npx tsc --noEmit", "npm run lint", "npm run build"),
        line_templates=(
            "export function {a}({n1}: {T}): {T} {{",
            "  const {n1} = await this.{a}({n2});",
            "  if (!{n1}) {{",
            "    throw new Error(`invalid {n1}: ${{{n1}}}`);",
            "  return {a}({n1}, {{ {n2}: {num} }});",
            'import {{ {a}, {b} }} from "../{n1}/{n2}";',
            "}}",
            "export class {C} extends {C2} {{",
            "  /** {Doc} */",
            "  // TODO: {doc}",
            "    expect({a}({num})).toBe({num2});",
            "  for (const {n1} of this.{n2}s) {{",
            "    this.{n1}s.set({n2}.id, {n2});",
            "",
            "  logger.debug(`{a} took ${{elapsed}}ms`);",
        ),
    ),
    Profile(
        name="tiny-kv",
        lang="rust",
        files=(
            "src/lib.rs",
            "src/main.rs",
            "src/store.rs",
            "src/wal.rs",
            "src/compaction.rs",
            "src/net/server.rs",
            "src/net/protocol.rs",
            "tests/integration.rs",
            "benches/put_get.rs",
            "Cargo.toml",
            "README.md",
        ),
        test_cmds=("cargo test", "cargo test --release", "cargo test store::", "cargo nextest run"),
        build_cmds=("cargo build", "cargo clippy -- -D warnings", "cargo check"),
        line_templates=(
            "pub fn {a}(&mut self, {n1}: &[u8]) -> Result<usize, Error> {{",
            "    let {n1} = self.{a}(&{n2})?;",
            "    if {n1}.len() > MAX_{N} {{ return Err(Error::TooLarge); }}",
            '        return Err(Error::Invalid(format!("bad {n1}: {{:?}}", {n1})));',
            "    Ok({a}({n1}, {num}))",
            "use crate::{n1}::{a};",
            "}}",
            "pub struct {C} {{",
            "/// {Doc}",
            "    // SAFETY: {n1} is aligned and non-null",
            "        assert_eq!({a}({num}), {num2});",
            "    for {n1} in self.{n2}s.iter() {{",
            "        self.{n1}.insert(key.to_vec(), {n2});",
            "",
            '    tracing::debug!(elapsed_ms = elapsed, "{a}");',
        ),
    ),
)

USER_PROMPTS = (
    "Can you look at {file} and figure out why the tests are failing?",
    "Add tests for the {noun} edge cases (zero, negative, very large values).",
    "Refactor {file} so that the {noun} logic is separated from the I/O. Keep the public API stable.",
    "The {noun} calculation is off by one for some inputs. Please find the bug and fix it.",
    "Rename `{ident}` to something clearer everywhere and update the docs.",
    "Please explain how {file} works, I inherited this code and I'm lost.",
    "Performance is bad when there are 100k {noun}s. Profile it and suggest fixes.",
    "Update the README with the new {noun} option.",
    "Can you add a --verbose flag to the CLI that prints the {noun} details?",
    "Why did you change {file}? I asked only about {noun}.",
    "wait, that's wrong - we must not touch the public API. revert the change to {file}",
    "ok continue",
    "looks good, commit it",
    "yes",
    "Run the full test suite and fix whatever is red.",
    "The CI job fails with this:\n\n```\n{trace}\n```\n\nany idea?",
)
ASSISTANT_TEXTS = (
    "Let me look at the relevant files first.",
    "Now let me update the implementation.",
    "Let me check where this is used.",
    "I found the issue. The rounding happens before the {noun} is applied.",
    "Running the tests to confirm.",
    "The build is green. Let me know if you want me to commit.",
    "I've made the changes:\n\n1. Extracted the `{noun}` logic into a pure function\n2. Updated callers in "
    "`{file}`\n3. All {num} tests pass",
    "I couldn't reproduce the failure locally. The test passes on every run ({num} runs). It might be flaky.",
    "I reverted the change to `{file}`. Sorry about that - the public API is untouched now.",
    "Here's how `{file}` works:\n\n- `{ident}` reads the {noun} from disk\n- the result is cached per "
    "{noun2}\n- errors are mapped to `{C}Error`\n\nThe tricky part is the invalidation in `{ident2}`.",
)
THINKING_TEXTS = (
    "The test output shows an off-by-one error. Looking at the code, `{ident}` iterates with <= instead of <. "
    "That would explain the extra element. But wait, there's also the cache - if the cache holds a stale "
    "{noun}, the result would also be off. Let me check both.",
    "I need to run the build to see the type errors. There might be many of them after the rename.",
    "Plan:\n1. read {file}\n2. find usages of `{ident}`\n3. edit\n4. run tests\n\nLet me start.",
    "The user wants the {noun} handling changed but the public API kept. `{ident}` is exported, so I should "
    "add a new internal helper and keep the old signature as a thin wrapper.",
    "Hmm, the failure only happens with {num} {noun}s. That smells like a buffer boundary. The segment size "
    "is {num2}, so anything that crosses it takes the slow path in `{ident}`.",
)
ERROR_MESSAGES = ("Connection error.", "terminated", "overloaded_error: Overloaded", "Request timed out.")
MODELS = (
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages", (3.0, 15.0, 0.3, 3.75)),
    ("anthropic", "claude-opus-4-5", "anthropic-messages", (5.0, 25.0, 0.5, 6.25)),
    ("openai", "gpt-5.1-codex", "openai-responses", (1.25, 10.0, 0.125, 0.0)),
    ("google", "gemini-2.5-pro", "google-generative-ai", (1.25, 10.0, 0.31, 0.0)),
)
ToolDecl = tuple[str, str, dict[str, str], list[str]]
TOOL_DECLS: tuple[ToolDecl, ...] = (
    (
        "read",
        "Read a file's contents; images come back as attachments. Long files are cut, page with offset/limit.",
        {"path": "string", "offset": "number", "limit": "number"},
        ["path"],
    ),
    (
        "bash",
        "Run a shell command in the project directory; stdout and stderr are returned, long output is cut to its tail.",
        {"command": "string", "timeout": "number"},
        ["command"],
    ),
    (
        "edit",
        "Replace exact text in one file. Every oldText must match once.",
        {"path": "string", "edits": "array"},
        ["path", "edits"],
    ),
    (
        "write",
        "Create or overwrite a file with the given content.",
        {"path": "string", "content": "string"},
        ["path", "content"],
    ),
)
LATE_TOOL_DECLS: tuple[ToolDecl, ...] = (
    ("grep", "Search file contents with a regular expression.", {"pattern": "string", "path": "string"}, ["pattern"]),
    ("ls", "List a directory.", {"path": "string"}, []),
    ("find", "Find files by glob pattern.", {"pattern": "string", "path": "string"}, ["pattern"]),
)


def tool_decl(name: str, desc: str, props: dict[str, str], required: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "description": desc,
        "parameters": {
            "type": "object",
            "required": required,
            "properties": {k: {"type": v, "description": f"The {k}"} for k, v in props.items()},
        },
    }


def png(rng: Random, width: int, height: int) -> bytes:
    """A valid RGB PNG of noise, stored uncompressed so its size is predictable (~3 bytes a pixel)."""
    stride = width * 3
    pixels = rng.randbytes(stride * height)
    raw = b"".join(b"\x00" + pixels[i * stride : (i + 1) * stride] for i in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 0)) + chunk(b"IEND", b"")


class Content:
    """Text builders for one project profile; all randomness comes from the one seeded Random."""

    def __init__(self, rng: Random, profile: Profile, cwd: str) -> None:
        self.rng = rng
        self.p = profile
        self.cwd = cwd
        self.pool = [self._code_line() for _ in range(3000)]

    def ident(self) -> str:
        r = self.rng
        parts = [r.choice(VERBS), r.choice(NOUNS), r.choice(NOUNS)]
        if self.p.lang == "typescript":
            return parts[0] + "".join(w.capitalize() for w in parts[1:])
        return "_".join(parts)

    def cls(self) -> str:
        return self.rng.choice(NOUNS).capitalize() + self.rng.choice(NOUNS).capitalize()

    def file(self) -> str:
        path = self.rng.choice(self.p.files)
        return path if self.rng.random() < 0.6 else f"{self.cwd}/{path}"

    def fill(self, template: str) -> str:
        r = self.rng
        return template.format(
            file=self.file(),
            noun=r.choice(NOUNS),
            noun2=r.choice(NOUNS),
            ident=self.ident(),
            ident2=self.ident(),
            num=r.randint(2, 999),
            num2=r.randint(2, 999),
            C=self.cls(),
            trace="\n".join(self.trace_lines()) if "{trace}" in template else "",
        )

    def _code_line(self) -> str:
        r = self.rng
        t = r.choice(self.p.line_templates)
        n1, n2 = r.choice(NOUNS), r.choice(NOUNS)
        line = t.format(
            a=self.ident(),
            b=self.ident(),
            n1=n1,
            n2=n2,
            N=n1.upper(),
            t=r.choice(("int", "str", "float")),
            T=r.choice(("number", "string", "Money")),
            C=self.cls(),
            C2=self.cls(),
            num=r.randint(0, 999),
            num2=r.randint(0, 999),
            Doc=f"{r.choice(VERBS).capitalize()} the {n1} for one {n2}.",
            doc=f"{r.choice(VERBS)} {n1} before {n2}",
        )
        return " " * (4 * r.randint(0, 2)) + line

    def code(self, n_lines: int) -> str:
        return "\n".join(self.rng.choices(self.pool, k=n_lines))

    def trace_lines(self) -> list[str]:
        r = self.rng
        if self.p.lang == "python":
            lines = ["Traceback (most recent call last):"]
            for _ in range(r.randint(2, 6)):
                lines.append(
                    f'  File "{self.cwd}/{r.choice(self.p.files)}", line {r.randint(1, 900)}, in {self.ident()}'
                )
                lines.append("    " + r.choice(self.pool).strip())
            lines.append(f"KeyError: '{r.choice(NOUNS)}'")
        else:
            lines = [f"TypeError: Cannot read properties of undefined (reading '{r.choice(NOUNS)}')"]
            lines += [
                f"    at {self.ident()} ({self.cwd}/{r.choice(self.p.files)}:{r.randint(1, 900)}:{r.randint(1, 80)})"
                for _ in range(r.randint(3, 8))
            ]
        return lines

    def test_name(self) -> str:
        noun, ident = self.rng.choice(NOUNS), self.ident()
        if self.p.lang == "python":
            return f"tests/test_{noun}.py::test_{ident}"
        if self.p.lang == "typescript":
            return f"test/{noun}.test.ts > {ident}"
        return f"{noun}::tests::{ident}"

    def test_log(self, n_tests: int, needle: str | None = None) -> str:
        """A test-runner log: many pass lines, a few failures with details, a summary."""
        r = self.rng
        failed: list[str] = []
        out = [
            f"running {n_tests} tests"
            if self.p.lang == "rust"
            else "============================= test session starts =============================="
        ]
        for i in range(n_tests):
            name = self.test_name()
            ok = r.random() > 0.03
            if not ok:
                failed.append(name)
            status = "PASSED" if ok else "FAILED"
            if self.p.lang == "rust":
                out.append(f"test {name} ... {'ok' if ok else 'FAILED'}")
            else:
                out.append(f"{name} {status} [{100 * (i + 1) // n_tests:3d}%]")
        if failed:
            out.append("=" * 35 + " FAILURES " + "=" * 35)
            for name in failed:
                out.append(f"_____ {name} _____")
                out.extend(self.rng.choices(self.pool, k=r.randint(3, 12)))
                out.append(f"E       AssertionError: assert {r.randint(0, 999)} == {r.randint(0, 999)}")
                out.extend(self.trace_lines())
            out.extend(f"FAILED {name} - AssertionError" for name in failed)
        if needle is not None:  # near the end, so a tail-truncated log still holds it
            out.append(
                f"{needle}: checksum mismatch in segment 0x{r.randint(0, 4095):04x} (expected {r.getrandbits(32):08x})"
            )
        out.append(f"===== {len(failed)} failed, {n_tests - len(failed)} passed in {r.uniform(0.5, 90):.2f}s =====")
        return "\n".join(out)

    def build_log(self) -> str:
        r = self.rng
        out: list[str] = []
        for _ in range(r.randint(0, 25)):
            f = r.choice(self.p.files)
            if self.p.lang == "rust":
                out += [
                    f"error[E0{r.randint(200, 799)}]: mismatched types",
                    f"  --> {f}:{r.randint(1, 900)}:{r.randint(1, 80)}",
                    "   |",
                    f"{r.randint(1, 900):3d} | " + r.choice(self.pool).strip(),
                    "   |     ^^^^^ expected `usize`, found `u64`",
                    "",
                ]
            elif self.p.lang == "typescript":
                out.append(
                    f"{f}({r.randint(1, 900)},{r.randint(1, 80)}): error TS2345: Argument of type "
                    f"'{self.cls()}' is not assignable to parameter of type '{self.cls()}'."
                )
            else:
                out.append(
                    f"{f}:{r.randint(1, 900)}:{r.randint(1, 80)}: error: Incompatible types in "
                    f'assignment (expression has type "{self.cls()}", variable has type "int")'
                )
        out.append(f"Found {len(out)} errors." if out else "Finished in 3.2s, no issues found.")
        return "\n".join(out)

    def app_log(self, n: int) -> str:
        r = self.rng
        levels = ("DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR")
        return "\n".join(
            f"2025-08-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:"
            f"{r.randint(0, 59):02d}.{r.randint(0, 999):03d}Z {r.choice(levels)} [{r.choice(NOUNS)}] "
            f"{r.choice(VERBS)}ing {r.choice(NOUNS)} id={r.getrandbits(32):08x} took={r.randint(1, 999)}ms"
            for _ in range(n)
        )

    def diff(self, n_hunks: int) -> str:
        r = self.rng
        out: list[str] = []
        for _ in range(n_hunks):
            f = r.choice(self.p.files)
            out += [
                f"diff --git a/{f} b/{f}",
                f"--- a/{f}",
                f"+++ b/{f}",
                f"@@ -{r.randint(1, 400)},{r.randint(3, 20)} +{r.randint(1, 400)},{r.randint(3, 20)} @@",
            ]
            out += [r.choice(" +-") + line for line in r.choices(self.pool, k=r.randint(4, 30))]
        return "\n".join(out)

    def tail(self, text: str, limit: int = 50 * 1024) -> str:
        """Keep the end of a long command output, the way Pi's bash tool does."""
        if len(text) <= limit:
            return text
        cut = text.index("\n", len(text) - limit) + 1
        kept = text[cut:]
        return (
            f"[Output truncated: showing the last {kept.count(chr(10)) + 1} lines. Full output: "
            f"/tmp/pi-bash-{self.rng.getrandbits(32):08x}.log]\n" + kept
        )

    def head(self, text: str, limit: int = 50 * 1024) -> str:
        """Keep the start of a long file, the way Pi's read tool does, with a paging hint."""
        if len(text) <= limit:
            return text
        cut = text.rindex("\n", 0, limit)
        shown = text.count("\n", 0, cut) + 1
        return (
            text[:cut] + f"\n\n[Showing lines 1-{shown} of {text.count(chr(10)) + 1}. "
            f"Use offset={shown + 1} to continue.]"
        )

    def signature(self) -> str:
        return base64.b64encode(self.rng.randbytes(self.rng.randint(150, 900))).decode()
