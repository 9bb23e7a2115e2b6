"""Requests over TLS verify the server against httpx's CA bundle or the one SSL_CERT_FILE names (the TLS context
is built once per process, for each such setting), against a real HTTPS server on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from pi_compact.llm import Message, ProviderRequestError, Request, complete, resolve_model


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a certificate for 127.0.0.1")
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"),
            *("-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture
def https_server(certificate: tuple[Path, Path]) -> Iterator[HTTPServer]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    server = HTTPServer(host="127.0.0.1", port=0, ssl_context=context)
    server.start()
    yield server
    server.clear()
    server.stop()


def test_the_server_certificate_is_verified_against_the_configured_authorities(
    https_server: HTTPServer, certificate: tuple[Path, Path], agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = https_server.url_for("/v1")
    assert url.startswith("https://")
    provider = {"baseUrl": url, "api": "openai-completions", "apiKey": "k", "models": [{"id": "m"}]}
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"local": provider}}))
    reply = {"choices": [{"message": {"role": "assistant", "content": "over TLS"}, "finish_reason": "stop"}]}
    https_server.expect_request("/v1/chat/completions").respond_with_json(reply)
    request = Request(messages=[Message.user("hi")], max_tokens=16)
    model = resolve_model("local/m")

    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    assert complete(request, model=model, max_retries=0).text == "over TLS"
    monkeypatch.delenv("SSL_CERT_FILE")  # the authorities without this certificate: refused
    with pytest.raises(ProviderRequestError, match=r"cannot reach .*CERTIFICATE_VERIFY_FAILED"):
        complete(request, model=model, max_retries=0)
