# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import os
import subprocess
import sys

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import libraries
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.libraries import (
    SUSHY,
    MissingLibrary,
    import_error,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import client as redfish

SYS = "/redfish/v1/Systems/7a1b"


@pytest.mark.parametrize(
    "address,base,path",
    [
        ("redfish+http://127.0.0.1:8000/redfish/v1/Systems/7a1b", "http://127.0.0.1:8000", SYS),
        ("redfish://bmc.example.com/redfish/v1/Systems/7a1b", "https://bmc.example.com", SYS),
        ("redfish+https://bmc:8443/redfish/v1/Systems/7a1b/", "https://bmc:8443", SYS),
        (
            "idrac-redfish://10.0.0.1/redfish/v1/Systems/System.Embedded.1",
            "https://10.0.0.1",
            "/redfish/v1/Systems/System.Embedded.1",
        ),
        ("redfish-virtualmedia+http://[::1]:8000/redfish/v1/Systems/7a1b", "http://[::1]:8000", SYS),
        ("https://bmc.example.com", "https://bmc.example.com", None),
        ("http://127.0.0.1:9/redfish/v1/", "http://127.0.0.1:9", None),
        ("bmc.example.com", "https://bmc.example.com", None),
        ("ilo5-redfish://ilo.example.com/redfish/v1/Systems/1", "https://ilo.example.com", "/redfish/v1/Systems/1"),
    ],
)
def test_parse_bmc_address(address, base, path):
    assert redfish.parse_bmc_address(address) == (base, path)


@pytest.mark.parametrize(
    "address,fragment",
    [
        ("", "non-empty"),
        (None, "non-empty"),
        ("ipmi://10.0.0.1", "not a Redfish scheme"),
        ("https://user:pw@bmc/redfish/v1/Systems/1", "must not carry credentials"),
        ("https://bmc/redfish/v1/Managers/1", "path must be /redfish/v1/Systems/<id>"),
        ("https://bmc/redfish/v1/Systems/1/Bios", "path must be"),
        ("https://bmc:notaport/", "not a valid URL"),
        ("https:///redfish/v1/Systems/1", "has no host"),
        ("not a url", "has no valid host name or IP address"),
        ("redfish+http://bmc one:8000/redfish/v1/Systems/1", "has no valid host name or IP address"),
    ],
)
def test_bad_addresses(address, fragment):
    with pytest.raises(InvalidInput) as err:
        redfish.parse_bmc_address(address)
    assert fragment in err.value.message
    if address and "pw" in address:
        assert "pw@" not in err.value.message


def test_bmh_address_round_trips():
    for address in ("redfish+http://127.0.0.1:8000" + SYS, "redfish://bmc.example.com" + SYS):
        assert redfish.bmh_address(*redfish.parse_bmc_address(address)) == address


def _written(address):
    """The ``bmc.address`` host_register writes on Metal3 for ``address``."""
    return redfish.bmh_address(*redfish.parse_bmc_address(address), redfish.bmc_driver(address))


# Every scheme of REDFISH_SCHEMES -> the scheme of the BareMetalHost's address: the driver family is kept,
# "+https" is the default transport (dropped), "+http" stays; plain URLs are Metal3's "redfish".
WRITTEN_SCHEME = {
    "redfish": "redfish",
    "redfish+https": "redfish",
    "redfish+http": "redfish+http",
    "redfish-virtualmedia": "redfish-virtualmedia",
    "redfish-virtualmedia+https": "redfish-virtualmedia",
    "redfish-virtualmedia+http": "redfish-virtualmedia+http",
    "redfish-uefihttp": "redfish-uefihttp",
    "redfish-uefihttp+https": "redfish-uefihttp",
    "redfish-uefihttp+http": "redfish-uefihttp+http",
    "idrac-redfish": "idrac-redfish",
    "idrac-redfish+https": "idrac-redfish",
    "idrac-redfish+http": "idrac-redfish+http",
    "idrac-virtualmedia": "idrac-virtualmedia",
    "idrac-virtualmedia+https": "idrac-virtualmedia",
    "idrac-virtualmedia+http": "idrac-virtualmedia+http",
    "ilo5-redfish": "ilo5-redfish",
    "ilo5-redfish+https": "ilo5-redfish",
    "ilo5-redfish+http": "ilo5-redfish+http",
    "ilo5-virtualmedia": "ilo5-virtualmedia",
    "ilo5-virtualmedia+https": "ilo5-virtualmedia",
    "ilo5-virtualmedia+http": "ilo5-virtualmedia+http",
    "https": "redfish",
    "http": "redfish+http",
}


# baremetal-operator's Redfish-based driver families (pinned snapshot, pkg/hardwareutils/bmc: redfish.go,
# redfish_virtualmedia.go, redfish_https.go, idrac_virtualmedia.go), each registered with "+http" and "+https".
BMO_REDFISH_FAMILIES = (
    "redfish",
    "ilo5-redfish",
    "idrac-redfish",
    "redfish-virtualmedia",
    "ilo5-virtualmedia",
    "idrac-virtualmedia",
    "redfish-uefihttp",
)


def test_every_scheme_has_a_written_form():
    assert set(WRITTEN_SCHEME) == set(redfish.REDFISH_SCHEMES)


def test_every_redfish_scheme_of_the_operator_is_accepted():
    """Each family alone, with +https and with +http, and nothing else but plain URLs."""
    want = set(["https", "http"])
    for family in BMO_REDFISH_FAMILIES:
        want |= set([family, family + "+https", family + "+http"])
    assert set(redfish.REDFISH_SCHEMES) == want
    assert set(redfish.DRIVER_FAMILIES) == set(BMO_REDFISH_FAMILIES)
    for scheme, transport in redfish.REDFISH_SCHEMES.items():
        assert transport == ("http" if scheme in ("http",) or scheme.endswith("+http") else "https"), scheme


@pytest.mark.parametrize("scheme", sorted(WRITTEN_SCHEME))
def test_the_written_address_keeps_the_driver_family(scheme):
    for netloc in ("bmc.example.com", "10.0.0.1:8443", "[fd00::1]:8000"):
        address = "%s://%s%s" % (scheme, netloc, SYS)
        written = _written(address)
        assert written == "%s://%s%s" % (WRITTEN_SCHEME[scheme], netloc, SYS)
        # What is written reads back as the same BMC and the same driver, and is written again unchanged.
        assert redfish.parse_bmc_address(written) == redfish.parse_bmc_address(address)
        assert redfish.bmc_driver(written) == redfish.bmc_driver(address)
        assert _written(written) == written


@pytest.mark.parametrize(
    "address,driver",
    [
        ("redfish-virtualmedia+http://127.0.0.1:8000" + SYS, "redfish-virtualmedia"),
        ("REDFISH-VirtualMedia://bmc" + SYS, "redfish-virtualmedia"),
        ("  idrac-virtualmedia+https://bmc" + SYS + "  ", "idrac-virtualmedia"),
        ("ilo5-virtualmedia://ilo" + SYS, "ilo5-virtualmedia"),
        ("ilo5-redfish+http://ilo" + SYS, "ilo5-redfish"),
        ("redfish-uefihttp+https://bmc" + SYS, "redfish-uefihttp"),
        ("https://bmc.example.com", "redfish"),
        ("http://127.0.0.1:9", "redfish"),
        ("bmc.example.com", "redfish"),
    ],
)
def test_bmc_driver(address, driver):
    assert redfish.bmc_driver(address) == driver


@pytest.mark.parametrize(
    "address",
    [
        "",
        None,
        "ipmi://10.0.0.1",
        "libvirt://10.0.0.1",
        "idrac://10.0.0.1",
        "redfish-virtualmedia+ftp://bmc" + SYS,
        "redfish-virtualmedia+http+https://bmc" + SYS,
        "redfish-virtualmedium+http://bmc" + SYS,
        "virtualmedia://bmc" + SYS,
        "redfish+virtualmedia://bmc" + SYS,
        "ilo4-redfish://ilo" + SYS,
        "irmc-redfish://bmc" + SYS,
    ],
)
def test_bmc_driver_refuses_what_parse_refuses(address):
    with pytest.raises(InvalidInput) as err:
        redfish.bmc_driver(address)
    with pytest.raises(InvalidInput):
        redfish.parse_bmc_address(address)
    if address and "://" in address:
        # One message naming the scheme given and the families there are.
        scheme = address.split("://", 1)[0]
        assert "scheme %r is not a Redfish scheme" % scheme in err.value.message
        assert "redfish-virtualmedia" in err.value.message and "ilo5-redfish" in err.value.message


@pytest.mark.parametrize(
    "base_url,driver",
    [
        ("http://bmc", "ipmi"),
        ("https://bmc", "ipmi"),
        ("http://bmc", "redfish-virtualmedium"),
        ("http://bmc", "http"),
        ("https://bmc", "https"),
    ],
)
def test_bmh_address_invents_no_scheme(base_url, driver):
    with pytest.raises(ValueError):
        redfish.bmh_address(base_url, SYS, driver)


@pytest.mark.parametrize(
    "text,reason",
    [
        ("HTTPConnectionPool(host='10.0.0.1', port=1): ... [Errno 111] Connection refused", "connection refused"),
        ("Read timed out. (read timeout=30)", "connection timed out"),
        ("[Errno -2] Name or service not known", "host name not resolvable"),
        ("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed", "TLS certificate not trusted"),
        ("something odd", "connection failed"),
    ],
)
def test_connection_reason_never_quotes_the_address(text, reason):
    out = redfish.connection_reason(text)
    assert out.startswith(reason)
    assert "10.0.0.1" not in out


DOC = {
    "UUID": "7A1B0000-0000-0000-0000-000000000001",
    "Name": "sys",
    "Manufacturer": "Fabrikam",
    "Model": "FB-9000",
    "SerialNumber": "SN1",
    "PowerState": "Off",
    "ProcessorSummary": {"Count": 96, "Model": "Fake EPYC"},
    "MemorySummary": {"TotalSystemMemoryGiB": 512},
    "Boot": {"BootSourceOverrideMode": "UEFI"},
    "Processors": {
        "Members": [
            {"TotalCores": 48, "TotalThreads": 96, "InstructionSet": "x86-64", "Model": "A"},
            {"TotalCores": "48", "TotalThreads": 96},
        ]
    },
    "EthernetInterfaces": {
        "Members": [
            {"Id": "nic1", "MACAddress": "52-54-00-AA-BB-01"},
            {"Id": "nic2", "PermanentMACAddress": "52:54:00:aa:bb:02", "MACAddress": "00:00:00:00:00:00"},
            {"Id": "dup", "MACAddress": "52:54:00:aa:bb:01"},
            {"Id": "none", "MACAddress": None},
            "junk",
        ]
    },
}


def test_system_facts():
    facts = redfish.system_facts(DOC)
    assert facts == {
        "uuid": "7a1b0000-0000-0000-0000-000000000001",
        "name": "sys",
        "manufacturer": "Fabrikam",
        "model": "FB-9000",
        "serial_number": "SN1",
        "cpus": 96,
        "cpu_cores": 96,
        "cpu_threads": 192,
        "cpu_model": "Fake EPYC",
        "cpu_arch": "x86_64",
        "memory_gib": 512,
        "boot_mode": "UEFI",
        "power_state": "Off",
        "nics": [{"name": "nic1", "mac": "52:54:00:aa:bb:01"}, {"name": "nic2", "mac": "52:54:00:aa:bb:02"}],
    }


def test_system_facts_of_a_bare_document():
    facts = redfish.system_facts({})
    assert facts["uuid"] is None and facts["cpus"] is None and facts["nics"] == [] and facts["memory_gib"] is None


def test_cpu_model_falls_back_to_the_processors_and_arch_is_normalised():
    doc = {
        "ProcessorSummary": {"Count": True},
        "Processors": {"Members": [{"Model": "X", "ProcessorArchitecture": "ARM"}]},
    }
    facts = redfish.system_facts(doc)
    assert facts["cpu_model"] == "X" and facts["cpu_arch"] == "aarch64" and facts["cpus"] is None
    assert redfish._cpu_arch("Power") == "power"
    assert redfish._num("1.5") == 1.5 and redfish._num("x") is None and redfish._num([]) is None


class FakeHTTPError(Exception):
    def __init__(self, status, detail=None):
        super().__init__("HTTP GET http://10.9.9.9/redfish/v1/x returned %s" % status)
        self.status_code = status
        self.detail = detail
        self.body = {"message": detail} if detail else None


@pytest.mark.parametrize(
    "status,cls,kind",
    [
        (401, Forbidden, "unauthorized"),
        (403, Forbidden, "forbidden"),
        (404, NotFound, "not_found"),
        (409, Conflict, "conflict"),
        (412, Conflict, "conflict"),
        (400, InvalidInput, "bad_request"),
        (405, InvalidInput, "bad_request"),
        (500, BackendError, "error"),
    ],
)
def test_bmc_error_mapping_names_the_bmc_not_its_address(status, cls, kind):
    err = redfish.bmc_error("BMC #2 (web)", FakeHTTPError(status, "see https://10.9.9.9/redfish/v1/x for details"))
    assert isinstance(err, cls)
    assert err.details["bmc_error"] == kind
    assert err.obj == "BMC #2 (web)"
    assert "10.9.9.9" not in err.message
    assert str(status) in err.message or status == 404


def test_bmc_error_for_non_json_and_other_errors():
    assert redfish.bmc_error("b", ValueError("Expecting value")).details["bmc_error"] == "not_redfish"
    other = redfish.bmc_error("b", RuntimeError("boom at http://10.9.9.9"))
    assert other.details["bmc_error"] == "error" and "10.9.9.9" not in other.message
    same = NotFound("x", "y")
    assert redfish.bmc_error("b", same) is same
    assert redfish.bmc_error("b", FakeHTTPError(401), "create account bmt-a").cause.startswith("create account bmt-a: ")


@pytest.mark.skipif(import_error(SUSHY) is not None, reason="sushy is not installed")
def test_sushy_connection_errors_are_unreachable():
    from sushy import exceptions

    exc = exceptions.ConnectionError(url="http://10.9.9.9/redfish/v1/", error="[Errno 111] Connection refused")
    err = redfish.bmc_error("BMC #0", exc)
    assert err.details["bmc_error"] == "unreachable"
    assert err.message == "BMC #0: BMC unreachable: connection refused"


def test_a_bmc_without_sushy_is_a_missing_library(monkeypatch):
    monkeypatch.setitem(libraries._PROBED, "sushy", "Traceback: no sushy")
    with pytest.raises(MissingLibrary) as err:
        redfish.Bmc("BMC of h1", "redfish://127.0.0.1/redfish/v1/Systems/1", "root", "pw")
    assert "(sushy)" in err.value.message and err.value.details["exception"] == "Traceback: no sushy"


@pytest.mark.skipif(import_error(SUSHY) is not None, reason="sushy is not installed")
def test_a_bmc_time_out_names_the_timeout():
    from sushy import exceptions

    exc = exceptions.ConnectionError(url="http://10.9.9.9/redfish/v1/", error="Read timed out. (read timeout=3)")
    assert redfish.bmc_error("BMC #0", exc, timeout=3).message == (
        "BMC #0: BMC unreachable: no answer within 3 s (bmc_timeout)"
    )
    assert redfish.bmc_error("BMC #0", exc).message == "BMC #0: BMC unreachable: connection timed out"
    refused = exceptions.ConnectionError(url="http://10.9.9.9/redfish/v1/", error="[Errno 111] Connection refused")
    assert redfish.bmc_error("BMC #0", refused, timeout=3).message == "BMC #0: BMC unreachable: connection refused"


def test_importing_the_client_imports_no_sushy():
    """sushy is imported when a BMC is reached, not by the modules that merely import the Redfish helpers."""
    code = (
        "import sys; import ansible_collections.baremetal.tenancy.plugins.module_utils.redfish.accounts; "
        "print('sushy' in sys.modules)"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr
