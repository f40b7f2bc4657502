"""What cloud-init would do at first boot with a config drive, as a plan.  Pure.

TEST FIXTURE ONLY: the test-bed machines (:mod:`harness.machines`) apply the
plan when they boot; nothing in the collection uses this.

A config drive is the three parts of OpenStack's layout (the JSON object
Ironic accepts, or ``openstack/latest/*`` on the ISO it writes):
``meta_data`` (dict), ``user_data`` (text) and ``network_data`` (dict).
:func:`plan` turns them into a :class:`Plan` of plain data (JSON-able, so the
machine's boot script reads it with the standard library only):

- ``instance_id``: ``meta_data.uuid`` (Ironic adds the node's), else
  ``instance-id``, else a hash of the content. cloud-init applies the
  per-instance steps once per instance id; so does the machine.
- ``hostname``: ``hostname``/``fqdn`` of the ``#cloud-config`` user data,
  else ``meta_data`` ``hostname``/``local-hostname``/``name``; only the
  first label is kept, as cloud-init's ``set_hostname`` does without
  ``prefer_fqdn_over_hostname``.
- ``users``: the ``users`` list of ``#cloud-config`` (cloud-init's default is
  ``[default]``). ``default`` is the image's default user, ``debian`` (Debian's
  cloud images); it gets the top-level ``ssh_authorized_keys`` and the
  ``meta_data.public_keys``, as cloud-init does, and password-less ``sudo``.
  A named user gets its own ``ssh_authorized_keys``, ``groups``, ``shell``,
  ``gecos``, ``homedir`` and ``sudo`` rules (a string or a list; none by default).
  A name given twice is merged, the first entry wins.
- ``interfaces``: per MAC address (lower case), from ``network_data``:
  ``ipv4``/``ipv6`` networks give static addresses (``ip_address`` plus
  ``netmask`` or a ``/prefix``) and ``routes``; ``ipv4_dhcp``/``ipv6_dhcp``
  (or a link without a network) keep the address the test bed's "DHCP" gives.
  Only ``phy`` (and untyped) links are supported: a bond or VLAN is an error.

Anything else in the user data (scripts, MIME multipart, other cloud-config
keys) is left out and listed in ``ignored``: the test bed does not run code
for a tenant. Errors raise :class:`ConfigDriveError` naming the part.
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import json
import re

DEFAULT_USER = "debian"
DEFAULT_SHELL = "/bin/bash"
USERNAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
HOSTNAME_LABEL = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
SUPPORTED_KEYS = {"hostname", "fqdn", "users", "ssh_authorized_keys"}
DEFAULT_SUDO = ["ALL=(ALL) NOPASSWD:ALL"]  # Debian cloud images' default user


class ConfigDriveError(ValueError):
    """The config drive cannot be applied; the message names the part and the cause."""


@dataclasses.dataclass
class User:
    name: str
    ssh_authorized_keys: list[str]
    groups: list[str] = dataclasses.field(default_factory=list)
    shell: str = DEFAULT_SHELL
    gecos: str = ""
    homedir: str = ""
    sudo: list[str] = dataclasses.field(default_factory=list)  # sudoers rules, e.g. "ALL=(ALL) NOPASSWD:ALL"

    def __post_init__(self) -> None:
        self.homedir = self.homedir or ("/root" if self.name == "root" else f"/home/{self.name}")


@dataclasses.dataclass
class Interface:
    mac: str
    dhcp: bool = True
    addresses: list[str] = dataclasses.field(default_factory=list)  # "a.b.c.d/prefix"
    routes: list[dict] = dataclasses.field(default_factory=list)  # {"to": cidr, "via": ip}


@dataclasses.dataclass
class Plan:
    instance_id: str
    hostname: str | None
    users: list[User]
    interfaces: list[Interface]
    ignored: list[str]

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Plan:
        raw = json.loads(text)
        return cls(
            raw["instance_id"],
            raw["hostname"],
            [User(**u) for u in raw["users"]],
            [Interface(**i) for i in raw["interfaces"]],
            raw["ignored"],
        )


def _load_yaml(text: str):
    import yaml  # PyYAML: in the test venv (ansible-core needs it)

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigDriveError(f"user_data: #cloud-config is not valid YAML: {exc}") from None


def cloud_config(user_data: str | None) -> tuple[dict, list[str]]:
    """``(#cloud-config mapping or {}, ignored parts)`` of the user data."""
    if not user_data or not user_data.strip():
        return {}, []
    first = user_data.lstrip().splitlines()[0].strip()
    if first != "#cloud-config":
        return {}, [f"user_data in another format than #cloud-config ({first[:30]!r})"]
    data = _load_yaml(user_data)
    if data is None:
        return {}, []
    if not isinstance(data, dict):
        raise ConfigDriveError("user_data: #cloud-config must be a YAML mapping")
    return data, [f"user_data key {k}" for k in sorted(data) if k not in SUPPORTED_KEYS]


def _keys(value, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise ConfigDriveError(f"{where}: ssh_authorized_keys must be a list of strings")
    return [k.strip() for k in value if k.strip()]


def _hostname(config: dict, meta: dict) -> str | None:
    for source, value in (
        ("user_data hostname", config.get("hostname")),
        ("user_data fqdn", config.get("fqdn")),
        ("meta_data hostname", meta.get("hostname")),
        ("meta_data local-hostname", meta.get("local-hostname")),
        ("meta_data name", meta.get("name")),
    ):
        if value is None:
            continue
        label = str(value).split(".", maxsplit=1)[0]
        if not HOSTNAME_LABEL.match(label):
            raise ConfigDriveError(f"{source}: {value!r} is not a valid host name")
        return label
    return None


def _user(entry: dict, index: int) -> User:
    where = f"user_data users[{index}]"
    name = entry.get("name")
    if not isinstance(name, str) or not USERNAME.match(name):
        raise ConfigDriveError(f"{where}: name {name!r} is not a valid user name")
    groups = entry.get("groups") or []
    if isinstance(groups, str):
        groups = [g.strip() for g in groups.split(",") if g.strip()]
    if not isinstance(groups, list) or not all(isinstance(g, str) and USERNAME.match(g) for g in groups):
        raise ConfigDriveError(f"{where}: groups must be group names")
    sudo = entry.get("sudo") or []
    if isinstance(sudo, str):
        sudo = [sudo]
    if not isinstance(sudo, list) or not all(isinstance(r, str) and r.strip() and "\n" not in r for r in sudo):
        raise ConfigDriveError(f"{where}: sudo must be a sudoers rule or a list of them")
    return User(
        name,
        _keys(entry.get("ssh_authorized_keys"), where),
        groups,
        str(entry.get("shell") or DEFAULT_SHELL),
        str(entry.get("gecos") or ""),
        str(entry.get("homedir") or ""),
        sudo,
    )


def _users(config: dict, meta: dict) -> list[User]:
    entries = config.get("users", ["default"])
    if isinstance(entries, (str, dict)):
        entries = [entries]
    if not isinstance(entries, list):
        raise ConfigDriveError("user_data users: must be a list")
    public = meta.get("public_keys") or {}
    meta_keys = list(public.values()) if isinstance(public, dict) else _keys(public, "meta_data public_keys")
    default_keys = _keys(config.get("ssh_authorized_keys"), "user_data") + _keys(meta_keys, "meta_data public_keys")
    users: dict[str, User] = {}
    for index, entry in enumerate(entries):
        if entry == "default":
            user = User(DEFAULT_USER, default_keys, ["adm", "sudo"], sudo=list(DEFAULT_SUDO))
        elif isinstance(entry, str):
            user = _user({"name": entry}, index)
        elif isinstance(entry, dict):
            user = _user(entry, index)
        else:
            raise ConfigDriveError(f"user_data users[{index}]: must be 'default', a name or a mapping")
        users.setdefault(user.name, user)
    return list(users.values())


def _prefix(net: dict, where: str) -> str:
    address = net.get("ip_address")
    if not isinstance(address, str) or not address:
        raise ConfigDriveError(f"{where}: a static network needs ip_address")
    try:
        if "/" in address:
            return str(ipaddress.ip_interface(address))
        netmask = net.get("netmask") or net.get("prefix")
        if netmask is None:
            raise ConfigDriveError(f"{where}: {address} has no netmask")
        return str(ipaddress.ip_interface(f"{address}/{netmask}"))
    except ValueError as exc:
        raise ConfigDriveError(f"{where}: {exc}") from None


def _routes(net: dict, where: str) -> list[dict]:
    routes = []
    for route in net.get("routes") or []:
        try:
            to = ipaddress.ip_network(f"{route['network']}/{route.get('netmask', route.get('prefix', 32))}")
            via = ipaddress.ip_address(route["gateway"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigDriveError(f"{where}: route {route!r}: {exc}") from None
        routes.append({"to": "default" if to.prefixlen == 0 else str(to), "via": str(via)})
    return routes


def _interfaces(network_data: dict | None) -> list[Interface]:
    if not network_data:
        return []
    if not isinstance(network_data, dict):
        raise ConfigDriveError("network_data: must be a JSON object")
    by_id: dict[str, Interface] = {}
    for index, link in enumerate(network_data.get("links") or []):
        where = f"network_data links[{index}]"
        if link.get("type", "phy") not in ("phy", "ethernet", "vif"):
            raise ConfigDriveError(f"{where}: link type {link.get('type')!r} is not supported by the test bed")
        mac = str(link.get("ethernet_mac_address") or "").lower()
        if not re.match(r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$", mac):
            raise ConfigDriveError(f"{where}: ethernet_mac_address {mac!r} is not a MAC address")
        by_id[str(link.get("id"))] = Interface(mac)
    static: set[str] = set()
    for index, net in enumerate(network_data.get("networks") or []):
        where = f"network_data networks[{index}]"
        iface = by_id.get(str(net.get("link")))
        if iface is None:
            raise ConfigDriveError(f"{where}: link {net.get('link')!r} is not in links")
        kind = net.get("type")
        if kind in ("ipv4_dhcp", "ipv6_dhcp", "ipv6_slaac"):
            continue
        if kind not in ("ipv4", "ipv6"):
            raise ConfigDriveError(f"{where}: network type {kind!r} is not supported by the test bed")
        iface.addresses.append(_prefix(net, where))
        iface.routes.extend(_routes(net, where))
        static.add(iface.mac)
    for iface in by_id.values():
        iface.dhcp = iface.mac not in static
    return list(by_id.values())


def plan(meta_data: dict | None = None, user_data: str | None = None, network_data: dict | None = None) -> Plan:
    """The :class:`Plan` cloud-init would follow for this config drive."""
    meta = meta_data or {}
    if not isinstance(meta, dict):
        raise ConfigDriveError("meta_data: must be a JSON object")
    config, ignored = cloud_config(user_data)
    content = json.dumps([meta, user_data, network_data], sort_keys=True, default=str)
    instance_id = str(
        meta.get("uuid") or meta.get("instance-id") or "iid-" + hashlib.sha256(content.encode()).hexdigest()[:16]
    )
    return Plan(instance_id, _hostname(config, meta), _users(config, meta), _interfaces(network_data), ignored)
