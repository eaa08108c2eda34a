"""`sparkadvisor probe` against local servers that work, are down, stall, fail or talk nonsense.

Every case ends in a clear sentence within its timeout (0.2-0.3 s here).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from probe_fakes import closed_port_url, gateway_server, vllm_server

from sparkadvisor.cli import main

FAST = ["--interval", "0.2", "--timeout", "0.3"]
"""For the stall cases: the probe must give up quickly."""
PATIENT = ["--interval", "0.2", "--timeout", "3"]
"""For servers that answer: a loaded test machine must not turn a slow answer into a failure."""
MEASURING = ["--interval", "1", "--timeout", "3"]
"""For a test that asserts a rate measured over the interval (decode against the plan): over 1 s the
moments a loaded machine takes to deliver each scrape stay a small share of the window."""


def probe(capsys, *args: str, stalled: bool = False, options: list[str] | None = None) -> tuple[int, str, str]:
    code = main(["probe", *(options or (FAST if stalled else PATIENT)), *args])
    out, err = capsys.readouterr()
    return code, out, err


def probe_json(capsys, *args: str, stalled: bool = False, options: list[str] | None = None) -> tuple[int, dict]:
    code, out, _ = probe(capsys, *args, "--json", stalled=stalled, options=options)
    return code, json.loads(out)


def texts(data: dict, severity: str) -> list[str]:
    return [f["text"] for f in data["findings"] if f["severity"] == severity]


@pytest.fixture
def local_claude(settings_file, gateway):
    """Claude Code pointed at the gateway, attribution header off."""
    return settings_file({"ANTHROPIC_BASE_URL": gateway.url, "CLAUDE_CODE_ATTRIBUTION_HEADER": "0"})


def test_a_healthy_stack_answers_every_field_and_exits_0(capsys, vllm, gateway, local_claude) -> None:
    code, data = probe_json(capsys, "--vllm", vllm.url, "--claude-settings", str(local_claude), "--messages",
                            options=MEASURING)
    assert code == 0, data["findings"]
    assert data["vllm_up"] is True and data["gateway_up"] is True and data["messages_ok"] is True
    assert data["served_model"] == "RedHatAI/GLM-5.3-Flash-NVFP4" and data["max_model_len"] == 262144
    assert data["claude_code_target"] == "gateway" and data["gateway_url"] == gateway.url
    assert data["prefix_cache_hit_rate"] == pytest.approx(0.95)
    assert data["prefix_cache_hit_rate_lifetime"] != pytest.approx(0.95)
    assert data["kv_cache_usage"] == pytest.approx(0.31)
    assert 2.5 < data["ttft_p50_s"] <= 5.0
    assert data["build"] == "glm-5.3-flash-nvfp4-redhat" and data["plan"]["decode_tok_s"] == pytest.approx(46.9)
    assert not texts(data, "critical") and not texts(data, "warning"), data["findings"]


def test_text_output_names_each_part(capsys, vllm, gateway, local_claude) -> None:
    code, out, _ = probe(capsys, "--vllm", vllm.url, "--claude-settings", str(local_claude))
    assert code == 0
    assert f"vLLM        up at {vllm.url} · 0.33.0 · serves RedHatAI/GLM-5.3-Flash-NVFP4" in out
    assert f"Claude Code -> gateway ({gateway.url}, from {local_claude})" in out
    assert "prefix-cache hits 95%" in out and "KV cache 31%" in out


def test_a_low_hit_rate_warns_with_the_first_token_time(capsys, settings_file) -> None:
    server = vllm_server(hits_per_scrape=120, queries_per_scrape=1000)
    try:
        code, data = probe_json(capsys, "--vllm", server.url, "--claude-settings",
                                str(settings_file({"ANTHROPIC_BASE_URL": server.url,
                                                   "CLAUDE_CODE_ATTRIBUTION_HEADER": "0"})))
    finally:
        server.close()
    assert data["prefix_cache_hit_rate"] == pytest.approx(0.12)
    assert any(t.startswith("prefix-cache hit rate 12% where an agent should see ~95%: first tokens take ~60 s")
               for t in texts(data, "warning"))
    assert code == 0


def test_vllm_down_is_one_clear_sentence_and_exit_1(capsys, settings_file) -> None:
    url = closed_port_url()
    code, data = probe_json(capsys, "--vllm", url, "--claude-settings", str(settings_file({"ANTHROPIC_BASE_URL": url})))
    assert code == 1 and data["vllm_up"] is False and data["served_model"] is None
    assert texts(data, "critical")[0] == (f"the model server is down: nothing answers at {url}/health (connection "
                                          "refused or host unreachable); start vLLM or llama-server, or pass "
                                          "--vllm URL")
    assert (f"Claude Code points at the model server directly ({url}), which is down: every agent request fails"
            in texts(data, "critical"))
    assert main(["probe", "--vllm", url, "--claude-settings", str(settings_file())]) == 1
    assert capsys.readouterr().out.startswith(f"server      DOWN at {url}")  # nothing answered to name an engine


def test_a_stalled_server_ends_within_the_timeout(capsys, settings_file) -> None:
    server = vllm_server(mode="stall")
    started = time.monotonic()
    try:
        code, out, _ = probe(capsys, "--vllm", server.url, "--claude-settings", str(settings_file()), stalled=True)
    finally:
        server.close()
    assert time.monotonic() - started < 3.0, "a 0.3 s timeout, not the server's 30 s stall (slack for a loaded CI box)"
    assert code == 1
    assert f"the model server is down: {server.url}/health did not answer within 0.3 s: the server is hung" in out


def test_a_stalled_gateway_ends_within_the_timeout(capsys, vllm, settings_file) -> None:
    gateway = gateway_server(mode="stall")
    started = time.monotonic()
    try:
        code, data = probe_json(capsys, "--vllm", vllm.url, "--claude-settings",
                                str(settings_file({"ANTHROPIC_BASE_URL": gateway.url})), stalled=True)
    finally:
        gateway.close()
    assert time.monotonic() - started < 10.0, "0.3 s timeouts, not the gateway's 30 s stall (slack for a loaded box)"
    assert code == 1 and data["gateway_up"] is False and data["claude_code_target"] == "gateway"
    assert any(t.startswith("the gateway Claude Code points at is down:") and "did not answer within 0.3 s" in t
               for t in texts(data, "critical"))


def test_server_errors_are_named(capsys, settings_file) -> None:
    server = vllm_server(mode="error")
    try:
        code, data = probe_json(capsys, "--vllm", server.url, "--claude-settings", str(settings_file()))
    finally:
        server.close()
    assert code == 1
    assert any(t.startswith(f"vLLM at {server.url} answers /health with HTTP 500: Internal Server Error")
               for t in texts(data, "critical"))
    assert any(t.startswith(f"vLLM {server.url}/v1/models answered HTTP 500") for t in texts(data, "critical"))


def test_a_dead_engine_is_named(capsys, settings_file) -> None:
    server = vllm_server(mode="dead-engine")
    try:
        code, data = probe_json(capsys, "--vllm", server.url, "--claude-settings", str(settings_file()))
    finally:
        server.close()
    assert code == 1 and data["vllm_up"] is False
    assert (f"vLLM at {server.url} answers /health with HTTP 503: its engine is dead; restart vLLM"
            in texts(data, "critical"))


def test_garbage_is_not_taken_for_vllm(capsys, settings_file) -> None:
    server = vllm_server(mode="other-json")
    try:
        code, data = probe_json(capsys, "--vllm", server.url, "--claude-settings", str(settings_file()))
    finally:
        server.close()
    assert code == 1 and data["vllm_up"] is False
    assert any("did not return vLLM's model list" in t and t.endswith("), so this port may not be vLLM")
               for t in texts(data, "critical"))
    assert any("/metrics: the /metrics answer holds no line in Prometheus text format" in t
               for t in texts(data, "warning"))


WEB_UI_SENTENCE = ("vLLM is not at {url}: {url}/health answers with an HTML page titled 'Open WebUI' (HTTP 200), "
                   "not vLLM's API, so a web UI, a login page or a proxy holds this port; check the host and port "
                   "vLLM listens on (vllm serve --port, 8000 by default), or pass --vllm URL")


def test_a_web_page_is_named_once_as_what_answers(capsys, settings_file) -> None:
    """A web UI on the port given as vLLM and gateway: one sentence each naming the page, never "gateway up"."""
    server = vllm_server(mode="web-ui")
    try:
        code, out, _ = probe(capsys, "--vllm", server.url, "--gateway", server.url,
                             "--claude-settings", str(settings_file({})))
        _, data = probe_json(capsys, "--vllm", server.url, "--gateway", server.url,
                             "--claude-settings", str(settings_file({})))
    finally:
        server.close()
    assert code == 1
    assert (f"vLLM        NOT FOUND at {server.url}: an HTML page titled 'Open WebUI' (HTTP 200) answers there"
            in out.splitlines())
    assert (f"gateway     NOT FOUND at {server.url}: an HTML page titled 'Open WebUI' (HTTP 200) answers there"
            in out.splitlines())
    assert " up " not in out and "DOWN" not in out and "Prometheus" not in out and "model list" not in out
    assert data["vllm_up"] is False and data["gateway_up"] is False
    assert data["vllm_answered_by"] == data["gateway_answered_by"] == "an HTML page titled 'Open WebUI' (HTTP 200)"
    assert texts(data, "critical")[:2] == [
        WEB_UI_SENTENCE.format(url=server.url),
        f"no gateway at {server.url}: {server.url}/health answers with an HTML page titled 'Open WebUI' (HTTP 200), "
        "not a gateway's API, so a web UI, a login page or a proxy holds this port; check the port the gateway "
        "listens on, or pass --gateway URL"]
    assert not texts(data, "ok") and not texts(data, "warning")


def test_claude_code_pointed_at_a_web_page_is_told_what_answers(capsys, settings_file) -> None:
    server = vllm_server(mode="web-ui")
    try:
        _, data = probe_json(capsys, "--vllm", server.url, "--claude-settings",
                             str(settings_file({"ANTHROPIC_BASE_URL": server.url})))
    finally:
        server.close()
    assert texts(data, "critical")[:2] == [
        WEB_UI_SENTENCE.format(url=server.url),
        f"Claude Code points at {server.url}, where an HTML page titled 'Open WebUI' (HTTP 200) answers, not vLLM: "
        "every agent request fails"]


def test_a_login_redirect_is_not_vllm(capsys, settings_file) -> None:
    server = vllm_server(mode="login")
    try:
        code, data = probe_json(capsys, "--vllm", server.url, "--claude-settings", str(settings_file()))
    finally:
        server.close()
    assert code == 1 and data["vllm_up"] is False
    assert texts(data, "critical")[0].startswith(
        f"vLLM is not at {server.url}: {server.url}/health answers with a redirect to /login?next=/health (HTTP 302), "
        "not vLLM's API, so a web UI, a login page or a proxy holds this port;")


def test_a_gateway_that_asks_for_a_key_is_up(capsys, vllm, settings_file) -> None:
    gateway = gateway_server(mode="key")
    try:
        _, data = probe_json(capsys, "--vllm", vllm.url, "--claude-settings",
                             str(settings_file({"ANTHROPIC_BASE_URL": gateway.url})))
    finally:
        gateway.close()
    assert data["gateway_up"] is True and data["claude_code_target"] == "gateway"
    assert (f"the gateway Claude Code points at is up at {gateway.url} (its {gateway.url}/health asks for a key: "
            "HTTP 401)") in texts(data, "ok")
    assert not any("--api-key" in t for t in texts(data, "critical"))


def test_claude_code_is_never_told_to_use_a_dead_vllm(capsys, settings_file) -> None:
    url = closed_port_url()
    code, data = probe_json(capsys, "--vllm", url, "--claude-settings", str(settings_file({})))
    assert code == 1 and data["claude_code_target"] == "cloud"
    cloud = [t for t in texts(data, "critical") if t.startswith("Claude Code goes to the cloud")]
    assert cloud == [f"Claude Code goes to the cloud: no ANTHROPIC_BASE_URL in {settings_file({})} or the "
                     f"environment; nothing local answers to point it at yet: the model server at {url} is down; "
                     "start vLLM or llama-server, or pass --vllm URL where it runs, and probe again for the address to "
                     "give Claude Code"]


def test_claude_code_is_told_the_address_that_answers(capsys, vllm, gateway, settings_file) -> None:
    dead = closed_port_url()
    _, to_gateway = probe_json(capsys, "--vllm", dead, "--gateway", gateway.url, "--claude-settings",
                               str(settings_file({})))
    _, to_vllm = probe_json(capsys, "--vllm", vllm.url, "--claude-settings", str(settings_file({})))
    assert any(f'add "ANTHROPIC_BASE_URL": "{gateway.url}" to the "env" of' in t for t in texts(to_gateway, "critical"))
    assert any(f'add "ANTHROPIC_BASE_URL": "{vllm.url}" to the "env" of' in t for t in texts(to_vllm, "critical"))


def test_the_token_is_sent_but_never_printed(capsys, monkeypatch, settings_file) -> None:
    secret = "sk-test-5f1c9e0d7a"
    monkeypatch.setenv("VLLM_KEY", secret)
    server = vllm_server(mode="error")
    try:
        code, out, err = probe(capsys, "--vllm", server.url, "--token-env", "VLLM_KEY", "--json",
                               "--claude-settings", str(settings_file()))
    finally:
        server.close()
    assert f"Bearer {secret}" in server.state.seen_auth
    assert "Internal Server Error; you sent Bearer ***" in out
    assert secret not in out and secret not in err


def test_a_refused_or_missing_key_says_what_to_do(capsys, monkeypatch, settings_file) -> None:
    server = vllm_server(api_key="right-key")
    monkeypatch.setenv("WRONG_KEY", "wrong-key-123")
    try:
        _, without = probe_json(capsys, "--vllm", server.url, "--claude-settings", str(settings_file()))
        _, wrong = probe_json(capsys, "--vllm", server.url, "--token-env", "WRONG_KEY",
                              "--claude-settings", str(settings_file()))
    finally:
        server.close()
    assert without["vllm_up"] is True and without["served_model"] is None
    assert any("answered HTTP 401: vLLM was started with --api-key; pass --token-env NAME" in t
               for t in texts(without, "critical"))
    assert any("answered HTTP 401: the token was refused" in t for t in texts(wrong, "critical"))
    assert "wrong-key-123" not in json.dumps(wrong)


def test_an_unset_token_variable_is_a_usage_error(capsys) -> None:
    code = main(["probe", "--token-env", "SPARKADVISOR_NO_SUCH_VAR"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--token-env SPARKADVISOR_NO_SUCH_VAR names an environment variable that is not set" in err


def test_no_base_url_means_the_cloud(capsys, vllm, settings_file) -> None:
    code, data = probe_json(capsys, "--vllm", vllm.url, "--claude-settings", str(settings_file({})))
    assert code == 1 and data["claude_code_target"] == "cloud"
    assert texts(data, "critical")[0].startswith("Claude Code goes to the cloud: no ANTHROPIC_BASE_URL in ")


def test_the_environment_counts_when_settings_say_nothing(capsys, vllm, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", vllm.url)
    code, data = probe_json(capsys, "--vllm", vllm.url, "--claude-settings", str(tmp_path / "missing.json"))
    assert data["claude_code_target"] == "vllm" and data["claude_code_settings_source"] == "environment"
    assert any("CLAUDE_CODE_ATTRIBUTION_HEADER" in t for t in texts(data, "warning"))
    assert any("a name with '/', which Claude Code cannot use" in t for t in texts(data, "warning"))


def test_a_broken_settings_file_is_named(capsys, vllm, settings_file) -> None:
    path = settings_file(text='{"env": {"ANTHROPIC_BASE_URL": }')
    _, data = probe_json(capsys, "--vllm", vllm.url, "--claude-settings", str(path))
    assert any(t.startswith(f"{path} is not valid JSON (line 1, column 32") for t in texts(data, "warning"))


@pytest.mark.parametrize(("text", "words"), [
    ("[1, 2]", "holds a JSON array, not an object"),
    ('{"env": ["ANTHROPIC_BASE_URL=http://x:8000"]}', '"env" in {path} is a JSON array, not an object'),
])
def test_settings_of_the_wrong_shape_are_named(capsys, vllm, settings_file, text, words) -> None:
    path = settings_file(text=text)
    _, data = probe_json(capsys, "--vllm", vllm.url, "--claude-settings", str(path))
    assert any(words.format(path=path) in t for t in texts(data, "warning")), texts(data, "warning")


def test_short_context_and_named_build(capsys, settings_file) -> None:
    server = vllm_server(served="glm", root="/models/glm", max_model_len=32768)
    try:
        code, data = probe_json(capsys, "--vllm", server.url, "--build", "glm-5.3-flash-nvfp4-redhat",
                                "--claude-settings", str(settings_file({"ANTHROPIC_BASE_URL": server.url,
                                                                        "CLAUDE_CODE_ATTRIBUTION_HEADER": "0",
                                                                        "ANTHROPIC_DEFAULT_SONNET_MODEL": "glm"})))
    finally:
        server.close()
    assert code == 1 and data["build"] == "glm-5.3-flash-nvfp4-redhat"
    assert texts(data, "critical") == ["max_model_len 32,768 but the agentic workload needs 100,000: longer prompts "
                                       "are refused; restart vLLM with --max-model-len 100000 or more"]


def test_a_model_name_vllm_does_not_serve(capsys, settings_file) -> None:
    server = vllm_server(served="glm")
    try:
        _, data = probe_json(capsys, "--vllm", server.url, "--claude-settings", str(settings_file(
            {"ANTHROPIC_BASE_URL": server.url, "CLAUDE_CODE_ATTRIBUTION_HEADER": "0",
             "ANTHROPIC_DEFAULT_SONNET_MODEL": "claude-sonnet-4"})))
    finally:
        server.close()
    assert ("ANTHROPIC_DEFAULT_SONNET_MODEL=claude-sonnet-4 names a model vLLM does not serve (glm); "
            "Claude Code's requests will fail") in texts(data, "warning")


def test_a_port_that_does_not_speak_http(capsys, settings_file) -> None:
    from probe_fakes import NotHttpServer

    server = NotHttpServer()
    try:
        code, data = probe_json(capsys, "--vllm", server.url, "--claude-settings", str(settings_file()))
    finally:
        server.close()
    assert code == 1 and data["vllm_up"] is False
    assert (f"the model server is down: {server.url}/health answered with something that is not HTTP, so another "
            "service may hold this port; start vLLM or llama-server, or pass --vllm URL") in texts(data, "critical")


def test_urls_pasted_with_v1(capsys, vllm, settings_file) -> None:
    path = settings_file({"ANTHROPIC_BASE_URL": f"{vllm.url}/v1", "CLAUDE_CODE_ATTRIBUTION_HEADER": "0"})
    code, data = probe_json(capsys, "--vllm", f"{vllm.url}/v1/", "--claude-settings", str(path))
    assert data["vllm_up"] is True and data["vllm_url"] == vllm.url and data["claude_code_target"] == "vllm"
    assert code == 1
    assert (f"ANTHROPIC_BASE_URL {vllm.url}/v1 ends in /v1, but Claude Code appends /v1/messages itself; "
            "drop the /v1") in texts(data, "critical")


def test_a_malformed_url_is_one_sentence(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["probe", "--vllm", "http://[::1"])
    assert exit_info.value.code == 2
    assert "cannot be read as a URL" in capsys.readouterr().err


def test_a_served_build_the_plan_says_does_not_fit_is_not_held_to_that_plans_speed(capsys, vllm, local_claude):
    # GLM-5.3-Flash needs two Sparks: served, it says the cluster options are wrong instead of
    # comparing the decode and first token with figures of a build that cannot load on one.
    code, data = probe_json(capsys, "--vllm", vllm.url, "--claude-settings", str(local_claude), "--nodes", "1")
    assert code == 0 and data["build"] == "glm-5.3-flash-nvfp4-redhat"
    assert texts(data, "warning") == [
        "vLLM serves glm-5.3-flash-nvfp4-redhat, which by the plan does not fit on 1 x DGX Spark (it needs "
        "2 nodes): check --nodes and --hardware; its speed is not held against that plan"]
    assert not any("expected" in t or "plan expects" in t for f in data["findings"] for t in [f["text"]])
    assert data["plan"]["fits"] is False and data["plan"]["decode_tok_s"] is None and data["plan"]["ttft_s"] is None


def test_a_base_url_that_is_not_a_url_is_named_as_such_not_probed(capsys, vllm, settings_file) -> None:
    # It was probed as a gateway: "not a url/health broke off the exchange (UnsupportedProtocol)".
    path = settings_file({"ANTHROPIC_BASE_URL": "spark 1:8000", "CLAUDE_CODE_ATTRIBUTION_HEADER": "0"})
    code, data = probe_json(capsys, "--vllm", vllm.url, "--claude-settings", str(path))
    assert code == 1 and data["gateway_url"] is None
    assert texts(data, "critical") == [
        f"ANTHROPIC_BASE_URL in {path} 'http://spark 1:8000' contains spaces or control characters; give a URL "
        "such as http://spark1:8000; Claude Code cannot reach it, so every agent request fails"]
    assert not any("UnsupportedProtocol" in f["text"] or "neither vLLM" in f["text"] for f in data["findings"])


def test_an_empty_token_variable_name_is_named_as_such(capsys) -> None:
    assert main(["probe", "--token-env", ""]) == 2
    assert capsys.readouterr().err == ("sparkadvisor: --token-env needs the name of an environment variable that "
                                       "holds vLLM's --api-key (got an empty name)\n")


def test_a_gateway_given_as_the_model_server_is_named_as_what_answers(capsys, settings_file) -> None:
    """A gateway answers /health but lists no models: something answers there, so not "server DOWN"."""
    server = gateway_server()
    try:
        code, out, _ = probe(capsys, "--vllm", server.url, "--claude-settings", str(settings_file({})))
        _, data = probe_json(capsys, "--vllm", server.url, "--claude-settings", str(settings_file({})))
    finally:
        server.close()
    assert code == 1
    assert (f"vLLM        NOT FOUND at {server.url}: a server with no model list at /v1/models (HTTP 404) answers "
            "there") in out.splitlines()
    assert "DOWN" not in out and data["vllm_up"] is False
    assert data["vllm_answered_by"] == "a server with no model list at /v1/models (HTTP 404)"


def test_json_lists_findings_most_severe_first_and_a_missing_settings_file_is_said(capsys, tmp_path) -> None:
    server = vllm_server()
    missing = tmp_path / "setings.json"  # a typo of settings.json
    try:
        _, data = probe_json(capsys, "--vllm", server.url, "--gateway", closed_port_url(), "--claude-settings",
                             str(missing))
    finally:
        server.close()
    order = {"critical": 0, "warning": 1, "info": 2, "ok": 3}
    ranks = [order[f["severity"]] for f in data["findings"]]
    assert ranks == sorted(ranks), [f["severity"] for f in data["findings"]]
    assert any(t.startswith(f"{missing} does not exist, so nothing here was read from it")
               for t in texts(data, "warning"))


def test_a_server_that_asks_for_its_api_key_is_not_said_to_serve_nothing(capsys, settings_file) -> None:
    server = vllm_server(api_key="secret-key")
    try:
        _, out, _ = probe(capsys, "--vllm", server.url, "--claude-settings", str(settings_file({})))
    finally:
        server.close()
    head = out.splitlines()[0]
    assert "serves nothing" not in head and head.endswith("· models unknown") and "secret-key" not in out
