# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Redfish I/O through ``sushy``: read systems, and raw AccountService requests.

sushy has no AccountService API: account work goes through its connector
(``Sushy._conn``) with raw ``GET``/``POST``/``PATCH``/``DELETE`` requests,
which still gives sushy's authentication (Redfish session or HTTP basic),
retries and error classes.

Errors are per BMC and never quote the BMC's address or credentials:
:func:`bmc_error` turns sushy's exceptions into a TenancyError whose
``details["bmc_error"]`` is one of ``unreachable``, ``unauthorized``,
``forbidden``, ``not_redfish``, ``not_found``, ``bad_request``, ``error``.

The pure helpers (address parsing, the system document's facts) need no
client library and are unit-tested.
"""

from __future__ import annotations

import importlib
import re
import sys
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    TenancyError,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.libraries import SUSHY, require

try:
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover
    from urlparse import urlsplit  # type: ignore

ROOT = "/redfish/v1/"
SYSTEMS = "/redfish/v1/Systems"
# Metal3 BMC address schemes that mean "Redfish", and the transport each implies: baremetal-operator's
# Redfish-based driver families (pkg/hardwareutils/bmc: each registered alone and with "+http"/"+https"),
# and plain URLs.
REDFISH_SCHEMES = {
    "redfish": "https",
    "redfish+https": "https",
    "redfish+http": "http",
    "redfish-virtualmedia": "https",
    "redfish-virtualmedia+https": "https",
    "redfish-virtualmedia+http": "http",
    "redfish-uefihttp": "https",
    "redfish-uefihttp+https": "https",
    "redfish-uefihttp+http": "http",
    "idrac-redfish": "https",
    "idrac-redfish+https": "https",
    "idrac-redfish+http": "http",
    "idrac-virtualmedia": "https",
    "idrac-virtualmedia+https": "https",
    "idrac-virtualmedia+http": "http",
    "ilo5-redfish": "https",
    "ilo5-redfish+https": "https",
    "ilo5-redfish+http": "http",
    "ilo5-virtualmedia": "https",
    "ilo5-virtualmedia+https": "https",
    "ilo5-virtualmedia+http": "http",
    "https": "https",
    "http": "http",
}
# A host name, an IPv4 address or an IPv6 address (without its brackets, as urlsplit gives it).
_HOST_RE = re.compile(r"[A-Za-z0-9:]([A-Za-z0-9._:%-]*[A-Za-z0-9:])?\Z")
# The driver families of REDFISH_SCHEMES, as the error for an unknown scheme lists them.
DRIVER_FAMILIES = tuple(sorted(set(s.split("+", 1)[0] for s in REDFISH_SCHEMES) - {"http", "https"}))
_REASONS = (
    ("connection refused", "connection refused"),
    ("timed out", "connection timed out"),
    ("timeout", "connection timed out"),
    ("name or service not known", "host name not resolvable"),
    ("nodename nor servname", "host name not resolvable"),
    ("temporary failure in name resolution", "host name not resolvable"),
    ("no route to host", "no route to host"),
    ("network is unreachable", "network unreachable"),
    ("certificate verify failed", "TLS certificate not trusted (set validate_certs: false or give a CA)"),
    ("wrong version number", "TLS handshake failed (is the BMC speaking plain HTTP?)"),
    ("ssl", "TLS handshake failed"),
    ("connection reset", "connection reset"),
    ("remote end closed", "connection closed by the BMC"),
)


# ------------------------------------------------------------------ pure helpers


def parse_bmc_address(address: Any) -> tuple[str, str | None]:
    """``(base_url, system_path or None)`` of a BMC address.

    Accepts Metal3's forms (``redfish://host/redfish/v1/Systems/1``,
    ``redfish+http://127.0.0.1:8000/redfish/v1/Systems/<uuid>``,
    ``idrac-redfish://...``) and plain ``https://host[:port]`` URLs.  Without
    a system path, the BMC's only system is used.  The scheme's driver family
    (virtual media, ...) is :func:`bmc_driver`'s.
    """
    where = "BMC address"
    if not isinstance(address, str) or not address.strip():
        raise InvalidInput(where, "must be a non-empty string")
    text = address.strip()
    if "://" not in text:
        text = "https://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise InvalidInput(where, "is not a valid URL: %s" % exc) from exc
    scheme = parts.scheme.lower()
    if scheme not in REDFISH_SCHEMES:
        raise InvalidInput(
            where,
            "scheme %r is not a Redfish scheme of baremetal-operator (use one of %s, each optionally with +http "
            "or +https, or a plain https:// or http:// URL)" % (scheme, ", ".join(DRIVER_FAMILIES)),
        )
    if parts.username or parts.password:
        raise InvalidInput(where, "must not carry credentials: give username and password")
    if not parts.hostname:
        raise InvalidInput(where, "has no host")
    if not _HOST_RE.match(parts.hostname):
        raise InvalidInput(where, "has no valid host name or IP address")
    host = parts.hostname
    if ":" in host:
        host = "[%s]" % host
    netloc = host if port is None else "%s:%d" % (host, port)
    base_url = "%s://%s" % (REDFISH_SCHEMES[scheme], netloc)
    path = parts.path.rstrip("/")
    if path in ("", "/redfish", "/redfish/v1"):
        return base_url, None
    if not path.startswith(SYSTEMS + "/") or path.count("/") != 4:
        raise InvalidInput(where, "path must be /redfish/v1/Systems/<id>, got %r" % parts.path)
    return base_url, path


def bmc_driver(address: Any) -> str:
    """The Metal3 driver family of a BMC address: its scheme before ``+`` (``redfish``, ``redfish-virtualmedia``,
    ``redfish-uefihttp``, ``idrac-redfish``, ``idrac-virtualmedia``, ``ilo5-redfish``, ``ilo5-virtualmedia``).

    Plain ``https://``/``http://`` URLs and bare host names are ``redfish``.  Raises InvalidInput for what
    :func:`parse_bmc_address` refuses.
    """
    parse_bmc_address(address)
    text = address.strip()
    scheme = text.split("://", 1)[0].lower() if "://" in text else "https"
    family = scheme.split("+", 1)[0]
    return "redfish" if family in ("http", "https") else family


def bmh_address(base_url: str, system_path: str, driver: str = "redfish") -> str:
    """The BareMetalHost ``bmc.address`` baremetal-operator expects for a Redfish system.

    ``driver`` is the family of :func:`bmc_driver`; a plain-HTTP ``base_url`` gives its ``+http`` form
    (``redfish-virtualmedia+http://``).  Raises ValueError for a family with no scheme in REDFISH_SCHEMES
    (``ipmi``, ``https``, a typo), which :func:`bmc_driver` never yields.
    """
    parts = urlsplit(base_url)
    scheme = driver + "+http" if parts.scheme == "http" else driver
    if REDFISH_SCHEMES.get(scheme) != parts.scheme or driver in ("http", "https"):
        raise ValueError("no Metal3 BMC scheme for driver %r over %s" % (driver, parts.scheme))
    return "%s://%s%s" % (scheme, parts.netloc, system_path)


def connection_reason(text: str | None) -> str:
    """A short cause for a connection failure, without the URL it names."""
    low = (text or "").lower()
    for needle, reason in _REASONS:
        if needle in low:
            return reason
    return "connection failed"


def _num(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return float(value) if "." in value else int(value)
        except ValueError:
            return None
    return None


def _members(doc, key):
    coll = doc.get(key)
    if isinstance(coll, dict) and isinstance(coll.get("Members"), list):
        return [m for m in coll["Members"] if isinstance(m, dict)]
    return []


def _mac(value):
    if not isinstance(value, str):
        return None
    mac = value.strip().lower().replace("-", ":")
    return mac if re.match(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$", mac) and mac != "00:00:00:00:00:00" else None


def system_facts(document: dict) -> dict:
    """Plain facts of a system document (see :func:`system_document`), for results and hosts."""
    procs = _members(document, "Processors")
    summary = document.get("ProcessorSummary") or {}
    cpus = _num(summary.get("Count"))
    cores = sum(_num(p.get("TotalCores")) or 0 for p in procs) or None
    threads = sum(_num(p.get("TotalThreads")) or 0 for p in procs) or None
    cpu_model = summary.get("Model") or next((p.get("Model") for p in procs if p.get("Model")), None)
    arch = None
    for proc in procs:
        arch = proc.get("InstructionSet") or proc.get("ProcessorArchitecture")
        if arch:
            break
    memory = _num((document.get("MemorySummary") or {}).get("TotalSystemMemoryGiB"))
    nics = []
    for nic in _members(document, "EthernetInterfaces"):
        mac = _mac(nic.get("PermanentMACAddress")) or _mac(nic.get("MACAddress"))
        if mac and mac not in [n["mac"] for n in nics]:
            nics.append({"name": nic.get("Id") or nic.get("Name"), "mac": mac})
    boot = document.get("Boot") or {}
    return dict(
        uuid=(document.get("UUID") or "").lower() or None,
        name=document.get("Name"),
        manufacturer=document.get("Manufacturer"),
        model=document.get("Model"),
        serial_number=document.get("SerialNumber"),
        cpus=cpus,
        cpu_cores=cores,
        cpu_threads=threads,
        cpu_model=cpu_model,
        cpu_arch=_cpu_arch(arch),
        memory_gib=memory,
        nics=nics,
        boot_mode=boot.get("BootSourceOverrideMode"),
        power_state=document.get("PowerState"),
    )


def _cpu_arch(value):
    if not value:
        return None
    low = str(value).lower()
    if low in ("x86-64", "x86", "x86_64", "amd64"):
        return "x86_64"
    if low in ("arm-a64", "arm", "aarch64"):
        return "aarch64"
    return low


# ------------------------------------------------------------------ errors


def bmc_error(obj: str, exc: BaseException, what: str | None = None, timeout: float | None = None) -> TenancyError:
    """A TenancyError about BMC ``obj`` for any exception sushy/requests raised; a time-out names ``timeout``
    (the module's ``bmc_timeout``)."""
    if isinstance(exc, TenancyError):
        return exc
    status = getattr(exc, "status_code", None)
    text = str(exc)
    prefix = (what + ": ") if what else ""
    sushy_exc = sys.modules.get("sushy.exceptions")  # not imported: the exception cannot be sushy's
    if sushy_exc is not None and isinstance(exc, sushy_exc.ConnectionError):
        reason = connection_reason(text)
        if reason == "connection timed out" and timeout:
            reason = "no answer within %s s (bmc_timeout)" % timeout
        return BackendError(obj, prefix + "BMC unreachable: %s" % reason, {"bmc_error": "unreachable"})
    if status == 401:
        return Forbidden(
            obj, prefix + "the BMC rejected the credentials (HTTP 401)", {"bmc_error": "unauthorized", "status": 401}
        )
    if status == 403:
        return Forbidden(
            obj,
            prefix + "the BMC account lacks the privilege (HTTP 403)%s" % _redfish_message(exc),
            {"bmc_error": "forbidden", "status": 403},
        )
    if status == 404:
        return NotFound(obj, prefix + "not found on the BMC (HTTP 404)", {"bmc_error": "not_found", "status": 404})
    if status in (409, 412):
        return Conflict(
            obj,
            prefix + "changed on the BMC meanwhile (HTTP %s)%s" % (status, _redfish_message(exc)),
            {"bmc_error": "conflict", "status": status},
        )
    if status in (400, 405):
        return InvalidInput(
            obj,
            prefix + "the BMC refused the request (HTTP %s)%s" % (status, _redfish_message(exc)),
            {"bmc_error": "bad_request", "status": status},
        )
    if isinstance(exc, ValueError):
        return BackendError(obj, prefix + "not a Redfish service: the answer is not JSON", {"bmc_error": "not_redfish"})
    if status:
        return BackendError(
            obj,
            prefix + "the BMC answered HTTP %s%s" % (status, _redfish_message(exc)),
            {"bmc_error": "error", "status": status},
        )
    return BackendError(
        obj, prefix + "%s: %s" % (exc.__class__.__name__, connection_reason(text)), {"bmc_error": "error"}
    )


def _redfish_message(exc):
    """The Redfish error message of a sushy HTTPError (``: <message>``), never a URL."""
    message = getattr(exc, "detail", None)
    body = getattr(exc, "body", None)
    if not message and isinstance(body, dict):
        message = body.get("message")
    if not message or not isinstance(message, str):
        return ""
    message = re.sub(r"[a-z][a-z0-9+.-]*://\S+", "<url>", message)
    return ": %s" % message[:300]


# ------------------------------------------------------------------ connection


def sushy_library():
    """sushy, imported when a BMC is first reached (:class:`MissingLibrary` when it is not installed): importing it
    costs about 0.1 s of CPU, and most runs of the modules that import this file reach no BMC."""
    require(SUSHY)
    return importlib.import_module("sushy")


class Bmc:
    """A connection to one BMC (a sushy root), closed with :meth:`close`."""

    def __init__(self, obj, address, username, password, validate_certs=True, ca_cert=None, timeout=30):
        sushy = sushy_library()
        self.obj = obj
        self.timeout = timeout
        self.base_url, self.system_path = parse_bmc_address(address)
        verify = ca_cert if (validate_certs and ca_cert) else bool(validate_certs)
        self._root = None
        try:
            self._root = sushy.Sushy(
                self.base_url,
                username=username,
                password=password,
                verify=verify,
                server_side_retries=1,
                server_side_retries_delay=1,
                connect_timeout=min(timeout, 15),
                read_timeout=timeout,
            )
        except Exception as exc:  # sushy raises its own classes, ValueError on non-JSON
            err = bmc_error(obj, exc, timeout=timeout)
            if err.details.get("bmc_error") == "not_found":
                err = BackendError(
                    obj, "not a Redfish service: %s answered HTTP 404" % ROOT, {"bmc_error": "not_redfish"}
                )
            raise err from exc
        if not self._root.json.get("RedfishVersion") and not self._root.json.get("Systems"):
            self.close()
            raise BackendError(
                obj, "not a Redfish service: the service root has no RedfishVersion", {"bmc_error": "not_redfish"}
            )
        self.conn = self._root._conn  # pylint: disable=protected-access

    def close(self) -> None:
        root, self._root = self._root, None
        if root is not None:
            try:
                root._auth.close()  # pylint: disable=protected-access
            except Exception:  # pylint: disable=broad-except
                pass
            root._auth = None  # pylint: disable=protected-access

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- raw requests ---------------------------------------------------
    def get(self, path: str, what: str | None = None) -> tuple[dict, Any]:
        try:
            response = self.conn.get(path)
            return response.json() if response.content else {}, response.headers
        except Exception as exc:
            raise bmc_error(self.obj, exc, what, self.timeout) from exc

    def get_json(self, path: str, what: str | None = None) -> dict:
        return self.get(path, what)[0]

    def post(self, path: str, body: dict, what: str | None = None) -> tuple[dict, Any]:
        try:
            response = self.conn.post(path, data=body)
        except Exception as exc:
            raise bmc_error(self.obj, exc, what, self.timeout) from exc
        return _json_or_empty(response), response.headers

    def patch(self, path: str, body: dict, etag: str | None = None, what: str | None = None) -> dict:
        headers = {"If-Match": etag} if etag else None
        try:
            response = self.conn.patch(path, data=body, headers=headers)
        except Exception as exc:
            raise bmc_error(self.obj, exc, what, self.timeout) from exc
        return _json_or_empty(response)

    def delete(self, path: str, what: str | None = None) -> None:
        try:
            self.conn.delete(path)
        except Exception as exc:
            raise bmc_error(self.obj, exc, what, self.timeout) from exc

    # -- systems --------------------------------------------------------
    def system_path_or_only(self) -> str:
        """The configured system, or the BMC's only one."""
        if self.system_path:
            return self.system_path
        coll = self.get_json(self._root.json.get("Systems", {}).get("@odata.id") or SYSTEMS, "systems")
        members = [m.get("@odata.id") for m in coll.get("Members", []) if isinstance(m, dict)]
        if len(members) != 1:
            raise InvalidInput(
                self.obj,
                "the BMC has %d systems: give the system path in the address (/redfish/v1/Systems/<id>)" % len(members),
            )
        return members[0].rstrip("/")

    def system_document(self) -> tuple[str, dict]:
        """The ComputerSystem resource with Processors and EthernetInterfaces expanded into ``Members``."""
        path = self.system_path_or_only()
        doc = self.get_json(path, "system %s" % path.rsplit("/", 1)[-1])
        for key in ("Processors", "EthernetInterfaces"):
            link = doc.get(key)
            if not isinstance(link, dict) or not link.get("@odata.id"):
                continue
            try:
                coll = self.get_json(link["@odata.id"])
                members = []
                for member in coll.get("Members", []):
                    if isinstance(member, dict) and "@odata.id" in member and len(member) == 1:
                        members.append(self.get_json(member["@odata.id"]))
                    else:
                        members.append(member)
                doc[key] = dict(link, Members=members)
            except TenancyError as err:
                if err.details.get("bmc_error") not in ("not_found", "bad_request"):
                    raise
        return path, doc

    def _collection(self, link: Any, limit: int = 32) -> list[dict]:
        """The member documents of the collection ``link`` points at (``[]`` if the BMC has none)."""
        if not isinstance(link, dict) or not link.get("@odata.id"):
            return []
        try:
            coll = self.get_json(link["@odata.id"])
            return [
                self.get_json(member["@odata.id"])
                for member in coll.get("Members", [])[:limit]
                if isinstance(member, dict) and member.get("@odata.id")
            ]
        except TenancyError as err:
            if err.details.get("bmc_error") not in ("not_found", "bad_request"):
                raise
            return []

    def network_ports(self, system: dict) -> list[dict]:
        """The Port documents of the system's chassis' network adapters (where a BMC reports LLDP), ``[]`` when it
        has none: Links.Chassis -> NetworkAdapters -> Ports (or NetworkPorts, before Port.v1)."""
        ports = []
        links = system.get("Links") if isinstance(system.get("Links"), dict) else {}
        for chassis_link in (links.get("Chassis") or [])[:4]:
            if not isinstance(chassis_link, dict) or not chassis_link.get("@odata.id"):
                continue
            try:
                chassis = self.get_json(chassis_link["@odata.id"])
            except TenancyError as err:
                if err.details.get("bmc_error") not in ("not_found", "bad_request"):
                    raise
                continue
            for adapter in self._collection(chassis.get("NetworkAdapters")):
                ports += self._collection(adapter.get("Ports") or adapter.get("NetworkPorts"))
        return ports

    # -- AccountService ---------------------------------------------------
    def account_service(self) -> dict:
        link = (self._root.json.get("AccountService") or {}).get("@odata.id") or "/redfish/v1/AccountService"
        try:
            return self.get_json(link, "AccountService")
        except TenancyError as err:
            if err.details.get("bmc_error") == "not_found":
                raise InvalidInput(
                    self.obj, "the BMC has no Redfish AccountService", {"bmc_error": "not_found"}
                ) from err
            raise

    def accounts(self, service: dict) -> tuple[str | None, list[dict]]:
        """Every account resource (empty slots included), in Id order."""
        link = (service.get("Accounts") or {}).get("@odata.id")
        if not link:
            raise InvalidInput(self.obj, "the BMC's AccountService lists no Accounts collection")
        coll = self.get_json(link, "accounts")
        docs = []
        for member in coll.get("Members", []):
            if not isinstance(member, dict) or not member.get("@odata.id"):
                continue
            if len(member) > 1 and "UserName" in member:
                docs.append(member)
            else:
                docs.append(self.get_json(member["@odata.id"], "account"))
        return link, docs

    def roles(self, service: dict) -> list[str] | None:
        link = (service.get("Roles") or {}).get("@odata.id")
        if not link:
            return None
        try:
            coll = self.get_json(link, "roles")
        except TenancyError:
            return None
        return [
            m["@odata.id"].rstrip("/").rsplit("/", 1)[-1]
            for m in coll.get("Members", [])
            if isinstance(m, dict) and m.get("@odata.id")
        ]


def _json_or_empty(response):
    try:
        return response.json() if response.content else {}
    except ValueError:
        return {}
