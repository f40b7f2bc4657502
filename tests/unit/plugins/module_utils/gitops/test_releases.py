# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.gitops import releases as rel

CHART = {"url": "http://127.0.0.1:8080/charts.git", "path": "charts/web"}
WEB = {"name": "web", "chart": CHART, "values": {"greeting": "hi"}, "interval": "1m"}
HELM = {"repository": "http://127.0.0.1:8081/", "name": "web", "version": "0.1.0"}


def apps_refused(apps):
    with pytest.raises(InvalidInput) as info:
        rel.check_apps(apps)
    return info.value.message


def releases_refused(tenants, apps=("web",)):
    with pytest.raises(InvalidInput) as info:
        rel.check_releases(tenants, list(apps))
    return info.value.message


def test_good_apps_pass_and_their_names_come_back():
    apps = [
        WEB,
        {"name": "db", "chart": {**CHART, "path": "./charts/db", "tag": "v1", "secret": "git-auth", "interval": "5m"}},
        {"name": "x", "chart": CHART, "values": None},
    ]
    assert rel.check_apps(apps) == ["web", "db", "x"]
    assert rel.check_apps([]) == []


@pytest.mark.parametrize(
    "apps, expected",
    [
        ({"name": "web"}, "option apps: must be a list of apps"),
        (["web"], "apps[0]: must be a mapping with a name and a chart"),
        ([{"chart": CHART}], "apps[0]: app name None must be a non-empty string"),
        ([{"name": "Web", "chart": CHART}], "apps[0] (Web): app name 'Web' must consist of lower case"),
        ([{"name": "w" * 54, "chart": CHART}], "must be at most 53 characters (Helm's limit for a release name)"),
        ([{"name": "web"}], "apps[0] (web): app needs a chart"),
        ([{**WEB, "chart": "charts/web"}], "apps[0] (web): chart must be a mapping"),
        ([{**WEB, "chart": {"url": "u"}}], "apps[0] (web): chart needs a path"),
        ([{**WEB, "chart": {"path": "p"}}], "apps[0] (web): chart needs a url"),
        ([{**WEB, "chart": {**CHART, "url": ""}}], "apps[0] (web): chart url must be a non-empty string"),
        ([{**WEB, "chart": {**CHART, "path": "/charts/web"}}], "chart path '/charts/web' must be relative"),
        ([{**WEB, "chart": {**CHART, "path": "charts/../../x"}}], "chart path 'charts/../../x' may not contain .."),
        (
            [{**WEB, "chart": {**CHART, "tag": "v1", "branch": "main"}}],
            "at most one of branch, tag and commit (got branch, tag)",
        ),
        ([{**WEB, "chart": {**CHART, "branch": ""}}], "apps[0] (web): chart branch must be a non-empty string"),
        ([{**WEB, "chart": {**CHART, "version": "1"}}], "chart has unknown key(s) version (known: url, path,"),
        ([{**WEB, "value": {}}], "apps[0] (web): app has unknown key(s) value (known: name, chart, values, interval)"),
        ([{**WEB, "values": ["a"]}], "apps[0] (web): values must be a mapping"),
        ([{**WEB, "interval": ""}], "apps[0] (web): interval must be a non-empty string"),
        ([WEB, {**WEB}], "apps[1] (web): app web is listed twice (first as apps[0])"),
    ],
)
def test_a_bad_app_is_one_error_naming_it_and_the_cause(apps, expected):
    message = apps_refused(apps)
    assert expected in message, message


def test_apps_from_helm_repositories_pass_and_their_repositories_come_back_once():
    apps = [
        {"name": "web", "chart": HELM},
        {"name": "web2", "chart": {**HELM, "version": ">=0.1.0 <1.0.0", "interval": "5m", "secret": "charts-auth"}},
        {"name": "db", "chart": {**HELM, "repository": "https://charts.example.com/stable", "name": "postgres"}},
        {"name": "git", "chart": CHART},
    ]
    assert rel.check_apps(apps) == ["web", "web2", "db", "git"]
    assert rel.helm_repositories(apps) == ["http://127.0.0.1:8081/", "https://charts.example.com/stable"]
    assert rel.helm_repositories([{"name": "git", "chart": CHART}]) == []


@pytest.mark.parametrize(
    "chart, expected",
    [
        ({**HELM, "repository": ""}, "apps[0] (web): chart repository must be a non-empty string"),
        ({**HELM, "repository": 3}, "chart repository must be a non-empty string"),
        (
            {**HELM, "repository": "oci://ghcr.io/x"},
            "chart repository 'oci://ghcr.io/x' must be an http:// or https://",
        ),
        ({**HELM, "repository": "http://"}, "must be an http:// or https:// URL"),
        ({**HELM, "repository": "http://a b/"}, "must be an http:// or https:// URL without spaces"),
        (
            {"repository": HELM["repository"], "version": "1"},
            "apps[0] (web): chart from a Helm repository needs a name",
        ),
        ({"repository": HELM["repository"], "name": "web"}, "chart from a Helm repository needs a version"),
        ({**HELM, "name": "Web"}, "apps[0] (web): chart name 'Web' must consist of lower case"),
        ({**HELM, "version": ""}, "apps[0] (web): chart version must be a non-empty string"),
        ({**HELM, "secret": ""}, "chart secret must be a non-empty string"),
        ({**HELM, "path": "charts/web"}, "chart has unknown key(s) path (known: repository, name, version, interval"),
    ],
)
def test_a_bad_chart_from_a_helm_repository_is_one_error_naming_the_app(chart, expected):
    message = apps_refused([{"name": "web", "chart": chart}])
    assert expected in message, message


def test_good_releases_pass_and_are_counted():
    tenants = [
        {"name": "team-a", "releases": [{"name": "web", "app": "web", "values": {"greeting": "a"}}]},
        {"name": "team-b", "releases": [{"name": "web", "app": "web"}, {"name": "site", "app": "web", "values": None}]},
        {"name": "team-c"},
        {"name": "team-d", "releases": None},
    ]
    assert rel.check_releases(tenants, ["web"]) == 3


@pytest.mark.parametrize(
    "tenants, expected",
    [
        ([{"name": "a", "releases": {"name": "web"}}], "tenants[0] (a): releases must be a list"),
        ([{"name": "a", "releases": ["web"]}], "tenants[0] (a): releases[0]: must be a mapping with a name and an app"),
        (
            [{"name": "a"}, {"name": "b", "releases": [{"name": "web", "app": "nope"}]}],
            "tenants[1] (b): releases[0] (web): app 'nope' is not one of the shared apps (web)",
        ),
        ([{"name": "a", "releases": [{"name": "web"}]}], "releases[0] (web): app None is not one of the shared apps"),
        ([{"name": "a", "releases": [{"name": "Web", "app": "web"}]}], "releases[0] (Web): release name 'Web' must"),
        ([{"name": "a", "releases": [{"app": "web"}]}], "releases[0]: release name None must be a non-empty string"),
        (
            [{"name": "a", "releases": [{"name": "web", "app": "web", "chart": "x"}]}],
            "release has unknown key(s) chart (known: name, app, values)",
        ),
        (
            [{"name": "a", "releases": [{"name": "web", "app": "web", "values": "greeting: x"}]}],
            "tenants[0] (a): releases[0] (web): values must be a mapping",
        ),
        (
            [{"name": "a", "releases": [{"name": "web", "app": "web"}, {"name": "web", "app": "web"}]}],
            "tenants[0] (a): releases[1] (web): release web is listed twice (first as releases[0])",
        ),
        (
            [{"name": "x-chart", "repository": {"url": "u"}, "releases": [{"name": "x", "app": "web"}]}],
            "its chart source x-chart would take the name of the tenant's own GitRepository x-chart",
        ),
    ],
)
def test_a_bad_release_is_one_error_naming_the_tenant_the_entry_and_the_cause(tenants, expected):
    message = releases_refused(tenants)
    assert expected in message, message


def test_a_release_of_an_app_when_no_app_is_defined():
    message = releases_refused([{"name": "a", "releases": [{"name": "web", "app": "web"}]}], apps=())
    assert message == "tenants[0] (a): releases[0] (web): app 'web' is not one of the shared apps (none are defined)"


def test_a_chart_source_named_like_a_tenant_without_a_repository_is_fine():
    assert rel.check_releases([{"name": "x-chart", "releases": [{"name": "x", "app": "web"}]}], ["web"]) == 1


NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,51}[a-z0-9])?$")


@given(st.text(alphabet="abz09-_.A ", max_size=60))
def test_names_are_dns_labels_helm_accepts(text):
    assert (rel.name_problem(text, "release") is None) == bool(NAME_RE.fullmatch(text))


@given(
    st.recursive(
        st.none() | st.booleans() | st.text(max_size=5), lambda c: st.lists(c) | st.dictionaries(st.text(max_size=5), c)
    )
)
def test_checking_never_raises_anything_but_invalid_input(value):
    for call in (
        lambda: rel.check_apps(value),
        lambda: rel.check_apps([value]),
        lambda: rel.check_releases([{"name": "a", "releases": value}], ["web"]),
        lambda: rel.check_releases([{"name": "a", "releases": [value]}], ["web"]),
    ):
        try:
            call()
        except InvalidInput:
            pass
