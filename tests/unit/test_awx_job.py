"""The AWX job renderer (tests/integration/harness/awx_job.py) and the AWX objects the collection ships
(extensions/awx/): injectors rendered as AWX renders them, surveys turned into extra variables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.tests.integration.harness import awx_job

ROOT = Path(__file__).resolve().parents[2]
AWX = ROOT / "extensions" / "awx"
CREDENTIAL_TYPES = {
    t["name"]: t for t in yaml.safe_load((AWX / "credential_types.yml").read_text())["credential_types"]
}
JOB_TEMPLATES = yaml.safe_load((AWX / "job_templates.yml").read_text())["job_templates"]
SOURCES = yaml.safe_load((AWX / "inventory_sources.yml").read_text())["inventory_sources"]
KUBE = CREDENTIAL_TYPES["baremetal.tenancy Kubernetes"]
OPENSTACK = CREDENTIAL_TYPES["baremetal.tenancy OpenStack"]
BMC = CREDENTIAL_TYPES["baremetal.tenancy BMC"]


def paths(label):
    return "/pdd/env/" + label


# --------------------------------------------------------------------------- the shipped objects


@pytest.mark.parametrize("name", sorted(CREDENTIAL_TYPES))
def test_shipped_credential_types_are_valid(name):
    awx_job.check_credential_type(CREDENTIAL_TYPES[name])


@pytest.mark.parametrize("template", JOB_TEMPLATES, ids=lambda t: t["name"])
def test_shipped_job_templates_are_valid_and_name_existing_playbooks(template):
    awx_job.check_job_template(template, list(CREDENTIAL_TYPES), [s["name"] for s in SOURCES])
    assert (ROOT / template["playbook"]).is_file()


def test_shipped_templates_cover_claim_release_reconcile_onboard_offboard():
    playbooks = {Path(t["playbook"]).stem for t in JOB_TEMPLATES}
    assert {
        "metal3_claim_hosts",
        "metal3_release_hosts",
        "metal3_bind_claims",
        "metal3_onboard_tenants",
        "metal3_offboard_tenants",
    } <= playbooks


def test_esi_leap_templates_ask_only_variables_their_playbooks_take():
    """The ESI-Leap templates: the owner's offers and a tenant's claim; each survey variable is one the playbook
    declares (a misspelt one would be ignored by the play), and the answers render to text the playbook splits."""
    by_playbook = {Path(t["playbook"]).stem: t for t in JOB_TEMPLATES}
    assert by_playbook["esi_offer_hosts"]["audience"] == "owner"
    assert by_playbook["esi_claim_offer"]["audience"] == "tenant"
    for stem in ("esi_offer_hosts", "esi_claim_offer"):
        template = by_playbook[stem]
        declared = set(yaml.safe_load((ROOT / template["playbook"]).read_text())[0]["vars"])
        asked = {q["variable"] for q in template["survey_spec"]["spec"]}
        assert asked <= declared, (stem, asked - declared)
    extra = awx_job.survey_extra_vars(
        by_playbook["esi_offer_hosts"]["survey_spec"], {"offer_nodes": "n1,n2", "offer_properties": "cpus=16"}
    )
    assert (
        extra["offer_state"] == "present" and extra["offer_nodes"] == "n1,n2" and extra["offer_properties"] == "cpus=16"
    )


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s["name"])
def test_shipped_sources_hold_no_secret_and_use_the_plugin(source):
    config = yaml.safe_load((ROOT / source["source_path"]).read_text())
    assert config["plugin"] == "baremetal.tenancy.claimed_hosts"
    assert config["backend"] == source["backend"]
    assert source["credential_type"] in CREDENTIAL_TYPES
    assert not {"api_key", "auth", "kubeconfig", "cloud", "namespaces"} & set(config)


# --------------------------------------------------------------------------- injectors


def test_kubernetes_token_goes_to_a_kubeconfig_file_never_to_the_environment():
    injected = awx_job.render_credential(
        KUBE, {"host": "https://k8s.example:6443", "bearer_token": "s3cret", "ca_cert": "PEM"}, paths
    )
    assert injected.env == {
        "K8S_AUTH_KUBECONFIG": "/pdd/env/template.kubeconfig",
        "K8S_AUTH_SSL_CA_CERT": "/pdd/env/template.ca_cert",
        "K8S_AUTH_VERIFY_SSL": "True",
    }
    assert "s3cret" not in json.dumps(injected.env)
    kubeconfig = yaml.safe_load(injected.files["/pdd/env/template.kubeconfig"])
    assert kubeconfig["users"][0]["user"]["token"] == "s3cret"
    assert kubeconfig["clusters"][0]["cluster"]["server"] == "https://k8s.example:6443"
    assert injected.files["/pdd/env/template.ca_cert"] == "PEM"


def test_kubernetes_without_ca_sets_an_empty_ca_variable_and_insecure_turns_verification_off():
    injected = awx_job.render_credential(KUBE, {"host": "https://h", "bearer_token": "t", "insecure": True}, paths)
    assert injected.env["K8S_AUTH_SSL_CA_CERT"] == ""
    assert injected.env["K8S_AUTH_VERIFY_SSL"] == "False"


# Jinja's tojson escapes characters beyond U+FFFF as surrogate pairs, which PyYAML (and so the kubernetes
# client and openstacksdk reading these files) does not join again: such secrets are not supported (README).
BMP_TEXT = st.text(
    st.characters(max_codepoint=0xFFFF, blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1
)


@given(token=BMP_TEXT, host=BMP_TEXT)
def test_any_token_and_host_survive_the_kubeconfig_template(token, host):
    injected = awx_job.render_credential(KUBE, {"host": host, "bearer_token": token}, paths)
    kubeconfig = yaml.safe_load(injected.files["/pdd/env/template.kubeconfig"])
    assert kubeconfig["users"][0]["user"]["token"] == token
    assert kubeconfig["clusters"][0]["cluster"]["server"] == host


@given(password=BMP_TEXT)
def test_openstack_password_goes_to_clouds_yaml_whatever_its_characters(password):
    inputs = {"auth_url": "http://ks/v3", "username": "u", "password": password, "project_name": "p"}
    injected = awx_job.render_credential(OPENSTACK, inputs, paths)
    assert injected.env == {"OS_CLIENT_CONFIG_FILE": "/pdd/env/template.clouds_yaml", "OS_CLOUD": "baremetal-tenancy"}
    cloud = yaml.safe_load(injected.files["/pdd/env/template.clouds_yaml"])["clouds"]["baremetal-tenancy"]
    assert cloud["auth"]["password"] == password
    assert cloud["auth"]["user_domain_name"] == cloud["auth"]["project_domain_name"] == "Default"
    assert cloud["verify"] is True and cloud["auth_type"] == "password"


def test_openstack_application_credential_and_system_scope():
    app = awx_job.render_credential(
        OPENSTACK,
        {"auth_url": "http://ks/v3", "application_credential_id": "id", "application_credential_secret": "sec"},
        paths,
    )
    cloud = yaml.safe_load(app.files["/pdd/env/template.clouds_yaml"])["clouds"]["baremetal-tenancy"]
    assert cloud["auth_type"] == "v3applicationcredential"
    assert cloud["auth"] == {
        "auth_url": "http://ks/v3",
        "application_credential_id": "id",
        "application_credential_secret": "sec",
    }
    system = awx_job.render_credential(
        OPENSTACK,
        {"auth_url": "http://ks/v3", "username": "a", "password": "p", "system_scope": "all", "region_name": "R"},
        paths,
    )
    cloud = yaml.safe_load(system.files["/pdd/env/template.clouds_yaml"])["clouds"]["baremetal-tenancy"]
    assert cloud["auth"]["system_scope"] == "all" and "project_name" not in cloud["auth"]
    assert cloud["region_name"] == "R"


def test_bmc_credential_sets_the_variables_host_lease_and_bmc_account_read():
    injected = awx_job.render_credential(BMC, {"bmc_username": "root", "bmc_password": "pw"}, paths)
    assert injected.env == {"BMT_BMC_USERNAME": "root", "BMT_BMC_PASSWORD": "pw", "BMT_BMC_ADDRESS": ""}
    assert injected.files == {}


def test_an_empty_input_is_undefined_and_a_missing_boolean_is_false_as_in_awx():
    credential_type = {
        "name": "t",
        "inputs": {"fields": [{"id": "a", "type": "string"}, {"id": "b", "type": "boolean"}]},
        "injectors": {"env": {"A": "{{ a is defined }}", "B": "{{ b }}"}, "extra_vars": {"x": ["{{ a }}"]}},
    }
    injected = awx_job.render_credential(credential_type, {"a": ""}, paths)
    assert injected.env == {"A": "False", "B": "False"}
    assert injected.extra_vars == {"x": [""]}


def test_an_unnamed_file_is_tower_filename_and_reserved_variables_are_never_set():
    credential_type = {
        "name": "t",
        "inputs": {"fields": [{"id": "a", "type": "string"}]},
        "injectors": {"file": {"template": "{{ a }}"}, "env": {"F": "{{ tower.filename }}", "PATH": "/evil"}},
    }
    injected = awx_job.render_credential(credential_type, {"a": "x"}, paths)
    assert injected.env == {"F": "/pdd/env/template"}
    assert injected.files == {"/pdd/env/template": "x"}


@pytest.mark.parametrize(
    "injectors, fields, message",
    [
        ({"env": {"A": "{{ nope }}"}}, [{"id": "a"}], "uses nope, not an input"),
        ({"env": {"A": "{{ tower.filename.kc }}"}}, [{"id": "a"}], "a file it does not write"),
        ({"file": {"kubeconfig": "x"}}, [{"id": "a"}], "is not template or template.<name>"),
        ({"env": {"A": "{{ a "}}, [{"id": "a"}], "is not a valid template"),
        ({}, [{"id": "a"}, {"id": "a"}], "an id of its own"),
        ({}, [{"id": "a", "type": "integer"}], "has type 'integer'"),
    ],
)
def test_bad_credential_types_are_refused_naming_the_cause(injectors, fields, message):
    with pytest.raises(awx_job.AwxDataError, match="credential type bad: .*" + message.replace(".", r"\.")):
        awx_job.check_credential_type({"name": "bad", "inputs": {"fields": fields}, "injectors": injectors})


@pytest.mark.parametrize(
    "inputs, message",
    [
        ({"host": "h"}, "input bearer_token is required"),
        ({"host": "h", "bearer_token": "t", "other": 1}, "no such input: other"),
        ({"host": "h", "bearer_token": "t", "insecure": "yes"}, "must be true or false"),
    ],
)
def test_bad_inputs_are_refused(inputs, message):
    with pytest.raises(awx_job.AwxDataError, match=message):
        awx_job.render_credential(KUBE, inputs, paths)


# --------------------------------------------------------------------------- surveys

SURVEY = {
    "spec": [
        {"question_name": "N", "variable": "ns", "type": "text", "required": True, "min": 1, "max": 5},
        {
            "question_name": "P",
            "variable": "passes",
            "type": "integer",
            "required": True,
            "default": 10,
            "min": 1,
            "max": 20,
        },
        {
            "question_name": "O",
            "variable": "on",
            "type": "multiplechoice",
            "choices": ["false", "true"],
            "default": "false",
            "required": True,
        },
        {"question_name": "L", "variable": "labels", "type": "text", "required": False, "default": ""},
        {"question_name": "M", "variable": "many", "type": "multiselect", "choices": "a\nb\nc", "required": False},
    ]
}


def test_survey_defaults_then_answers_over_the_template_extra_vars():
    extra = awx_job.survey_extra_vars(SURVEY, {"ns": "a", "many": ["a", "c"]}, {"ns": "base", "fixed": 1})
    assert extra == {"ns": "a", "passes": 10, "on": "false", "many": ["a", "c"], "fixed": 1}


@pytest.mark.parametrize(
    "answers, message",
    [
        ({}, "survey answer ns: required"),
        ({"ns": ""}, "shorter than 1"),
        ({"ns": "toolong"}, "longer than 5"),
        ({"ns": "a", "passes": 0}, "below the minimum"),
        ({"ns": "a", "passes": "3"}, "must be an integer"),
        ({"ns": "a", "passes": True}, "must be an integer"),
        ({"ns": "a", "on": "yes"}, "is not one of"),
        ({"ns": "a", "many": ["d"]}, "not a selection"),
        ({"ns": "a", "extra": 1}, "no question asks extra"),
    ],
)
def test_bad_answers_are_refused_naming_the_variable(answers, message):
    with pytest.raises(awx_job.AwxDataError, match=message):
        awx_job.survey_extra_vars(SURVEY, answers)


@given(st.text(min_size=1, max_size=5), st.integers(1, 20), st.sampled_from(["false", "true"]))
def test_every_valid_answer_reaches_the_extra_vars_unchanged(ns, passes, on):
    extra = awx_job.survey_extra_vars(SURVEY, {"ns": ns, "passes": passes, "on": on})
    assert (extra["ns"], extra["passes"], extra["on"]) == (ns, passes, on)


def test_bad_surveys_are_refused():
    with pytest.raises(awx_job.AwxDataError, match="asked twice"):
        awx_job.check_survey({"spec": [SURVEY["spec"][0], SURVEY["spec"][0]]})
    with pytest.raises(awx_job.AwxDataError, match="has type 'boolean'"):
        awx_job.check_survey({"spec": [dict(SURVEY["spec"][0], type="boolean")]})
    with pytest.raises(awx_job.AwxDataError, match="above the maximum"):
        awx_job.check_survey({"spec": [dict(SURVEY["spec"][1], default=99)]})


# --------------------------------------------------------------------------- the private data directory


def test_private_data_dir_of_a_tenant_claim_job():
    template = next(t for t in JOB_TEMPLATES if t["playbook"] == "playbooks/metal3_claim_hosts.yml")
    pdd = awx_job.job_private_data_dir(
        "/pdd",
        template,
        [(KUBE, {"host": "https://h", "bearer_token": "tok", "ca_cert": "PEM"})],
        {"claim_namespace": "team-a", "claim_name": "w0"},
        {
            "_meta": {"hostvars": {"w0": {"tenancy_name": {"__ansible_unsafe": "w0"}}}},
            "all": {"children": ["ungrouped"]},
        },
        {"ANSIBLE_COLLECTIONS_PATH": "/ee"},
    )
    assert json.loads(pdd.files["env/envvars"]) == {
        "ANSIBLE_COLLECTIONS_PATH": "/ee",
        "K8S_AUTH_KUBECONFIG": "/pdd/env/credential-0-template-kubeconfig",
        "K8S_AUTH_SSL_CA_CERT": "/pdd/env/credential-0-template-ca_cert",
        "K8S_AUTH_VERIFY_SSL": "True",
    }
    assert "tok" in pdd.files["env/credential-0-template-kubeconfig"]
    assert json.loads(pdd.files["env/extravars"]) == {
        "claim_namespace": "team-a",
        "claim_name": "w0",
        "claim_online": "false",
        "claim_wait": "false",
    }
    assert "__ansible_unsafe" not in pdd.files["inventory/hosts"] and pdd.modes["inventory/hosts"] == 0o700
    assert pdd.cmdline == ""


def test_private_data_dir_refuses_credentials_of_other_types():
    template = next(t for t in JOB_TEMPLATES if "expire" in t["playbook"])
    with pytest.raises(awx_job.AwxDataError, match="needs credentials of types"):
        awx_job.job_private_data_dir("/pdd", template, [(KUBE, {"host": "h", "bearer_token": "t"})], {}, {})


def test_listed_hosts_reads_groups_and_hostvars():
    listing = {"_meta": {"hostvars": {"a": {}}}, "g": {"hosts": ["b"]}, "all": {"children": ["g"]}}
    assert awx_job.listed_hosts(listing) == {"a", "b"}
