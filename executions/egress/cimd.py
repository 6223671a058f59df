"""Fetching an OAuth client's metadata document (its ``client_id`` is an https URL) through
the egress guard, as django-oauth-toolkit's ``CIMD_METADATA_FETCHER``.

The toolkit's own fetcher refuses every non-public address outright; ToolHub's guard
does the same by default and lets an operator open exactly the networks or names
``TOOLHUB_EGRESS_ALLOW`` lists, as for every other outgoing connection. The rest is
as the draft asks: https only, the checked address pinned (never resolved again),
the certificate verified for the URL's host, no redirects, one deadline for the
whole fetch, at most ``CIMD_MAX_DOCUMENT_SIZE`` bytes of JSON object.

Why a document was refused is kept for a few minutes
(``registry.oauth.client_documents``), so the consent page can say it instead of
"unknown client".
"""

from __future__ import annotations

import json
import re
import ssl
import time
from urllib.parse import urlsplit

import urllib3
from oauth2_provider.cimd import CIMDError
from oauth2_provider.settings import oauth2_settings

from executions.egress import EgressDenied, HostResolutionError, check_url
from registry.oauth.client_documents import remember_refusal

_MAX_AGE = re.compile(r"max-age\s*=\s*(\d+)", re.IGNORECASE)


def _max_age(cache_control: str | None) -> int:
    floor = oauth2_settings.CIMD_METADATA_MIN_AGE_SECONDS
    ceiling = oauth2_settings.CIMD_METADATA_MAX_AGE_SECONDS
    age = ceiling
    lowered = (cache_control or "").lower()
    if "no-store" in lowered or "no-cache" in lowered:
        age = floor
    elif match := _MAX_AGE.search(lowered):
        age = int(match.group(1))
    return max(floor, min(age, ceiling))


def _checked_url(client_id: str):
    parts = urlsplit(client_id)
    if parts.scheme != "https" or not parts.hostname:
        raise CIMDError("the client_id must be an https URL with a host")
    if parts.username or parts.password or parts.fragment:
        raise CIMDError("the client_id URL may not hold a user part or a fragment")
    if not parts.path or any(seg in (".", "..") for seg in parts.path.split("/")):
        raise CIMDError("the client_id URL needs a path without '.' or '..' segments")
    return parts


class GuardedMetadataFetcher:
    """``fetch(client_id)`` → ``(metadata, max_age_seconds)``, or ``CIMDError`` saying why."""

    def fetch(self, client_id: str):
        try:
            return self._fetch(client_id)
        except CIMDError as exc:
            remember_refusal(client_id, str(exc))
            raise

    def _fetch(self, client_id: str):
        parts = _checked_url(client_id)
        try:
            destination = check_url(client_id)
        except (EgressDenied, HostResolutionError) as exc:
            raise CIMDError(f"the client's metadata document may not be fetched: {exc}") from None
        deadline = time.monotonic() + oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        host_header = parts.netloc
        last: Exception | None = None
        for address in destination.addresses:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            pool = urllib3.HTTPSConnectionPool(
                host=address,
                port=destination.port,
                timeout=urllib3.Timeout(total=remaining),
                retries=False,
                maxsize=1,
                ssl_context=ssl.create_default_context(),
                server_hostname=parts.hostname,
                assert_hostname=parts.hostname,
            )
            try:
                response = pool.urlopen(
                    "GET",
                    path,
                    headers={"Host": host_header, "Accept": "application/json"},
                    redirect=False,
                    preload_content=False,
                )
                try:
                    return self._document(response, deadline)
                finally:
                    response.release_conn()
            except urllib3.exceptions.HTTPError as exc:
                last = exc
            finally:
                pool.close()
        reason = type(last).__name__ if last else "the deadline passed"
        raise CIMDError(f"the client's metadata document could not be fetched ({reason})")

    @staticmethod
    def _document(response, deadline: float):
        if response.status != 200:
            raise CIMDError(f"the client's metadata document answered HTTP {response.status}")
        kind = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind != "application/json" and not (
            kind.startswith("application/") and kind.endswith("+json")
        ):
            raise CIMDError(f"the client's metadata document is not JSON ({kind or 'no type'})")
        limit = oauth2_settings.CIMD_MAX_DOCUMENT_SIZE
        # Read piece by piece against the one deadline: a read's timeout is per read, so a
        # host sending a byte now and then would otherwise hold a thread for hours.
        body = b""
        while len(body) <= limit:
            if time.monotonic() > deadline:
                raise CIMDError("the client's metadata document took too long to arrive")
            chunk = response.read1(limit + 1 - len(body))
            if not chunk:
                break
            body += chunk
        if len(body) > limit:
            raise CIMDError(f"the client's metadata document is over {limit} bytes")
        try:
            data = json.loads(body)
        except ValueError:
            raise CIMDError("the client's metadata document is not valid JSON") from None
        if not isinstance(data, dict):
            raise CIMDError("the client's metadata document is not a JSON object")
        return data, _max_age(response.headers.get("Cache-Control"))
