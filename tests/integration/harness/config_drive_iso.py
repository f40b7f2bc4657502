"""Read a config drive image (ISO 9660, label ``config-2``) as cloud-init's ConfigDrive source does.

TEST FIXTURE ONLY. Ironic builds the image with openstacksdk's
``openstack.baremetal.configdrive.build`` (``genisoimage -J -r -V config-2``)
and, on a ``ramdisk`` deployment booted through ``redfish-virtual-media``,
publishes it and inserts it into the BMC's ``USBStick`` virtual media; the
test-bed machines (:mod:`harness.machines`) read it from there at boot.

:func:`read` returns ``{"meta_data": dict, "user_data": str | None,
"network_data": dict | None}`` from ``openstack/latest/`` (Rock Ridge or
Joliet names), or raises :class:`harness.cloud_config.ConfigDriveError`.
"""

from __future__ import annotations

import io
import json

from .cloud_config import ConfigDriveError

LATEST = "/openstack/latest/"


def _file(iso, name: str) -> bytes | None:
    for kind in ("rr_path", "joliet_path"):
        out = io.BytesIO()
        try:
            iso.get_file_from_iso_fp(out, **{kind: LATEST + name})
        except Exception:  # pycdlib raises PyCdlibInvalidInput for a missing path or extension
            continue
        return out.getvalue()
    return None


def read(data: bytes) -> dict:
    """The three parts of the config drive image ``data``."""
    import pycdlib  # pinned in requirements-test.txt (an Ironic dependency)

    iso = pycdlib.PyCdlib()
    try:
        iso.open_fp(io.BytesIO(data))
    except Exception as exc:  # PyCdlibInvalidISO and friends
        raise ConfigDriveError(f"config drive image: not an ISO 9660 image ({exc})") from None
    try:
        label = iso.pvd.volume_identifier.decode(errors="replace").strip()
        if label.lower() != "config-2":
            raise ConfigDriveError(f"config drive image: volume label {label!r}, not config-2")
        meta = _file(iso, "meta_data.json")
        if meta is None:
            raise ConfigDriveError("config drive image: no openstack/latest/meta_data.json")
        user = _file(iso, "user_data")
        network = _file(iso, "network_data.json")
        try:
            return {
                "meta_data": json.loads(meta),
                "user_data": None if user is None else user.decode(),
                "network_data": None if network is None else json.loads(network),
            }
        except (ValueError, UnicodeDecodeError) as exc:
            raise ConfigDriveError(f"config drive image: {exc}") from None
    finally:
        iso.close()
