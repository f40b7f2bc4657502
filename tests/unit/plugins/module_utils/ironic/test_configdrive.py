# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.configdrive import (
    build_configdrive,
    configdrive_digest,
    network_addresses,
    user_data_format,
    validate_meta_data,
    validate_network_data,
    validate_user_data,
)

NETWORK = {
    "links": [{"id": "eth0", "type": "phy", "ethernet_mac_address": "52:54:00:00:00:01"}],
    "networks": [
        {"id": "net0", "type": "ipv4", "link": "eth0", "ip_address": "192.0.2.10", "netmask": "255.255.255.0"},
        {"id": "net1", "type": "ipv6", "link": "eth0", "ip_address": "2001:db8::10"},
    ],
    "services": [{"type": "dns", "address": "192.0.2.1"}],
}


@pytest.mark.parametrize(
    "text, fmt",
    [
        (None, "empty"),
        ("", "empty"),
        ("   \n", "empty"),
        ("#cloud-config\nusers: []\n", "cloud-config"),
        ("#Cloud-Config\n{}", "cloud-config"),
        ("\ufeff#cloud-config\r\nusers: []\r\n", "cloud-config"),
        ("## template: jinja\n#cloud-config\nhostname: {{ ds.meta_data.name }}", "jinja"),
        ("## template:jinja\n#cloud-config\n", "jinja"),
        ("#!/bin/sh\necho hi\n", "script"),
        ("#include\nhttp://example.com/x\n", "script"),
        ("#cloud-boothook\n#!/bin/sh\n", "script"),
        ("#cloud-config-archive\n- type: text/x-shellscript\n", "script"),
        ('Content-Type: multipart/mixed; boundary="x"\n', "mime"),
        ("MIME-Version: 1.0\n", "mime"),
        ("hello world\n", "unknown"),
        ("users: []\n", "unknown"),
    ],
)
def test_user_data_format(text, fmt):
    assert user_data_format(text) == fmt


def test_cloud_config_mapping_is_accepted():
    assert validate_user_data("#cloud-config\nusers:\n  - name: me\n") == []
    assert validate_user_data("#cloud-config\n") == []  # an empty document is an empty config


@pytest.mark.parametrize(
    "text, words",
    [
        ("#cloud-config\nusers: [\n", "not valid YAML"),
        ("#cloud-config\nkey: value\n  bad: indent\n", "not valid YAML"),
        ("#cloud-config\n- a\n- b\n", "a YAML list, not a mapping"),
        ("#cloud-config\njust a string\n", "a YAML string, not a mapping"),
        ("#cloud-config\n42\n", "a YAML number, not a mapping"),
        ("#cloud-config\n1: one\n", "keys that are not strings"),
    ],
)
def test_bad_cloud_config_is_refused(text, words):
    with pytest.raises(InvalidInput) as info:
        validate_user_data(text)
    assert words in info.value.message
    assert info.value.obj == "option user_data"


def test_yaml_error_names_the_line():
    with pytest.raises(InvalidInput) as info:
        validate_user_data("#cloud-config\nusers:\n  - name: [me\n")
    assert "line" in info.value.cause and "column" in info.value.cause


def test_unknown_format_is_a_warning_not_an_error():
    warnings = validate_user_data("users: []\n")
    assert len(warnings) == 1 and "cloud-init will ignore it" in warnings[0]


def test_scripts_and_templates_pass_unchecked():
    assert validate_user_data("#!/bin/bash\n[[ broken yaml: {\n") == []
    assert validate_user_data("## template: jinja\n#cloud-config\nx: {{ y }\n") == []


def test_user_data_must_be_text():
    with pytest.raises(InvalidInput):
        validate_user_data({"users": []})


def test_network_data_shape():
    validate_network_data(NETWORK)
    validate_network_data({})
    validate_network_data(None)


@pytest.mark.parametrize(
    "data, words",
    [
        ([], "must be a mapping"),
        ({"links": {}}, "links must be a list"),
        ({"links": ["eth0"]}, "links[0] must be a mapping"),
        ({"links": [{"id": "eth0"}]}, "links[0] needs a non-empty string type"),
        ({"links": [{"id": "a", "type": "phy"}, {"id": "a", "type": "phy"}]}, "repeats the link id a"),
        ({"links": [], "networks": [{"id": "n", "type": "ipv4", "link": "eth9"}]}, "refers to link eth9"),
        (
            {"links": [{"id": "e", "type": "phy"}], "networks": [{"id": "n", "type": "ipv4"}]},
            "needs a non-empty string link",
        ),
        (
            {
                "links": [{"id": "e", "type": "phy"}],
                "networks": [{"id": "n", "type": "ipv4", "link": "e"}, {"id": "n", "type": "ipv4", "link": "e"}],
            },
            "repeats the network id",
        ),
        ({"services": [{"address": "x"}]}, "services[0] must be a mapping with a type"),
        ({"links": [{"id": "e", "type": "phy", "mtu": float("nan")}]}, "not a JSON number"),
        ({"links": [{"id": "e", "type": "phy", "x": object()}]}, "not JSON data"),
        ({1: "x"}, "key that is not a string"),
    ],
)
def test_bad_network_data_is_refused(data, words):
    with pytest.raises(InvalidInput) as info:
        validate_network_data(data)
    assert words in info.value.cause
    assert info.value.obj == "option network_data"


def test_meta_data():
    validate_meta_data({"public_keys": {"default": "ssh-ed25519 AAAA"}, "availability_zone": "az1"})
    with pytest.raises(InvalidInput):
        validate_meta_data(["x"])
    with pytest.raises(InvalidInput) as info:
        validate_meta_data({"public_keys": ["ssh-ed25519 AAAA"]})
    assert "public_keys" in info.value.cause


def test_build_sets_the_name_and_keeps_what_is_given():
    drive, warnings = build_configdrive("web-0", "#cloud-config\n{}\n", NETWORK, {"hostname": "www", "x": 1})
    assert warnings == []
    assert drive == {
        "meta_data": {"hostname": "www", "name": "web-0", "x": 1},
        "user_data": "#cloud-config\n{}\n",
        "network_data": NETWORK,
    }
    drive, _dummy = build_configdrive("web-0")
    assert drive == {"meta_data": {"hostname": "web-0", "name": "web-0"}}


def test_build_refuses_bad_parts():
    with pytest.raises(InvalidInput):
        build_configdrive("web-0", "#cloud-config\n- x\n")
    with pytest.raises(InvalidInput):
        build_configdrive("web-0", network_data={"links": "x"})
    with pytest.raises(InvalidInput):
        build_configdrive("web-0", meta_data="x")


def test_digest_is_stable_and_content_addressed():
    a, dummy = build_configdrive("n", "#cloud-config\n{}\n", NETWORK, {"b": 1, "a": 2})
    b, dummy = build_configdrive("n", "#cloud-config\n{}\n", dict(reversed(list(NETWORK.items()))), {"a": 2, "b": 1})
    assert configdrive_digest(a) == configdrive_digest(b)
    assert configdrive_digest(a).startswith("sha256:") and len(configdrive_digest(a)) == 7 + 64
    c, _dummy = build_configdrive("n", "#cloud-config\n{}\n ", NETWORK, {"b": 1, "a": 2})
    assert configdrive_digest(a) != configdrive_digest(c)
    assert configdrive_digest(None) is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=10,
)


@settings(max_examples=150)
@given(st.dictionaries(st.text(max_size=6), JSON, max_size=4), st.text(max_size=30))
def test_digest_depends_only_on_content(meta, user_data):
    """Equal content gives equal digests whatever the key order; the digest changes with the user-data."""
    drive, dummy = build_configdrive("n", "#!/bin/sh\n" + user_data, None, meta)
    shuffled = dict(drive, meta_data=dict(reversed(list(drive["meta_data"].items()))))
    assert configdrive_digest(drive) == configdrive_digest(shuffled)
    other, _dummy = build_configdrive("n", "#!/bin/sh\n" + user_data + "x", None, meta)
    assert configdrive_digest(drive) != configdrive_digest(other)


@settings(max_examples=150)
@given(
    st.dictionaries(
        st.text(alphabet="abcdefgh_", min_size=1, max_size=8),
        st.text(max_size=10) | st.integers() | st.booleans(),
        max_size=5,
    )
)
def test_any_yaml_mapping_is_valid_cloud_config(mapping):
    import yaml

    text = "#cloud-config\n" + yaml.safe_dump(mapping)
    assert validate_user_data(text) == []


def test_network_addresses():
    assert network_addresses(NETWORK) == [
        {"type": "InternalIP", "address": "192.0.2.10"},
        {"type": "InternalIP6", "address": "2001:db8::10"},
    ]
    assert network_addresses(None) == []
    assert network_addresses({"networks": [{"id": "x", "type": "ipv4_dhcp", "link": "e"}]}) == []
