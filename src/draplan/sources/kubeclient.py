"""A read-only connection to a Kubernetes API server.

lightkube resolves the configuration (kubeconfig file, context, in-cluster service account) and
builds the authenticated HTTP client (tokens, token files, exec plugins, client certificates,
TLS); the requests themselves are raw JSON GETs, so draplan decodes with its own codec and never
pays for a second object model. Every failure becomes one `BadInput` line; credentials are never
part of a message.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import msgspec
import yaml
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import SERVICE_ACCOUNT, KubeConfig, SingleConfig
from lightkube.config.models import User
from lightkube.core.exceptions import ConfigError

from draplan.api.errors import BadInput

DEFAULT_KUBECONFIG = "~/.kube/config"
MAX_PAGES = 100_000  # 50 million objects at 500 a page: a bound, not a limit anyone reaches


@dataclass(frozen=True)
class Access:
    """What a request needs permission for, to name it when the server says 403."""

    verb: str
    resource: str = ""
    group: str = ""
    namespace: str = ""
    namespaced: bool = False
    url: str = ""  # a non-resource URL (discovery)

    def describe(self) -> str:
        """What was refused and the RBAC rule that would allow it."""
        if self.url:
            return (
                f"{self.verb} the non-resource URL {self.url}; grant RBAC "
                f"nonResourceURLs [{self.url}] verbs [{self.verb}]"
            )
        scope = f'in namespace "{self.namespace}"' if self.namespace else "at the cluster scope"
        hint = ", or read one namespace with -n" if self.namespaced and not self.namespace else ""
        return (
            f'{self.verb} resource "{self.resource}" in API group "{self.group}" {scope}; '
            f"grant RBAC verbs [{self.verb}] on resources [{self.resource}] in apiGroups "
            f'["{self.group}"]{hint}'
        )


class ContinueExpired(BadInput):
    """410 Gone: a `continue` token outlived the list's resource version."""


class Forbidden(BadInput):
    """403: the credentials may not make this request."""


class _ListMeta(msgspec.Struct):
    continue_: str = msgspec.field(default="", name="continue")
    remaining_item_count: int | None = msgspec.field(default=None, name="remainingItemCount")


class _ListPage(msgspec.Struct):
    items: list[Any] | None = None
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)


_PAGE_DECODER = msgspec.json.Decoder(_ListPage)
_ANY_DECODER = msgspec.json.Decoder()

PageCallback = Callable[[int, int | None], None]


def _yaml_problem(err: yaml.YAMLError) -> str:
    # Only the problem and position: the default text quotes the line, which may hold a token.
    mark = getattr(err, "problem_mark", None)
    where = f" at line {mark.line + 1}" if mark is not None else ""
    return f"invalid YAML{where}: {getattr(err, 'problem', None) or 'cannot parse'}"


_PATH_KEYS = {
    "cluster": ("certificate-authority",),
    "user": ("client-certificate", "client-key", "tokenFile"),
}


def _read_kubeconfig(path: Path) -> dict[str, Any]:
    """One kubeconfig file, with its relative file references made absolute."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise BadInput(_yaml_problem(err), source=str(path)) from None
    except (OSError, UnicodeDecodeError) as err:
        raise BadInput(f"cannot read kubeconfig: {getattr(err, 'strerror', None) or err}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise BadInput("a kubeconfig must be a mapping", source=str(path))
    for section, inner in (("clusters", "cluster"), ("users", "user")):
        for entry in data.get(section) or []:
            body = entry.get(inner) if isinstance(entry, dict) else None
            if isinstance(body, dict):
                for key in _PATH_KEYS[inner]:
                    if isinstance(body.get(key), str) and not os.path.isabs(body[key]):
                        body[key] = str(path.parent / body[key])
    return data


def _merge(files: list[Path]) -> dict[str, Any]:
    """KUBECONFIG with several files, as kubectl merges them: the first mention wins."""
    merged: dict[str, Any] = {"clusters": [], "contexts": [], "users": []}
    for path in files:
        data = _read_kubeconfig(path)
        if "current-context" not in merged and data.get("current-context"):
            merged["current-context"] = data["current-context"]
        for section in ("clusters", "contexts", "users"):
            seen = {e.get("name") for e in merged[section]}
            for entry in data.get(section) or []:
                if isinstance(entry, dict) and entry.get("name") not in seen:
                    merged[section].append(entry)
                    seen.add(entry.get("name"))
    return merged


def _in_cluster_available(service_account: str) -> bool:
    env = os.environ
    return bool(
        env.get("KUBERNETES_SERVICE_HOST") and env.get("KUBERNETES_SERVICE_PORT")
    ) and os.path.isfile(os.path.join(service_account, "token"))


def resolve_config(
    kubeconfig: str | None = None,
    context: str | None = None,
    *,
    service_account: str = SERVICE_ACCOUNT,
) -> SingleConfig:
    """The cluster, user and context to use, in kubectl's order: `--kubeconfig`, `$KUBECONFIG`,
    `~/.kube/config`, then the in-cluster service account."""
    if kubeconfig:
        path = Path(kubeconfig).expanduser()
        if not path.is_file():
            raise BadInput("kubeconfig file not found", source=kubeconfig)
        files, label = [path], kubeconfig
    else:
        env = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
        files = [Path(p).expanduser() for p in env if Path(p).expanduser().is_file()]
        label = "$KUBECONFIG"
        if not files:
            default = Path(DEFAULT_KUBECONFIG).expanduser()
            files, label = ([default], str(default)) if default.is_file() else ([], "")
    try:
        if not files:
            if context is None and _in_cluster_available(service_account):
                single = KubeConfig.from_service_account(service_account).get()
                assert single is not None
                return single
            raise BadInput(
                "no cluster configured: give -f FILE, or --kubeconfig PATH "
                "(no $KUBECONFIG, ~/.kube/config or in-cluster service account found)"
            )
        conf = KubeConfig.from_dict(_merge(files), fname=files[0])
        single = conf.get(context)
    except ConfigError as err:
        raise BadInput(str(err), source=label) from None
    except KeyError as err:
        raise BadInput(f"invalid kubeconfig: no entry {err}", source=label) from None
    except (msgspec.ValidationError, TypeError, AttributeError) as err:
        raise BadInput(f"invalid kubeconfig: {err}", source=label) from None
    assert single is not None
    # lightkube asserts a user; a context without one (an open local server) needs none.
    return single if single.user is not None else single._replace(user=User())


def server_label(url: str) -> str:
    """The server URL without any user:password part, for messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{host}{port}{parts.path.rstrip('/')}"


_EXEC_FAILED = re.compile(r"^(Exec \S+ returned -?\d+)")


def _config_problem(err: ConfigError) -> str:
    # An exec plugin's stderr follows its exit code; it is not ours to print.
    m = _EXEC_FAILED.match(str(err))
    return f"credential plugin failed: {m.group(1)}" if m else str(err)


class Connection:
    """An authenticated HTTP client for one cluster; GET only."""

    def __init__(self, config: SingleConfig, *, timeout: float = 60.0) -> None:
        self.context = config.context_name
        self.server = server_label(config.cluster.server)
        self.requests = 0
        params = client_adapter.ConnectionParams(timeout=httpx2.Timeout(timeout, connect=10.0))
        try:
            self._http = client_adapter.Client(config, params)
        except ConfigError as err:
            raise BadInput(_config_problem(err), source=self.context) from None
        except (OSError, ValueError) as err:
            # A CA or client certificate file that is missing or not PEM.
            raise BadInput(f"TLS setup failed: {err}", source=self.context) from None

    def close(self) -> None:
        self._http.close()

    def _fail(self, message: str) -> BadInput:
        return BadInput(message, source=self.server)

    def get(self, path: str, access: Access, params: dict[str, str] | None = None) -> bytes | None:
        """The response body of GET `path`; None for 404 (an API that is not served)."""
        self.requests += 1
        try:
            resp = self._http.get(path, params=params)
        except ConfigError as err:
            raise self._fail(_config_problem(err)) from None
        except (KeyError, ValueError):
            # An exec credential plugin whose output holds no `status.token`.
            raise self._fail("the credential plugin returned no token") from None
        except httpx2.TimeoutException:
            raise self._fail("the API server did not answer in time") from None
        except httpx2.HTTPError as err:
            reason = str(err) or type(err).__name__
            raise self._fail(f"cannot reach the API server: {reason}") from None
        status = resp.status_code
        if status == 200:
            return resp.content
        if status == 404:
            return None
        if status == 401:
            raise self._fail(
                f"unauthorized (401): the credentials of context {self.context!r} were rejected; "
                "the token may have expired: log in again or refresh the kubeconfig"
            )
        if status == 403:
            raise Forbidden(
                f"forbidden (403): context {self.context!r} may not {access.describe()}",
                source=self.server,
            )
        if status == 410 and params and "continue" in params:
            raise ContinueExpired("continue token expired", source=self.server)
        raise self._fail(f"GET {path}: HTTP {status}: {_status_message(resp.content)}")

    def get_json(self, path: str, access: Access) -> Any:
        body = self.get(path, access)
        if body is None:
            return None
        try:
            return _ANY_DECODER.decode(body)
        except msgspec.DecodeError:
            raise self._fail(f"GET {path}: the answer is not JSON") from None

    def list_items(
        self,
        path: str,
        access: Access,
        params: dict[str, str] | None = None,
        *,
        page_size: int = 500,
        on_page: PageCallback | None = None,
    ) -> list[Any] | None:
        """Every item of a list, following `continue`; None for 404."""
        items: list[Any] = []
        query = dict(params or {}, limit=str(page_size))
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            try:
                body = self.get(path, access, query)
            except ContinueExpired:
                # The list changed too much while paging: client-go's pager then lists
                # everything in one request, and so do we (no limit: no continue, no loop).
                items.clear()
                query = dict(params or {})
                body = self.get(path, access, query)
            if body is None:
                return None
            try:
                page = _PAGE_DECODER.decode(body)
            except (msgspec.DecodeError, msgspec.ValidationError):
                raise self._fail(f"GET {path}: the answer is not a list") from None
            items.extend(page.items or ())
            token = page.metadata.continue_
            remaining = page.metadata.remaining_item_count
            if on_page is not None:
                on_page(len(items), len(items) + remaining if remaining is not None else None)
            if not token:
                return items
            if token in seen:
                raise self._fail(f"GET {path}: the server repeated a continue token")
            seen.add(token)
            query["continue"] = token
        raise self._fail(f"GET {path}: more than {MAX_PAGES} pages")


def _status_message(body: bytes) -> str:
    try:
        status = _ANY_DECODER.decode(body)
    except msgspec.DecodeError:
        return "no message"
    message = status.get("message") if isinstance(status, dict) else None
    return " ".join(str(message).split())[:300] if message else "no message"


@contextmanager
def connect(
    kubeconfig: str | None = None, context: str | None = None, *, timeout: float = 60.0
) -> Iterator[Connection]:
    """A connection to the configured cluster, closed on exit."""
    conn = Connection(resolve_config(kubeconfig, context), timeout=timeout)
    try:
        yield conn
    finally:
        conn.close()
