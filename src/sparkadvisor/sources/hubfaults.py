"""Hub failures as one sentence each: what the library or the network raised, in words a person can act on."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any, Literal

from sparkadvisor.sources.deadline import Deadline
from sparkadvisor.urls import UrlError, check_url, redact_urls


class HubError(Exception):
    """A repo that cannot be read, said in one sentence a person can act on."""


def endpoint() -> str:
    """The hub's address: HF_ENDPOINT when set, else huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def shown_endpoint() -> str:
    """The endpoint for a sentence: any credentials in HF_ENDPOINT replaced by ***."""
    return redact_urls(endpoint())


def check_endpoint() -> None:
    """HF_ENDPOINT, when set, is a usable URL (else one HubError sentence naming it)."""
    if os.environ.get("HF_ENDPOINT"):
        try:
            check_url(os.environ["HF_ENDPOINT"], "$HF_ENDPOINT")
        except UrlError as error:
            raise HubError(str(error)) from None


def stalled(repo: str, what: str, timeout_s: float) -> str:
    """The sentence for an import that ran out of time while waiting for `what`."""
    return (f"{shown_endpoint()} stopped answering while sending {what} of {repo} (timed out: the import did not "
            f"finish within {timeout_s:g} s); try again later, or raise the timeout")


def malformed(repo: str, filename: str, error: Exception) -> HubError:
    reason = str(error).split("): ", 1)[-1].split(". ")[0].rstrip(".") or type(error).__name__
    return HubError(f"the safetensors header of {filename} in {repo} is malformed ({reason})")


class translated:
    """A context that turns whatever huggingface_hub or the network raises into one HubError."""

    def __init__(self, repo: str, revision: str | None, what: str, deadline: Deadline | None = None):
        self.repo, self.revision, self.what = repo, revision or "main", what
        self.deadline = deadline
        self.waiting = deadline.waiting_for(what) if deadline else None

    def __enter__(self) -> None:
        if self.waiting:
            self.waiting.__enter__()

    def __exit__(self, kind: type | None, error: BaseException | None, tb: Any) -> Literal[False]:
        if self.waiting:
            self.waiting.__exit__(kind, error, tb)
        if error is None or isinstance(error, (HubError, KeyboardInterrupt)):
            return False
        if isinstance(error, Exception):
            raise explain(error, self.repo, self.revision, self.what, self.deadline) from error
        return False


def explain(error: Exception, repo: str, revision: str, what: str, deadline: Deadline | None = None) -> HubError:
    """One sentence for a failure while reading `what` of `repo` at `revision` (within `deadline`)."""
    from huggingface_hub import errors

    url = f"https://huggingface.co/{repo}"
    for cause in _chain(error):
        if isinstance(cause, errors.GatedRepoError):
            return HubError(_gated(repo, url))
        if isinstance(cause, errors.RevisionNotFoundError):
            return HubError(f"{repo} has no revision {revision!r}; give a branch, tag or commit that exists")
        if isinstance(cause, errors.RepositoryNotFoundError):
            return HubError(f"no model repo {repo} on {shown_endpoint()} (or it is private and your token "
                            "cannot see it)")
        if isinstance(cause, errors.LocalEntryNotFoundError):
            return _not_downloaded(cause, repo, what, deadline)
        if isinstance(cause, errors.EntryNotFoundError):
            return HubError(f"{repo} has no {what} at revision {revision}; only transformer repos with a "
                            "config.json and safetensors weights can be imported")
        if isinstance(cause, errors.OfflineModeIsEnabled):
            return HubError(f"offline (HF_HUB_OFFLINE=1) and {what} of {repo} is not in the hub cache")
        if found := _network(cause, repo, what, deadline):
            return found
        if isinstance(cause, json.JSONDecodeError):
            return HubError(f"{shown_endpoint()} sent something that is not JSON for {what} of {repo}; check that "
                            "HF_ENDPOINT is a Hugging Face hub, or try again later")
    return HubError(f"reading {what} of {repo} failed: {_first_line(error)}")


def _not_downloaded(error: BaseException, repo: str, what: str, deadline: Deadline | None) -> HubError:
    """The library fell back to its cache and found nothing: say why the download failed."""
    for cause in _chain(error):
        if cause is not error and (found := _network(cause, repo, what, deadline)):
            return found
    return HubError(f"{what} of {repo} could not be downloaded from {shown_endpoint()} and the hub cache does not hold "
                    "it; try again later")


def _gated(repo: str, url: str) -> str:
    from huggingface_hub import get_token

    if get_token() is None:
        return (f"{repo} is gated and no Hugging Face token was found: accept its terms at {url}, "
                "then set HF_TOKEN or run `hf auth login`")
    return f"{repo} is gated and your token has no access to it yet: accept its terms at {url} with that account"


def _network(cause: BaseException, repo: str, what: str, deadline: Deadline | None) -> HubError | None:
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.utils import httpx  # httpx2 under huggingface_hub 2.x

    if isinstance(cause, httpx.TimeoutException):
        return HubError(stalled(repo, what, deadline.seconds) if deadline else
                        f"{shown_endpoint()} stopped answering while sending {what} of {repo} (timed out); "
                        "try again later, or raise the timeout")
    if isinstance(cause, (httpx.RemoteProtocolError, httpx.ReadError)):  # it answered, then the answer broke off
        return HubError(f"{shown_endpoint()} cut off {what} of {repo} part way "
                        f"({_first_line(cause) or type(cause).__name__}); try again, or set HF_HUB_OFFLINE=1 to use "
                        "what the hub cache holds")
    if isinstance(cause, (httpx.TransportError, ConnectionError)):
        return HubError(f"cannot reach {shown_endpoint()} ({_first_line(cause) or type(cause).__name__}); check the "
                        "network, or set HF_HUB_OFFLINE=1 to use what the hub cache holds")
    if isinstance(cause, HfHubHTTPError) and cause.response is not None:
        return HubError(f"{shown_endpoint()} answered HTTP {cause.response.status_code} for {what} of {repo}; "
                        "try again later")
    return None


def _chain(error: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [""])[0][:200]
