"""sushy-tools Redfish BMC emulator (fake driver) for the integration tests.

TEST FIXTURE ONLY: nothing here is part of the collection. The collection
talks to whatever Redfish service it is given; this module makes sushy-tools
behave enough like a real BMC for the tests to prove it.

``start_sushy(workdir)`` writes a config with several fake systems, an
htpasswd file (bcrypt) for HTTP basic auth and a private state directory, then
runs the emulator through :func:`launch` (below), which patches sushy-tools
for tests before calling its own ``main()``:

- power changes apply at once (upstream waits a random 1-11 s);
- its drivers are built before it serves (upstream builds them at the first
  request, so two first requests at once built two, and one's seeding of the
  state database could undo the other's power change);
- systems may carry ``memory_gb``, ``cpus``, ``cpu_model``, ``manufacturer``,
  ``model``, ``serial`` and ``boot_mode`` keys, served as
  ``MemorySummary``/``ProcessorSummary``/``Manufacturer``/``Model``/... and a
  ``Processors`` collection (upstream's fake driver reports none, and always
  says ``Manufacturer: Sushy Emulator``);
  :data:`PROFILES` and :func:`profile_systems` build systems of several
  hardware profiles;
- an **AccountService** (upstream has none): roles ``Administrator``,
  ``Operator`` and ``ReadOnly`` with the standard Redfish privileges, and
  accounts that really authenticate: HTTP basic auth is checked against the
  account store (enabled, not locked, ``AccountExpiration`` not passed), and
  every request is authorised by the account's role (``Login`` to read,
  ``ConfigureComponents`` to power or change the system, ``ConfigureUsers``
  to manage accounts, ``ConfigureManager`` for managers, ``ConfigureSelf``
  to change one's own password). The htpasswd users are Administrators.
  Two account models:

  * ``account_slots=None`` (default): accounts are created with ``POST`` on
    the collection and removed with ``DELETE``;
  * ``account_slots=N``: a fixed table of N slots like some vendors' BMCs:
    ``POST``/``DELETE`` answer 405, slot 1 is reserved and read-only, an empty
    slot has ``UserName: ""``; accounts are ``PATCH``ed into an empty slot and
    "deleted" by ``PATCH``ing the slot back to empty.

  Account resources carry an ``ETag``; a ``PATCH`` with a stale ``If-Match``
  answers 412.

One emulator process serves all its systems behind one AccountService (like a
chassis manager in front of several nodes); tests that need an AccountService
of their own start their own emulator.

Each fake system is described by a :class:`Bmc` with its addresses and
credentials, in the forms Ironic (``driver_info``) and Metal3
(``redfish+http://...``) expect.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import hashlib
import importlib.metadata
import io
import json
import secrets
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid as uuidlib
from pathlib import Path

from . import procs

HARNESS_PARENT = Path(__file__).resolve().parent.parent  # tests/integration

# Hardware profiles of the fake systems: what Redfish reports for each.
PROFILES: dict[str, dict] = {
    "small": {
        "cpus": 16,
        "memory_gb": 64,
        "cpu_model": "Fake Xeon Silver 4310",
        "manufacturer": "Contoso",
        "model": "CS-1100",
        "nics": 1,
        "boot_mode": "UEFI",
    },
    "medium": {
        "cpus": 32,
        "memory_gb": 192,
        "cpu_model": "Fake Xeon Gold 6330",
        "manufacturer": "Contoso",
        "model": "CS-2200",
        "nics": 2,
        "boot_mode": "UEFI",
    },
    "large": {
        "cpus": 96,
        "memory_gb": 512,
        "cpu_model": "Fake EPYC 9454",
        "manufacturer": "Fabrikam",
        "model": "FB-9000",
        "nics": 2,
        "boot_mode": "UEFI",
    },
}

ROLES = {
    "Administrator": ["Login", "ConfigureManager", "ConfigureUsers", "ConfigureSelf", "ConfigureComponents"],
    "Operator": ["Login", "ConfigureSelf", "ConfigureComponents"],
    "ReadOnly": ["Login", "ConfigureSelf"],
}
MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 20  # small on purpose: generated passwords must honour it
MAX_USERNAME_LENGTH = 16


@dataclasses.dataclass
class Bmc:
    """One emulated BMC (= one fake system)."""

    name: str
    uuid: str
    base_url: str  # http://127.0.0.1:PORT
    username: str
    password: str
    macs: list[str]
    profile: str | None = None

    @property
    def system_id(self) -> str:
        return f"/redfish/v1/Systems/{self.uuid}"

    @property
    def address(self) -> str:
        """Metal3 BMH style: ``redfish+http://127.0.0.1:PORT/redfish/v1/Systems/<uuid>``."""
        return "redfish+" + self.base_url + self.system_id

    @property
    def driver_info(self) -> dict:
        """``driver_info`` for an Ironic node with the ``redfish`` hardware type."""
        return {
            "redfish_address": self.base_url,
            "redfish_system_id": self.system_id,
            "redfish_username": self.username,
            "redfish_password": self.password,
            "redfish_verify_ca": False,
        }


@dataclasses.dataclass
class SushyEmulator:
    service: procs.Service
    proc: procs.Proc
    bmcs: list[Bmc]
    config_path: Path
    username: str
    password: str
    account_slots: int | None = None

    @property
    def base_url(self) -> str:
        return self.service.url

    def bmc(self, name: str) -> Bmc:
        return next(b for b in self.bmcs if b.name == name)

    def stop(self) -> None:
        self.proc.stop()

    def request(
        self,
        method: str,
        path: str,
        username: str | None = None,
        password: str | None = None,
        body: dict | None = None,
        headers: dict | None = None,
    ) -> tuple[int, dict | str]:
        """One HTTP request to the emulator (admin credentials by default);
        returns ``(status, parsed JSON body or text)``. Never raises on HTTP errors."""
        username = self.username if username is None else username
        password = self.password if password is None else password
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        token = base64.b64encode(f"{username}:{password}".encode()).decode()
        req.add_header("Authorization", f"Basic {token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        for key, value in (headers or {}).items():
            req.add_header(key, value)
        # A read is sent again when the emulator dropped the connection (a broken pipe while the request was sent,
        # seen once at load ~10 in test_faults_binder_kill); a write never is, nor a request that timed out.
        attempts = 3 if method.upper() == "GET" else 1
        status, raw = 0, b""
        for attempt in range(attempts):
            try:
                with urllib.request.urlopen(req, timeout=30) as resp:
                    status, raw = resp.status, resp.read()
                break
            except urllib.error.HTTPError as exc:
                status, raw = exc.code, exc.read()
                break
            except (urllib.error.URLError, ConnectionError) as exc:
                dropped = isinstance(getattr(exc, "reason", exc), ConnectionError)
                if not dropped or attempt == attempts - 1:
                    raise
                time.sleep(0.2)
        text = raw.decode("utf-8", "replace")
        try:
            return status, json.loads(text) if text else {}
        except ValueError:
            return status, text

    def accounts(self) -> list[dict]:
        """Every account (admin view), empty slots included."""
        status, coll = self.request("GET", "/redfish/v1/AccountService/Accounts")
        assert status == 200, coll
        out = []
        for member in coll["Members"]:
            status, doc = self.request("GET", member["@odata.id"])
            assert status == 200, doc
            out.append(doc)
        return out

    def add_account(self, username: str, password: str, role: str = "Operator") -> dict:
        """Create an account as the admin, behind the collection's back (either model)."""
        body = {"UserName": username, "Password": password, "RoleId": role, "Enabled": True}
        if self.account_slots:
            empty = next(a for a in self.accounts() if a["UserName"] == "" and a["Id"] != "1")
            status, doc = self.request("PATCH", empty["@odata.id"], body=body)
            assert status in (200, 204), doc
            return self.request("GET", empty["@odata.id"])[1]
        status, doc = self.request("POST", "/redfish/v1/AccountService/Accounts", body=body)
        assert status == 201, doc
        return doc


def _mac(index: int, nic: int) -> str:
    return f"52:54:{nic:02x}:00:{index // 256:02x}:{index % 256:02x}"


def default_systems(count: int = 4) -> list[dict]:
    """``count`` fake systems, powered off, each with one NIC and some hardware."""
    systems = []
    for i in range(count):
        systems.append(
            {
                "uuid": str(uuidlib.uuid4()),
                "name": f"bmc-{i}",
                "power_state": "Off",
                "external_notifier": False,
                "nics": [{"mac": f"52:54:00:00:{i // 256:02x}:{i % 256:02x}", "ip": f"192.0.2.{10 + i}"}],
                # Extensions served by launch(); larger machines for odd indexes.
                "memory_gb": 64 if i % 2 else 32,
                "cpus": 16 if i % 2 else 8,
                "cpu_model": "Fake CPU",
            }
        )
    return systems


def profile_systems(counts: dict[str, int], prefix: str = "sys", first_index: int = 0) -> list[dict]:
    """Fake systems of the :data:`PROFILES` named in ``counts`` (profile -> how many),
    named ``<prefix>-<profile>-<n>``, with the profile's hardware and NICs.
    MACs are unique per ``first_index`` range (use different ranges per emulator)."""
    systems = []
    index = first_index
    for profile, count in counts.items():
        hw = PROFILES[profile]
        for n in range(count):
            systems.append(
                {
                    "uuid": str(uuidlib.uuid4()),
                    "name": f"{prefix}-{profile}-{n}",
                    "power_state": "Off",
                    "external_notifier": False,
                    "nics": [{"mac": _mac(index, k), "ip": f"192.0.2.{(index % 200) + 10}"} for k in range(hw["nics"])],
                    "memory_gb": hw["memory_gb"],
                    "cpus": hw["cpus"],
                    "cpu_model": hw["cpu_model"],
                    "manufacturer": hw["manufacturer"],
                    "model": hw["model"],
                    "serial": f"SN{index:06d}",
                    "boot_mode": hw["boot_mode"],
                    "profile": profile,
                }
            )
            index += 1
    return systems


def _bcrypt(password: str) -> str:
    import bcrypt  # a dependency of sushy-tools itself

    # Few rounds: the emulator checks the hash on every request.
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()


def _htpasswd_line(username: str, password: str) -> str:
    return f"{username}:{_bcrypt(password)}\n"


def start_sushy(
    workdir: str | Path,
    systems: list[dict] | None = None,
    timeout: float = 60,
    *,
    accounts: list[dict] | None = None,
    account_slots: int | None = None,
    power_delay: int = 0,
    notification_url: str | None = None,
) -> SushyEmulator:
    """Start the emulator in ``workdir`` (created) on a free loopback port.

    ``accounts``: extra accounts present from the start, dicts with
    ``username``, ``password``, ``role`` (accounts "someone else" made).
    ``account_slots``: fixed-slot account model with that many slots.
    ``power_delay``: seconds before a power change applies (upstream: a random
    1-11 s; here 0 unless a simulated boot needs time, as FakeIPA does).
    ``notification_url``: ``EXTERNAL_NOTIFICATION_URL``, where systems with
    ``external_notifier: True`` announce their power changes (FakeIPA).
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    systems = systems if systems is not None else default_systems()
    port = procs.free_port()
    username, password = "admin", secrets.token_urlsafe(12)

    auth_file = workdir / "htpasswd"
    auth_file.write_text(_htpasswd_line(username, password))
    state_dir = workdir / "state"
    state_dir.mkdir(exist_ok=True)
    config_path = workdir / "emulator.conf"
    extra_accounts = [
        {"UserName": a["username"], "PasswordHash": _bcrypt(a["password"]), "RoleId": a.get("role", "Operator")}
        for a in (accounts or [])
    ]
    # The config file is Python (Flask from_pyfile); repr() of JSON-ish data is valid.
    config_path.write_text(
        f"SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'\n"
        f"SUSHY_EMULATOR_LISTEN_PORT = {port}\n"
        f"SUSHY_EMULATOR_FAKE_DRIVER = True\n"
        f"SUSHY_EMULATOR_STATE_DIR = {str(state_dir)!r}\n"
        f"SUSHY_EMULATOR_AUTH_FILE = {str(auth_file)!r}\n"
        f"SUSHY_EMULATOR_FAKE_SYSTEMS = {systems!r}\n"
        f"BMT_TEST_ACCOUNTS = {extra_accounts!r}\n"
        f"BMT_TEST_ACCOUNT_SLOTS = {account_slots!r}\n"
        f"BMT_TEST_POWER_DELAY = {int(power_delay)!r}\n"
        + (f"EXTERNAL_NOTIFICATION_URL = {notification_url!r}\n" if notification_url else "")
    )
    launcher = "import sys; sys.path.insert(0, %r); from harness.sushy import launch; launch()" % str(HARNESS_PARENT)
    proc = procs.start_process(
        "sushy-emulator",
        [sys.executable, "-c", launcher, "--config", str(config_path)],
        workdir,
    )
    base_url = f"http://127.0.0.1:{port}"
    # The service root needs no auth: 200 once the server is up.
    procs.wait_http(base_url + "/redfish/v1/", timeout, proc)
    bmcs = [
        Bmc(s["name"], s["uuid"], base_url, username, password, [n["mac"] for n in s.get("nics", [])], s.get("profile"))
        for s in systems
    ]
    service = procs.Service("sushy-tools", importlib.metadata.version("sushy-tools"), base_url, port, proc.pid)
    return SushyEmulator(service, proc, bmcs, config_path, username, password, account_slots)


def start_plain_http(workdir: str | Path, timeout: float = 30) -> tuple[procs.Proc, str]:
    """A web server that is not Redfish (``python -m http.server`` on an empty
    directory: every ``/redfish/v1`` path is an HTML 404). Returns (proc, URL)."""
    workdir = Path(workdir)
    root = workdir / "www"
    root.mkdir(parents=True, exist_ok=True)
    (root / "index.html").write_text("<html><body>not a BMC</body></html>\n")
    port = procs.free_port()
    proc = procs.start_process(
        "plain-http",
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(root), str(port)],
        workdir,
    )
    url = f"http://127.0.0.1:{port}"
    procs.wait_http(url + "/", timeout, proc)
    return proc, url


# --- runs inside the emulator process -------------------------------------


def launch() -> None:
    """Patch sushy-tools for tests, then run ``sushy-emulator`` main()."""
    from sushy_tools import error
    from sushy_tools.emulator import main
    from sushy_tools.emulator.resources.systems import fakedriver

    class _FixedDelay:
        """Stands in for the ``random`` module: power changes apply after
        ``BMT_TEST_POWER_DELAY`` seconds (0: at once) instead of 1-11 s."""

        delay = 0

        @classmethod
        def randint(cls, a, b):
            return cls.delay

    fakedriver.random = _FixedDelay
    original_initialize = fakedriver.FakeDriver.initialize.__func__

    def initialize(cls, config, logger, *args, **kwargs):
        _FixedDelay.delay = int(config.get("BMT_TEST_POWER_DELAY") or 0)
        return original_initialize(cls, config, logger, *args, **kwargs)

    fakedriver.FakeDriver.initialize = classmethod(initialize)

    def _field(key):
        def getter(self, identity):
            value = self._get(identity).get(key)
            if value is None:
                raise error.NotSupportedError("Not implemented")
            return value

        return getter

    def get_processors(self, identity):
        system = self._get(identity)
        if not system.get("cpus"):
            raise error.NotSupportedError("Not implemented")
        return [
            {
                "id": "CPU0",
                "Id": "CPU0",
                "socket": "CPU 0",
                "vendor": system.get("manufacturer", "Fake"),
                "model": system.get("cpu_model", "Fake CPU"),
                "cores": system["cpus"],
                "threads": system["cpus"],
            }
        ]

    fakedriver.FakeDriver.get_total_memory = _field("memory_gb")
    fakedriver.FakeDriver.get_total_cpus = _field("cpus")
    fakedriver.FakeDriver.get_processors = get_processors

    _install_system_details(main)
    _install_account_service(main, error)
    _build_drivers_before_serving(main)
    sys.argv[0] = "sushy-emulator"
    main.main()


# The emulator's drivers (``app.systems`` and the rest: properties memoized without a lock).
DRIVERS = ("systems", "managers", "chassis", "indicators", "vmedia", "storage", "drives", "volumes")


def _build_drivers_before_serving(main) -> None:
    """Build every driver once, in the main thread, before the server takes its first request.

    Upstream builds each lazily, at the first request that needs it, and the server runs each request in a
    thread of its own: the first requests that come at once (the test bed's power poller and a power-on) each
    built a fake driver of their own, and each driver seeds the state database with the configured systems
    when it finds them missing. A seed written after the other request's power change put the system back to
    its configured ``Off`` with nothing pending, so the power-on was lost for good (the Redfish POST had
    answered 204)."""
    app = main.app
    original_run = app.run

    def run(*args, **kwargs):
        for name in DRIVERS:
            getattr(app, name)
        return original_run(*args, **kwargs)

    app.run = run


def _install_system_details(main) -> None:
    """Serve per-system Manufacturer/Model/SerialNumber/ProcessorSummary.Model."""
    import flask

    app = main.app
    original = app.view_functions["system_resource"]

    def system_resource(identity):
        response = original(identity)
        if flask.request.method != "GET" or response.status_code != 200:
            return response
        doc = json.loads(response.get_data())
        try:
            system = app.systems._get(doc.get("UUID") or identity)
        except Exception:  # an alias: leave the document as it is
            return response
        if system.get("manufacturer"):
            doc["Manufacturer"] = system["manufacturer"]
        if system.get("model"):
            doc["Model"] = system["model"]
        if system.get("serial"):
            doc["SerialNumber"] = system["serial"]
        if system.get("cpu_model"):
            doc.setdefault("ProcessorSummary", {})["Model"] = system["cpu_model"]
        response.set_data(json.dumps(doc))
        return response

    app.view_functions["system_resource"] = system_resource


def _install_account_service(main, error) -> None:
    """AccountService with roles, privileges and expiring accounts (see module doc)."""
    service = _AccountService(main.app, error)
    main.RedfishAuthMiddleware = _account_auth_middleware(main.RedfishAuthMiddleware, service, error)
    service.install_views()


_ACCOUNT_SERVICE_PATH = "/redfish/v1/AccountService"
_ACCOUNTS_PATH = _ACCOUNT_SERVICE_PATH + "/Accounts"
_ROLES_PATH = _ACCOUNT_SERVICE_PATH + "/Roles"
_ACCOUNT_FIELDS = {"UserName", "Password", "RoleId", "Enabled", "Locked", "AccountExpiration"}


def _redfish_error(status, message_id, message):
    import flask

    body = {
        "error": {
            "code": "Base.1.8." + message_id,
            "message": message,
            "@Message.ExtendedInfo": [{"MessageId": "Base.1.8." + message_id, "Message": message}],
        }
    }
    return flask.Response(json.dumps(body), status=status, content_type="application/json")


def _json_response(doc, status=200, headers=None):
    import flask

    response = flask.Response(json.dumps(doc), status=status, content_type="application/json")
    for key, value in (headers or {}).items():
        response.headers[key] = value
    return response


def _account_etag(account):
    digest = hashlib.sha256(json.dumps(dict(account), sort_keys=True, default=str).encode()).hexdigest()[:16]
    return f'W/"{digest}"'


def _parse_time(value):
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    parsed = datetime.datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise ValueError("a time zone is required")
    return parsed


def _expired(account):
    value = account.get("AccountExpiration")
    return bool(value) and _parse_time(value) <= datetime.datetime.now(datetime.timezone.utc)


def _account_doc(account):
    doc = {
        "@odata.id": f"{_ACCOUNTS_PATH}/{account['Id']}",
        "@odata.type": "#ManagerAccount.v1_10_0.ManagerAccount",
        "Id": account["Id"],
        "Name": "User Account",
        "Description": "User Account",
        "UserName": account["UserName"],
        "RoleId": account["RoleId"],
        "Enabled": account["Enabled"],
        "Locked": account["Locked"],
        "Password": None,
        "AccountTypes": ["Redfish"],
        "AccountExpiration": account["AccountExpiration"],
        "Links": {"Role": {"@odata.id": f"{_ROLES_PATH}/{account['RoleId']}"}},
    }
    doc["@odata.etag"] = _account_etag(account)
    return doc


def _needed_privilege(method, path, body, account):
    if method in ("GET", "HEAD"):
        return "Login"
    if path.startswith(_ACCOUNT_SERVICE_PATH):
        own = f"{_ACCOUNTS_PATH}/{account['Id']}"
        if method == "PATCH" and path.rstrip("/") == own and set(body or {}) <= {"Password"}:
            return "ConfigureSelf"
        return "ConfigureUsers"
    if path.startswith("/redfish/v1/Managers"):
        return "ConfigureManager"
    return "ConfigureComponents"


def _check_account_fields(body, creating):
    """The error response for the first invalid field of an account ``body``, or None."""
    unknown = sorted(set(body) - _ACCOUNT_FIELDS)
    if unknown:
        return _redfish_error(
            400, "PropertyUnknown", f"The property {unknown[0]} is not in the list of valid properties"
        )
    if "UserName" in body:
        name = body["UserName"]
        if (
            not isinstance(name, str)
            or len(name) > MAX_USERNAME_LENGTH
            or (name and not all(c.isalnum() or c in "-_." for c in name))
        ):
            return _redfish_error(400, "PropertyValueFormatError", "invalid UserName")
    if body.get("Password") is not None:
        pw = body["Password"]
        if not isinstance(pw, str) or not MIN_PASSWORD_LENGTH <= len(pw) <= MAX_PASSWORD_LENGTH:
            return _redfish_error(
                400,
                "PropertyValueFormatError",
                f"Password must be {MIN_PASSWORD_LENGTH}-{MAX_PASSWORD_LENGTH} characters",
            )
    if "RoleId" in body and body["RoleId"] not in ROLES and not (body["RoleId"] == "None" and not creating):
        return _redfish_error(400, "PropertyValueNotInList", f"RoleId {body['RoleId']} is not a role")
    if body.get("AccountExpiration") is not None:
        try:
            _parse_time(body["AccountExpiration"])
        except (TypeError, ValueError):
            return _redfish_error(400, "PropertyValueFormatError", "AccountExpiration must be a date-time")
    if body.get("Locked") is True:
        return _redfish_error(400, "PropertyValueNotInList", "Locked can only be set to false")
    return None


def _account_service_view():
    return _json_response(
        {
            "@odata.id": _ACCOUNT_SERVICE_PATH,
            "@odata.type": "#AccountService.v1_11_0.AccountService",
            "Id": "AccountService",
            "Name": "Account Service",
            "ServiceEnabled": True,
            "MinPasswordLength": MIN_PASSWORD_LENGTH,
            "MaxPasswordLength": MAX_PASSWORD_LENGTH,
            "AccountLockoutThreshold": 0,
            "Accounts": {"@odata.id": _ACCOUNTS_PATH},
            "Roles": {"@odata.id": _ROLES_PATH},
        }
    )


def _roles_collection_view():
    members = [{"@odata.id": f"{_ROLES_PATH}/{r}"} for r in ROLES]
    return _json_response(
        {"@odata.id": _ROLES_PATH, "Name": "Roles", "Members": members, "Members@odata.count": len(members)}
    )


def _role_view(role):
    if role not in ROLES:
        return _redfish_error(404, "ResourceMissingAtURI", f"no role {role}")
    return _json_response(
        {
            "@odata.id": f"{_ROLES_PATH}/{role}",
            "@odata.type": "#Role.v1_3_1.Role",
            "Id": role,
            "Name": role,
            "RoleId": role,
            "IsPredefined": True,
            "AssignedPrivileges": ROLES[role],
        }
    )


def _read_json_body(env):
    """The JSON body of a PATCH/POST/PUT request (None if it is not JSON), put back for the app to read again."""
    length = int(env.get("CONTENT_LENGTH") or 0)
    raw = env["wsgi.input"].read(length) if length else b""
    env["wsgi.input"] = io.BytesIO(raw)
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return None


def _account_auth_middleware(base, service, error):
    """A subclass of the emulator's ``RedfishAuthMiddleware`` that checks ``service``'s accounts."""
    from sushy_tools.emulator import auth_basic

    class AccountAuthMiddleware(base):
        """Basic auth against the account store, then role-based authorisation."""

        def __init__(self, wsgi, auth_file):
            self.app = wsgi
            self.auth_file = auth_file
            with service.lock:
                if not service.accounts:
                    service.seed(auth_file)

        def __call__(self, env, start_response):
            path = env.get("PATH_INFO", "")
            if path.strip("/") in self._EXCLUDE_PATHS:
                return self.app(env, start_response)
            try:
                token = auth_basic.parse_header(env)
                username, password = auth_basic.parse_token(token)
                account = service.authenticate(username, password)
            except error.FishyError as exc:
                return self.format_exception(exc)(env, start_response)
            env["HTTP_X_USER"] = env["HTTP_X_USER_NAME"] = account["UserName"]
            env["bmt.account"] = account
            method = env.get("REQUEST_METHOD", "GET")
            body = None
            if method in ("PATCH", "POST", "PUT"):
                body = _read_json_body(env)
            privilege = _needed_privilege(method, path, body if isinstance(body, dict) else None, account)
            if privilege not in ROLES.get(account["RoleId"], []):
                response = _redfish_error(
                    403, "InsufficientPrivilege", f"{account['RoleId']} lacks privilege {privilege} for {method} {path}"
                )
                return response(env, start_response)
            return self.app(env, start_response)

    return AccountAuthMiddleware


class _AccountService:
    """The emulator's account store (in memory, guarded by ``lock``) and its Flask views."""

    def __init__(self, app, error):
        self.app = app
        self.error = error
        self.lock = threading.RLock()
        self.accounts: dict[str, dict] = {}
        self.slots: int | None = None
        self.next_id = 1

    def add(self, username, pw_hash, role, ident=None):
        ident = ident or str(self.next_id)
        self.next_id = max(self.next_id, int(ident)) + 1
        self.accounts[ident] = {
            "Id": ident,
            "UserName": username,
            "pw": pw_hash,
            "RoleId": role,
            "Enabled": bool(username),
            "Locked": False,
            "AccountExpiration": None,
        }
        return self.accounts[ident]

    def seed(self, auth_file):
        """htpasswd users are Administrators, then the configured extra accounts.
        Runs when main() has loaded the config file and installs the middleware."""
        config = self.app.config
        self.slots = config.get("BMT_TEST_ACCOUNT_SLOTS")
        if self.slots:
            self.add("", None, "None", "1")  # reserved slot, like some vendors' slot 1
        with open(auth_file) as handle:
            for line in handle:
                if ":" in line.strip():
                    user, hashed = line.strip().split(":", 1)
                    self.add(user, hashed, "Administrator")
        for extra in config.get("BMT_TEST_ACCOUNTS") or []:
            self.add(extra["UserName"], extra["PasswordHash"], extra["RoleId"])
        if self.slots:
            while self.next_id <= self.slots:
                self.add("", None, "None")

    def authenticate(self, username, password):
        import bcrypt

        with self.lock:
            for account in self.accounts.values():
                if account["UserName"] and account["UserName"] == username:
                    break
            else:
                raise self.error.Unauthorized("Incorrect username or password")
            ok = account["pw"] and bcrypt.checkpw(password, account["pw"].encode())
            if not ok or not account["Enabled"] or account["Locked"] or _expired(account):
                raise self.error.Unauthorized("Incorrect username or password")
            return dict(account)

    def name_taken(self, name, except_id=None):
        return any(a["UserName"] == name and a["Id"] != except_id for a in self.accounts.values() if name)

    def install_views(self):
        """Add the AccountService to the service root and serve it."""
        app = self.app
        root_view = app.view_functions["root_resource"]

        def root_resource():
            response = root_view()
            doc = json.loads(response.get_data())
            doc["AccountService"] = {"@odata.id": _ACCOUNT_SERVICE_PATH}
            response.set_data(json.dumps(doc))
            return response

        app.view_functions["root_resource"] = root_resource
        app.add_url_rule(_ACCOUNT_SERVICE_PATH, "bmt_account_service", _account_service_view, methods=["GET"])
        app.add_url_rule(_ACCOUNTS_PATH, "bmt_accounts", self.accounts_collection, methods=["GET", "POST"])
        app.add_url_rule(
            _ACCOUNTS_PATH + "/<ident>", "bmt_account", self.account_resource, methods=["GET", "PATCH", "DELETE"]
        )
        app.add_url_rule(_ROLES_PATH, "bmt_roles", _roles_collection_view, methods=["GET"])
        app.add_url_rule(_ROLES_PATH + "/<role>", "bmt_role", _role_view, methods=["GET"])

    def accounts_collection(self):
        import flask

        if flask.request.method == "GET":
            with self.lock:
                members = [{"@odata.id": f"{_ACCOUNTS_PATH}/{i}"} for i in sorted(self.accounts, key=int)]
            return _json_response(
                {
                    "@odata.id": _ACCOUNTS_PATH,
                    "Name": "Accounts",
                    "@odata.type": "#ManagerAccountCollection.ManagerAccountCollection",
                    "Members": members,
                    "Members@odata.count": len(members),
                }
            )
        return self.create_account(flask.request)

    def create_account(self, request):
        """POST on the collection (405 with fixed slots)."""
        if self.slots:
            return _redfish_error(405, "OperationNotAllowed", "accounts live in fixed slots: PATCH an empty slot")
        body = request.get_json(silent=True)
        if not isinstance(body, dict):
            return _redfish_error(400, "MalformedJSON", "body must be a JSON object")
        problem = _check_account_fields(body, creating=True)
        if problem is not None:
            return problem
        for required in ("UserName", "Password", "RoleId"):
            if not body.get(required):
                return _redfish_error(400, "PropertyMissing", f"{required} is required")
        with self.lock:
            if self.name_taken(body["UserName"]):
                return _redfish_error(409, "ResourceAlreadyExists", f"account {body['UserName']} exists")
            account = self.add(body["UserName"], _bcrypt(body["Password"]), body["RoleId"])
            account["Enabled"] = body.get("Enabled", True)
            account["AccountExpiration"] = body.get("AccountExpiration")
            doc = _account_doc(account)
        return _json_response(doc, 201, {"Location": doc["@odata.id"], "ETag": doc["@odata.etag"]})

    def account_resource(self, ident):
        import flask

        with self.lock:
            account = self.accounts.get(ident)
            if account is None:
                return _redfish_error(404, "ResourceMissingAtURI", f"no account {ident}")
            if flask.request.method == "GET":
                doc = _account_doc(account)
                return _json_response(doc, headers={"ETag": doc["@odata.etag"]})
            if flask.request.method == "DELETE":
                if self.slots:
                    return _redfish_error(
                        405, "OperationNotAllowed", "slots cannot be deleted: PATCH UserName to empty"
                    )
                del self.accounts[ident]
                return flask.Response(status=204)
            return self.patch_account(ident, account, flask.request)

    def patch_account(self, ident, account, request):
        """PATCH an account (or a slot: an empty UserName empties it). Called with the lock held."""
        import flask

        if self.slots and ident == "1":
            return _redfish_error(400, "PropertyNotWritable", "slot 1 is reserved")
        if_match = request.headers.get("If-Match")
        if if_match and if_match not in (_account_etag(account), "*"):
            return _redfish_error(412, "PreconditionFailed", "ETag does not match")
        body = request.get_json(silent=True)
        if not isinstance(body, dict):
            return _redfish_error(400, "MalformedJSON", "body must be a JSON object")
        problem = _check_account_fields(body, creating=False)
        if problem is not None:
            return problem
        if body.get("UserName") and self.name_taken(body["UserName"], ident):
            return _redfish_error(409, "ResourceAlreadyExists", f"account {body['UserName']} exists")
        if "UserName" in body and body["UserName"] == "":
            if not self.slots:
                return _redfish_error(400, "PropertyValueFormatError", "UserName cannot be empty")
            account.update(UserName="", pw=None, RoleId="None", Enabled=False, Locked=False, AccountExpiration=None)
            return flask.Response(status=204)
        if not account["UserName"] and not (body.get("UserName") and body.get("Password")):
            return _redfish_error(400, "PropertyMissing", "an empty slot needs UserName and Password")
        for key in ("UserName", "RoleId", "Enabled", "Locked", "AccountExpiration"):
            if key in body:
                account[key] = body[key]
        if body.get("Password") is not None:
            account["pw"] = _bcrypt(body["Password"])
        return flask.Response(status=204)
