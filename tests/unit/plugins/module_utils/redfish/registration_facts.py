# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What host_register's tests of every backend read off a BMC: one system's facts, its address and a BareMetalHost."""

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import registration_model as bmh_model

UUID = "7a1b0000-0000-0000-0000-000000000001"
FACTS = {
    "uuid": UUID,
    "cpus": 96,
    "memory_gib": 512,
    "cpu_arch": "x86_64",
    "boot_mode": "UEFI",
    "nics": [{"name": "a", "mac": "52:54:00:aa:bb:01"}, {"name": "b", "mac": "52:54:00:aa:bb:02"}],
}
ADDRESS = "redfish+http://127.0.0.1:8000/redfish/v1/Systems/" + UUID


def bmh(labels=None, claim_ns=None, **kw):
    return bmh_model.desired_bmh(
        "web-1",
        "metal3",
        dict(FACTS, **kw),
        labels if labels is not None else {"infra-kind": "large"},
        ADDRESS,
        "web-1-bmc-secret",
        host_claim_namespaces=claim_ns,
    )
