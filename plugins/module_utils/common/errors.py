# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Errors raised by the pure model and the backends.

Every error names the object it is about and the cause, so that a module can
turn it into one clear ``fail_json`` message without knowing where it came
from.  This file imports nothing but the standard library.
"""

import json


class TenancyError(Exception):
    """An error about one object, with a cause a user can act on.

    ``obj`` names the object (``HostClaim tenant-a/web-1``, ``node n-3``,
    ``option hostSelector``), ``cause`` says what is wrong.  ``details`` is a
    dict of extra, non-secret facts for the module result.
    """

    def __init__(self, obj, cause, details=None):
        self.obj = obj
        self.cause = cause
        self.details = dict(details or {})
        super().__init__(self.message)

    @property
    def message(self):
        if self.obj:
            return "%s: %s" % (self.obj, self.cause)
        return self.cause


class InvalidInput(TenancyError):
    """The user's input is wrong; nothing was changed."""


class NotFound(TenancyError):
    """The object does not exist, or the caller may not see it."""


class Forbidden(TenancyError):
    """The control plane refused the caller (HTTP 403)."""


class Conflict(TenancyError):
    """A precondition failed: someone else changed the object first (HTTP 409)."""


class BackendError(TenancyError):
    """Any other failure of the control plane or of the network."""


class WaitTimeout(TenancyError):
    """A wait did not reach its condition before its timeout."""


def _status_of(exc):
    """HTTP status of a client-library exception, found by duck typing.

    kubernetes' ApiException carries ``status``, openstacksdk's HttpException
    ``status_code``, sushy's HTTPError ``status_code``.  No library is imported.
    """
    for attr in ("status", "status_code", "code"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def _cause_of(exc):
    """The most useful human text of a client-library exception."""
    for attr in ("details", "reason", "message"):
        value = getattr(exc, attr, None)
        if isinstance(value, str) and value.strip():
            text = value.strip()
            break
    else:
        text = str(exc).strip() or exc.__class__.__name__
    body = getattr(exc, "body", None)
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str) and body.strip():
        text = api_message(body) or text
    return text


class HttpError(Exception):
    """A non-success HTTP answer (``status``, ``reason``, ``body``) of a raw request, for :func:`from_exception`."""

    def __init__(self, status, reason, body):
        self.status = status
        self.reason = reason
        self.body = body
        super().__init__("%s %s" % (status, reason))


# The one status-to-error table of the collection (raw requests and client-library exceptions alike).
_BY_STATUS = {400: InvalidInput, 403: Forbidden, 404: NotFound, 406: InvalidInput, 409: Conflict, 422: InvalidInput}


def error_class(status):
    """The TenancyError class for an HTTP status (:class:`BackendError` for any status not in the table)."""
    return _BY_STATUS.get(status, BackendError)


def api_message(body):
    """The human message of an API error body, or ``None``.

    Reads a Kubernetes ``Status`` (``message``) and Ironic's error bodies
    (``error_message``, itself JSON with a ``faultstring``, or a dict).
    ``body`` may be bytes, text or already-decoded JSON.
    """
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return None
    if not isinstance(body, dict):
        return None
    if isinstance(body.get("message"), str):
        return body["message"]
    fault = body.get("error_message")
    if isinstance(fault, str):
        try:
            inner = json.loads(fault)
        except ValueError:
            return fault
        if isinstance(inner, dict) and isinstance(inner.get("faultstring"), str):
            return inner["faultstring"]
        return fault
    if isinstance(fault, dict) and isinstance(fault.get("faultstring"), str):
        return fault["faultstring"]
    return None


def status_error(obj, status, message):
    """The TenancyError for a non-success HTTP ``status`` about ``obj``; ``message`` is the cause."""
    return error_class(status)(obj, "%s (HTTP %s)" % (message, status), {"status": status})


def from_exception(obj, exc):
    """Turn any exception raised while working on ``obj`` into a TenancyError.

    This is the one error-mapping path of the collection: backends wrap their
    calls with :func:`wrap_errors`, and the module base class passes anything
    that escapes through here too.
    """
    if isinstance(exc, TenancyError):
        return exc
    status = _status_of(exc)
    cls = error_class(status)
    cause = _cause_of(exc)
    if status and str(status) not in cause:
        cause = "%s (HTTP %s)" % (cause, status)
    details = {"status": status} if status else {}
    return cls(obj, cause, details)


class wrap_errors:  # pylint: disable=invalid-name
    """Context manager: re-raise anything raised inside as a TenancyError about ``obj``."""

    def __init__(self, obj):
        self.obj = obj

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None or isinstance(exc, TenancyError) or not isinstance(exc, Exception):
            return False
        raise from_exception(self.obj, exc)


def undo_after(error, what, undo):
    """Put back what a run wrote before ``error`` stopped it: call ``undo()`` (best effort) and return ``error``.

    A module that fails changes nothing: when a later step fails, the steps before it are undone.  ``what``
    names what is undone (``BMC account bmt-a``).  The error's cause then says it was undone, or why it could
    not be (what is left behind, for the user to remove); an undo that fails never hides the first error.
    ``error`` that is not a TenancyError (a bug) is returned unchanged, after the undo.
    """
    try:
        undo()
    except Exception as exc:  # pylint: disable=broad-except
        failure = from_exception(what, exc)
        note = "%s is left behind: undoing it failed (%s)" % (what, failure.message)
    else:
        note = "%s was undone" % what
    if isinstance(error, TenancyError):
        error.cause = "%s; %s" % (error.cause, note)
        error.details.setdefault("undone", []).append(note)
    return error


_HINTS = {
    401: "the credentials were refused",
    403: "the credentials do not allow it",
    404: "not found",
}


def http_error(what, status, reason, body, hint_404=None):
    """The TenancyError for an HTTP error answer about ``what``."""
    message = api_message(body) or _HINTS.get(status) or reason or "HTTP error"
    if status == 401 and "credentials" not in message:
        message = "%s: %s" % (_HINTS[401], message)
    if status == 404 and hint_404:
        message = "%s (%s)" % (message, hint_404)
    return from_exception(what, HttpError(status, message, None))


def timeout_cause(service, request, seconds, option):
    """The cause of a request ``service`` did not answer in time: names the service, the request (without its
    query) and the time-out with the option that sets it."""
    request = str(request).split("?", 1)[0]
    limit = "within %s s (%s)" % (seconds, option) if seconds else "before the connection's time-out (%s)" % option
    return "%s did not answer %s %s" % (service, request, limit)


def connection_reason(exc):
    """A short reason for a urllib3 failure (no object reprs)."""
    reason = getattr(exc, "reason", None) or exc
    text = str(reason)
    marker = "Failed to establish a new connection: "
    if marker in text:
        return text[text.index(marker) + len(marker) :]
    return text.split("): ", 1)[-1] if "): " in text and "object at 0x" in text else text


def shorten(error):
    """``error`` (a TenancyError) with a connection failure cause cut to its reason (no urllib3 retry story)."""
    marker = "Failed to establish a new connection: "
    cause = error.cause if isinstance(error.cause, str) else ""
    if marker in cause:
        reason = cause[cause.index(marker) + len(marker) :].rstrip("\")'")
        error.cause = "cannot connect: %s" % reason
    return error
