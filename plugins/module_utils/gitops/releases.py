# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""What the shared apps and the tenants' Helm releases of ``tenant_gitops`` may hold.  Pure.

The ``tenant_gitops`` role writes one shared base per app (a HelmRelease named
after the app and the GitRepository its chart comes from, named
``<app>`` + :data:`CHART_SOURCE_SUFFIX`) and, per release of a tenant, a
Kustomize overlay that puts that base into the tenant's namespace under the
release's name (``<release>`` and ``<release>-chart``) with the tenant's
values. So that the objects Flux applies are valid and cannot collide:

- an app is a mapping with a ``name`` (a DNS-1123 label of at most
  :data:`RELEASE_NAME_MAX` characters, Helm's limit for a release name), a
  ``chart``, optional ``values`` (a mapping) and ``interval``; each app is
  listed once. The chart is either kept in Git (``url`` and ``path`` of the
  chart in a Git repository, at most one of ``branch``, ``tag`` and
  ``commit``) or in a Helm chart repository (``repository``, an ``http://`` or
  ``https://`` URL, the chart's ``name`` and its ``version``, an exact version
  or a semver range): the base's chart source is then a HelmRepository;
- a release is a mapping with a ``name`` (the same rule as an app's), the
  ``app`` it installs (one of the apps) and optional ``values`` (a mapping,
  the tenant's patch over the app's values); a tenant lists each release name
  once, and a release's chart source may not take the name of the tenant's own
  GitRepository (which is named after the tenant).

Every check returns the first problem as text, or ``None``; :func:`check_apps`
and :func:`check_releases` raise one :class:`InvalidInput` naming the entry
(``apps[1] (web)``, ``tenants[0] (team-a): releases[2] (site)``) and the
cause, before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import dns1123_label_problem

RELEASE_NAME_MAX = 53
CHART_SOURCE_SUFFIX = "-chart"
APP_KEYS = ("name", "chart", "values", "interval")
CHART_KEYS = ("url", "path", "branch", "tag", "commit", "interval", "secret")
CHART_REFS = ("branch", "tag", "commit")
HELM_CHART_KEYS = ("repository", "name", "version", "interval", "secret")
HELM_URL_SCHEMES = ("http://", "https://")
RELEASE_KEYS = ("name", "app", "values")


def _unknown_keys(value: dict, known: Sequence[str], what: str) -> str | None:
    unknown = sorted(str(key) for key in value if key not in known)
    if unknown:
        return "%s has unknown key(s) %s (known: %s)" % (what, ", ".join(unknown), ", ".join(known))
    return None


def _text_problem(value: Any, what: str) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return "%s must be a non-empty string" % what
    return None


def name_problem(name: Any, what: str) -> str | None:
    """Why ``name`` cannot name an app or a release (``what``), or ``None``."""
    problem = dns1123_label_problem(name)
    if not problem and len(name) > RELEASE_NAME_MAX:
        problem = "must be at most %d characters (Helm's limit for a release name)" % RELEASE_NAME_MAX
    return "%s name %r %s" % (what, name, problem) if problem else None


def chart_path_problem(path: Any) -> str | None:
    """Why ``path`` is not the relative path of a chart inside its repository, or ``None``."""
    problem = _text_problem(path, "chart path")
    if problem:
        return problem
    if path.startswith("/") or "\\" in path:
        return "chart path %r must be relative to the repository, with / as separator" % path
    if ".." in path.split("/"):
        return "chart path %r may not contain .. (it must stay inside the repository)" % path
    return None


def helm_repository_url_problem(url: Any) -> str | None:
    """Why ``url`` cannot be the URL of a Helm (HTTP) chart repository, or ``None``."""
    problem = _text_problem(url, "chart repository")
    if problem:
        return problem
    if (
        not url.startswith(HELM_URL_SCHEMES)
        or len(url.split("://", 1)[1].strip("/")) == 0
        or any(c.isspace() for c in url)
    ):
        return "chart repository %r must be an http:// or https:// URL without spaces" % url
    return None


def helm_chart_problem(chart: dict) -> str | None:
    """The first problem of a chart kept in a Helm chart repository, or ``None``."""
    problem = _unknown_keys(chart, HELM_CHART_KEYS, "chart")
    if problem:
        return problem
    problem = helm_repository_url_problem(chart["repository"])
    if problem:
        return problem
    for key in ("name", "version"):
        if key not in chart:
            return "chart from a Helm repository needs a %s" % key
    problem = name_problem(chart["name"], "chart")
    if problem:
        return problem
    for key in ["version"] + [k for k in ("interval", "secret") if k in chart]:
        problem = _text_problem(chart[key], "chart " + key)
        if problem:
            return problem
    return None


def helm_repositories(apps: Sequence[dict]) -> list[str]:
    """The Helm chart repositories of the (already checked) ``apps``, each once, in order."""
    urls: list[str] = []
    for app in apps:
        url = app["chart"].get("repository")
        if url is not None and url not in urls:
            urls.append(url)
    return urls


def chart_problem(chart: Any) -> str | None:
    """The first problem of an app's ``chart`` (kept in Git, or in a Helm chart repository), or ``None``."""
    if not isinstance(chart, dict):
        return (
            "chart must be a mapping: the url of a Git repository and the path of the chart in it, or the repository,"
            " name and version of a chart in a Helm chart repository"
        )
    if "repository" in chart:
        return helm_chart_problem(chart)
    problem = _unknown_keys(chart, CHART_KEYS, "chart")
    if problem:
        return problem
    for key, what in (("url", "chart url"), ("path", "chart path")):
        if key not in chart:
            return "chart needs a %s" % key
        problem = _text_problem(chart[key], what)
        if problem:
            return problem
    problem = chart_path_problem(chart["path"])
    if problem:
        return problem
    refs = [key for key in CHART_REFS if key in chart]
    if len(refs) > 1:
        return "chart may name at most one of branch, tag and commit (got %s)" % ", ".join(refs)
    for key in refs + [k for k in ("interval", "secret") if k in chart]:
        problem = _text_problem(chart[key], "chart " + key)
        if problem:
            return problem
    return None


def app_problem(app: Any) -> str | None:
    """The first problem of one shared app, or ``None``."""
    if not isinstance(app, dict):
        return "must be a mapping with a name and a chart"
    problem = _unknown_keys(app, APP_KEYS, "app") or name_problem(app.get("name"), "app")
    if problem:
        return problem
    if "chart" not in app:
        return "app needs a chart (the url of a Git repository and the path of the chart in it)"
    problem = chart_problem(app["chart"])
    if problem:
        return problem
    if app.get("values") is not None and not isinstance(app["values"], dict):
        return "values must be a mapping (the chart's values)"
    if "interval" in app:
        return _text_problem(app["interval"], "interval")
    return None


def _entry(where: str, index: int, item: Any) -> str:
    name = item.get("name") if isinstance(item, dict) else None
    return "%s[%d] (%s)" % (where, index, name) if isinstance(name, str) and name else "%s[%d]" % (where, index)


def check_apps(apps: Any, where: str = "apps") -> list[str]:
    """Raise :class:`InvalidInput` about the first bad app, or an app listed twice; return the names."""
    if not isinstance(apps, list):
        raise InvalidInput("option %s" % where, "must be a list of apps")
    names: list[str] = []
    for index, app in enumerate(apps):
        problem = app_problem(app)
        if problem:
            raise InvalidInput(_entry(where, index, app), problem)
        if app["name"] in names:
            raise InvalidInput(
                _entry(where, index, app),
                "app %s is listed twice (first as %s[%d]); list each app once"
                % (app["name"], where, names.index(app["name"])),
            )
        names.append(app["name"])
    return names


def release_problem(release: Any, app_names: Sequence[str]) -> str | None:
    """The first problem of one release of a tenant, or ``None``."""
    if not isinstance(release, dict):
        return "must be a mapping with a name and an app"
    problem = _unknown_keys(release, RELEASE_KEYS, "release") or name_problem(release.get("name"), "release")
    if problem:
        return problem
    app = release.get("app")
    if not isinstance(app, str) or app not in app_names:
        known = ", ".join(app_names) if app_names else "none are defined"
        return "app %r is not one of the shared apps (%s)" % (app, known)
    if release.get("values") is not None and not isinstance(release["values"], dict):
        return "values must be a mapping (the tenant's values, merged over the app's)"
    return None


def check_releases(tenants: Sequence[dict], app_names: Sequence[str], where: str = "tenants") -> int:
    """Raise :class:`InvalidInput` about the first bad release of the (already checked) ``tenants``.

    Returns the number of releases.
    """
    count = 0
    for index, tenant in enumerate(tenants):
        releases = tenant.get("releases")
        if releases is None:
            continue
        owner = _entry(where, index, tenant)
        if not isinstance(releases, list):
            raise InvalidInput(owner, "releases must be a list")
        names: list[str] = []
        for number, release in enumerate(releases):
            entry = "%s: %s" % (owner, _entry("releases", number, release))
            problem = release_problem(release, app_names)
            if problem:
                raise InvalidInput(entry, problem)
            name = release["name"]
            if name in names:
                raise InvalidInput(
                    entry,
                    "release %s is listed twice (first as releases[%d]); list each release once"
                    % (name, names.index(name)),
                )
            if tenant.get("repository") and name + CHART_SOURCE_SUFFIX == tenant["name"]:
                raise InvalidInput(
                    entry,
                    "its chart source %s%s would take the name of the tenant's own GitRepository %s; "
                    "name the release otherwise" % (name, CHART_SOURCE_SUFFIX, tenant["name"]),
                )
            names.append(name)
        count += len(names)
    return count
