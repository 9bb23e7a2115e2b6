"""``--tokenizer cl100k``: an extra count with cl100k_base, loaded offline, that never changes Pi's decision."""

from __future__ import annotations

from pathlib import Path

from pi_compact.pi.tokens import count_cl100k
from tests.helpers.cli import run
from tests.helpers.fixtures import PI_FIXTURES


def test_cl100k_is_the_real_encoding_and_images_count_as_pi_counts_them() -> None:
    # "hello world" is two tokens in cl100k_base (and three in gpt2's encoding).
    assert count_cl100k({"role": "user", "content": "hello world"}) == 2
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    with_image = {"role": "user", "content": [{"type": "text", "text": "hello world"}, image]}
    assert count_cl100k(with_image) == 2 + 1200


def test_check_reports_cl100k_offline_without_changing_the_decision(tmp_path: Path) -> None:
    session = PI_FIXTURES / "gen-small-101.jsonl"
    offline = {
        "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty-cache"),  # nothing cached: a download would be needed
        "HTTPS_PROXY": "http://127.0.0.1:9",  # and would fail at once
        "HTTP_PROXY": "http://127.0.0.1:9",
    }
    pi = run("check", session, "--context-window", "32000", "--json", env=offline)
    cl = run("check", session, "--context-window", "32000", "--tokenizer", "cl100k", "--json", env=offline)
    assert cl.code == pi.code == 1, cl.stderr
    assert cl.json["tokenizer"] == "cl100k"
    assert cl.json["context_tokens"] == pi.json["context_tokens"]  # Pi's figure and decision are unchanged
    assert cl.json["should_compact"] == pi.json["should_compact"]
    estimate = cl.json["context_tokens_cl100k"]
    assert isinstance(estimate, int) and 0.3 * pi.json["context_tokens"] < estimate < 2 * pi.json["context_tokens"]
    human = run("check", session, "--context-window", "32000", "--tokenizer", "cl100k", env=offline)
    assert "not Pi's rule" in human.stdout
