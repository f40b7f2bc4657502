# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A tenant's kubeconfig for the host cluster (relay.kubeconfig): what is accepted, what is refused, and that no
refusal quotes it."""

import base64
import copy

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.relay.kubeconfig import (
    REFUSED_CLUSTER_FIELDS,
    REFUSED_USER_FIELDS,
    access_from_secret,
    kubeconfig_text,
    parse_kubeconfig,
)

OWNER = "Secret tenant-a/hosts-kubeconfig"
TOKEN = "s3cr3t-token-value-0123456789"
CERT = b"-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
KEY = b"-----BEGIN PRIVATE KEY-----\nMIIEfakekeymaterial\n-----END PRIVATE KEY-----\n"


def b64(raw):
    return base64.b64encode(raw).decode("ascii")


def kubeconfig(user=None, cluster=None, context=None, current="tenant"):
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "hosts", "cluster": dict({"server": "https://10.0.0.1:6443"}, **(cluster or {}))}],
        "users": [{"name": "tenant-a", "user": user if user is not None else {"token": TOKEN}}],
        "contexts": [
            {
                "name": "tenant",
                "context": dict(
                    {"cluster": "hosts", "user": "tenant-a", "namespace": "tenant-a-hosts"}, **(context or {})
                ),
            }
        ],
    }
    if current is not None:
        document["current-context"] = current
    return document


def parse(document):
    return parse_kubeconfig(yaml.safe_dump(document), OWNER)


def refused(document):
    with pytest.raises(InvalidInput) as caught:
        parse(document)
    assert caught.value.obj == OWNER
    assert TOKEN not in caught.value.message and "MIIE" not in caught.value.message
    return caught.value.cause


def test_a_token_kubeconfig_gives_server_namespace_and_token():
    access = parse(kubeconfig())
    assert (access.server, access.namespace, access.token) == ("https://10.0.0.1:6443", "tenant-a-hosts", TOKEN)
    assert access.auth_kind == "token" and access.client_key is None


def test_an_embedded_client_certificate_and_the_ca_are_read():
    cluster = {"certificate-authority-data": b64(CERT), "tls-server-name": "kube.example"}
    access = parse(
        kubeconfig(user={"client-certificate-data": b64(CERT), "client-key-data": b64(KEY)}, cluster=cluster)
    )
    assert access.client_certificate == CERT and access.client_key == KEY and access.certificate_authority == CERT
    assert access.token is None and access.tls_server_name == "kube.example"


def test_repr_and_str_never_show_the_secrets():
    access = parse(kubeconfig(user={"client-certificate-data": b64(CERT), "client-key-data": b64(KEY)}))
    for text in (repr(access), str(access), "%s" % (access,)):
        assert "MIIE" not in text and "fake" not in text and "https://10.0.0.1:6443" in text
    assert TOKEN not in repr(parse(kubeconfig()))


def test_the_only_context_is_used_without_current_context():
    assert parse(kubeconfig(current=None)).namespace == "tenant-a-hosts"


def test_several_contexts_without_current_context_are_refused():
    document = kubeconfig(current=None)
    document["contexts"].append(copy.deepcopy(document["contexts"][0]))
    document["contexts"][1]["name"] = "other"
    assert "exactly one context" in refused(document)


def test_current_context_picks_one_of_several():
    document = kubeconfig()
    other = copy.deepcopy(document["contexts"][0])
    other["name"], other["context"]["namespace"] = "other", "elsewhere"
    document["contexts"].append(other)
    document["current-context"] = "other"
    assert parse(document).namespace == "elsewhere"


@pytest.mark.parametrize("field", sorted(REFUSED_USER_FIELDS))
def test_user_fields_that_run_commands_read_files_or_escalate_are_refused(field):
    value = {"exec": {"command": "/bin/sh", "args": ["-c", "id"]}, "auth-provider": {"name": "oidc"}}.get(field, "x")
    cause = refused(kubeconfig(user={"token": TOKEN, field: value}))
    assert field in cause and REFUSED_USER_FIELDS[field] in cause


@pytest.mark.parametrize("field", sorted(REFUSED_CLUSTER_FIELDS))
def test_cluster_fields_that_read_files_or_skip_verification_are_refused(field):
    value = True if field == "insecure-skip-tls-verify" else "/etc/kubernetes/pki/ca.crt"
    cause = refused(kubeconfig(cluster={field: value}))
    assert field in cause


def test_insecure_skip_tls_verify_false_is_harmless():
    assert parse(kubeconfig(cluster={"insecure-skip-tls-verify": False})).server


def test_an_exec_plugin_alone_is_refused_before_anything_runs():
    assert "runs a command" in refused(kubeconfig(user={"exec": {"command": "touch", "args": ["/tmp/pwned"]}}))


@pytest.mark.parametrize(
    "user, words",
    [
        ({}, "no token and no client certificate"),
        ({"token": "two words"}, "single word"),
        ({"token": TOKEN, "client-certificate-data": b64(CERT), "client-key-data": b64(KEY)}, "keep one"),
        ({"client-certificate-data": b64(CERT)}, "both client-certificate-data and client-key-data"),
        ({"client-certificate-data": "not base64!", "client-key-data": b64(KEY)}, "not base64"),
        ({"client-certificate-data": b64(b"plain"), "client-key-data": b64(KEY)}, "PEM certificate"),
        ({"client-certificate-data": b64(CERT), "client-key-data": b64(CERT)}, "PEM private key"),
        ({"token": 12345}, "single word"),
    ],
)
def test_identities_other_than_a_token_or_an_embedded_certificate_are_refused(user, words):
    assert words in refused(kubeconfig(user=user))


@pytest.mark.parametrize(
    "server, words",
    [
        ("http://10.0.0.1:6443", "https://"),
        ("https://", "https://"),
        ("https://u:p@10.0.0.1", "no user"),
        ("https://10.0.0.1:99999", "not a URL"),
        ("https://10.0.0.1/?x=1", "no user, password, query"),
        (None, "no server"),
    ],
)
def test_the_server_must_be_a_plain_https_url(server, words):
    document = kubeconfig()
    document["clusters"][0]["cluster"]["server"] = server
    assert words in refused(document)


@pytest.mark.parametrize(
    "context, words",
    [
        ({"namespace": None}, "sets no namespace"),
        ({"namespace": "Not_A_Namespace"}, "namespace must consist"),
        ({"cluster": None}, "needs a cluster and a user"),
        ({"user": "nobody"}, "no entry in users"),
        ({"cluster": "nowhere"}, "no entry in clusters"),
    ],
)
def test_the_context_must_name_a_cluster_a_user_and_a_namespace(context, words):
    assert words in refused(kubeconfig(context=context))


def test_a_current_context_that_does_not_exist_is_refused():
    assert "no entry in contexts" in refused(kubeconfig(current="missing"))


def test_duplicate_users_are_refused():
    document = kubeconfig()
    document["users"].append(copy.deepcopy(document["users"][0]))
    assert "several entries in users" in refused(document)


@pytest.mark.parametrize("text", ["", "   ", "- a list\n", "just text", "a: [unclosed\n"])
def test_text_that_is_no_kubeconfig_is_refused(text):
    with pytest.raises(InvalidInput):
        parse_kubeconfig(text, OWNER)


def test_a_yaml_error_gives_its_line_and_never_the_text():
    text = yaml.safe_dump(kubeconfig()) + "bad: [%s\n" % TOKEN
    with pytest.raises(InvalidInput) as caught:
        parse_kubeconfig(text, OWNER)
    assert "line" in caught.value.cause and TOKEN not in caught.value.message


def test_the_secret_key_kubeconfig_or_value_is_read():
    text = yaml.safe_dump(kubeconfig())
    for key in ("kubeconfig", "value"):
        secret = {"data": {key: b64(text.encode())}}
        assert kubeconfig_text(secret, OWNER) == text
        assert access_from_secret(secret, OWNER).token == TOKEN


@pytest.mark.parametrize(
    "secret, words",
    [
        (None, "Secret was not found"),
        ({"data": {}}, "no key kubeconfig or value"),
        ({"data": {"kubeconfig": "!!"}}, "not base64"),
        ({"data": {"kubeconfig": b64(b"\xff\xfe")}}, "not UTF-8"),
        ({"data": {"kubeconfig": b64(b"a" * (256 * 1024 + 1))}}, "larger than"),
    ],
)
def test_a_secret_without_a_readable_kubeconfig_is_refused(secret, words):
    with pytest.raises(InvalidInput) as caught:
        kubeconfig_text(secret, OWNER)
    assert words in caught.value.cause


def test_the_fingerprint_changes_with_the_token_and_the_secret_values_cover_it():
    one, other = parse(kubeconfig()), parse(kubeconfig(user={"token": TOKEN + "x"}))
    assert one.fingerprint() != other.fingerprint() and one.fingerprint() == parse(kubeconfig()).fingerprint()
    assert TOKEN in one.secret_values() and b64(TOKEN.encode()) in one.secret_values()


@given(st.text(max_size=400))
def test_any_text_is_read_or_refused_with_invalid_input_only(text):
    try:
        parse_kubeconfig(text, OWNER)
    except InvalidInput as exc:
        assert exc.obj == OWNER


@given(st.dictionaries(st.sampled_from(sorted(REFUSED_USER_FIELDS)), st.text(min_size=1, max_size=5), min_size=1))
def test_a_user_with_any_refused_field_is_never_accepted_and_never_quoted(extra):
    user = dict({"token": TOKEN}, **extra)
    with pytest.raises(InvalidInput) as caught:
        parse(kubeconfig(user=user))
    assert TOKEN not in caught.value.message
