"""What AWX does before it hands a job to ansible-runner, as pure functions (no AWX, no I/O but :func:`write_tree`).

AWX runs a job template by writing a private data directory and calling ansible-runner on it:

- ``env/envvars``: the environment variables of the job's credentials, each credential type's ``env``
  injectors rendered (Jinja2, sandboxed) with the credential's inputs; ``file`` injectors are rendered
  first into files under ``env/`` whose paths the other injectors reach as ``tower.filename`` (one
  unnamed file) or ``tower.filename.<label>`` (``template.<label>``);
- ``env/extravars``: the survey's answers (validated against the survey, unanswered questions take their
  default) over the template's own ``extra_vars``, and the credentials' ``extra_vars`` injectors;
- ``inventory/hosts``: an executable script printing the inventory AWX holds, as it was imported by the
  inventory update (``ansible-inventory --list --export`` on the source with the source's credential);
- ``project/``: the project checkout, with the template's ``playbook`` relative to it.

The rendering follows AWX's own rules (``inject_credential`` of awx-plugins): only inputs that are set
(non-empty, or booleans) are defined; a boolean input that is not set is ``False``; every ``env`` injector
is set, to an empty string when its template renders nothing; the variables AWX reserves are never set.
Where AWX would ignore something (a survey answer to no question), this refuses it, so that a test cannot
pass on an answer the job never saw.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from jinja2 import meta
from jinja2.sandbox import ImmutableSandboxedEnvironment

#: variables AWX never lets a credential set (awx-plugins' ENV_BLOCKLIST)
ENV_BLOCKLIST = frozenset(
    (
        "VIRTUAL_ENV",
        "PATH",
        "PYTHONPATH",
        "JOB_ID",
        "INVENTORY_ID",
        "INVENTORY_SOURCE_ID",
        "INVENTORY_UPDATE_ID",
        "AD_HOC_COMMAND_ID",
        "REST_API_URL",
        "REST_API_TOKEN",
        "MAX_EVENT_RES",
        "CALLBACK_QUEUE",
        "CALLBACK_CONNECTION",
        "CACHE",
        "JOB_CALLBACK_DEBUG",
        "INVENTORY_HOSTVARS",
        "AWX_HOST",
        "PROJECT_REVISION",
        "SUPERVISOR_CONFIG_PATH",
    )
)
FIELD_TYPES = ("string", "boolean")
SURVEY_TYPES = ("text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect")
_FILENAME_REF = re.compile(r"tower\.filename(?:\.(\w+))?")


class AwxDataError(ValueError):
    """A credential type, job template, survey or answer AWX would refuse: ``<object>: <cause>``."""


# --------------------------------------------------------------------------- credential types


def _template_sources(injectors: Mapping) -> list[tuple[str, str]]:
    """Every ``(where, template)`` of a credential type's injectors."""
    sources = [("file %s" % label, text) for label, text in (injectors.get("file") or {}).items()]
    sources += [("env %s" % name, text) for name, text in (injectors.get("env") or {}).items()]

    def walk(where, node):
        if isinstance(node, Mapping):
            for key, value in node.items():
                yield from walk("%s.%s" % (where, key), value)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                yield from walk("%s[%d]" % (where, index), value)
        else:
            yield where, str(node)

    sources += list(walk("extra_vars", injectors.get("extra_vars") or {}))
    return sources


def check_credential_type(credential_type: Mapping) -> None:
    """Refuse a credential type AWX would refuse or whose injectors name an input it does not have.

    Checks: fields have an ``id``, a known ``type`` and ids are unique; ``required`` names fields; file labels
    are ``template`` or ``template.<name>``; every name an injector template uses is a field or ``tower``,
    and every ``tower.filename[.<label>]`` refers to a file the type writes.
    """
    name = credential_type.get("name") or "(unnamed)"
    where = "credential type %s" % name
    fields = (credential_type.get("inputs") or {}).get("fields") or []
    ids = [field.get("id") for field in fields]
    if not all(isinstance(i, str) and i for i in ids) or len(set(ids)) != len(ids):
        raise AwxDataError("%s: every input field needs an id of its own (%s)" % (where, ids))
    for field in fields:
        if field.get("type", "string") not in FIELD_TYPES:
            raise AwxDataError(
                "%s: field %s has type %r, not one of %s" % (where, field["id"], field.get("type"), FIELD_TYPES)
            )
    missing = set((credential_type.get("inputs") or {}).get("required") or []) - set(ids)
    if missing:
        raise AwxDataError("%s: required names no field: %s" % (where, ", ".join(sorted(missing))))
    injectors = credential_type.get("injectors") or {}
    labels = list(injectors.get("file") or {})
    for label in labels:
        if label != "template" and not re.fullmatch(r"template\.\w+", label):
            raise AwxDataError("%s: file injector %r is not template or template.<name>" % (where, label))
    if "template" in labels and len(labels) > 1:
        raise AwxDataError("%s: an unnamed file (template) cannot go with named ones" % where)
    named = {label.split(".", 1)[1] for label in labels if "." in label}
    env = ImmutableSandboxedEnvironment()
    for place, source in _template_sources(injectors):
        try:
            names = meta.find_undeclared_variables(env.parse(source))
        except Exception as exc:  # jinja2.TemplateSyntaxError
            raise AwxDataError("%s: %s is not a valid template: %s" % (where, place, exc)) from None
        unknown = names - set(ids) - {"tower"}
        if unknown:
            raise AwxDataError("%s: %s uses %s, not an input" % (where, place, ", ".join(sorted(unknown))))
        for label in _FILENAME_REF.findall(source):
            if (label and label not in named) or (not label and "template" not in labels):
                raise AwxDataError(
                    "%s: %s refers to tower.filename%s, a file it does not write"
                    % (where, place, "." + label if label else "")
                )


def check_inputs(credential_type: Mapping, inputs: Mapping) -> None:
    """Refuse inputs AWX would refuse for this type: unknown ones, missing required ones, wrong types."""
    where = "credential of type %s" % credential_type.get("name")
    fields = {field["id"]: field for field in (credential_type.get("inputs") or {}).get("fields") or []}
    unknown = set(inputs) - set(fields)
    if unknown:
        raise AwxDataError("%s: no such input: %s" % (where, ", ".join(sorted(unknown))))
    for required in (credential_type.get("inputs") or {}).get("required") or []:
        if inputs.get(required) in (None, ""):
            raise AwxDataError("%s: input %s is required" % (where, required))
    for key, value in inputs.items():
        field = fields[key]
        if field.get("type") == "boolean" and not isinstance(value, bool):
            raise AwxDataError("%s: input %s must be true or false, not %r" % (where, key, value))
        if field.get("type", "string") == "string" and not isinstance(value, str):
            raise AwxDataError("%s: input %s must be a string" % (where, key))
        if field.get("choices") and value not in field["choices"] and value != "":
            raise AwxDataError("%s: input %s must be one of %s" % (where, key, field["choices"]))


@dataclasses.dataclass
class Injected:
    """What one credential adds to a job: environment, files (path -> content) and extra variables."""

    env: dict[str, str]
    files: dict[str, str]
    extra_vars: dict[str, Any]


def render_credential(credential_type: Mapping, inputs: Mapping, file_path: Callable[[str], str]) -> Injected:
    """Render ``credential_type``'s injectors with ``inputs`` as AWX does.

    ``file_path(label)`` gives the path of the file of a ``file`` injector (``template`` or
    ``template.<name>``); AWX makes a temporary file under the private data directory's ``env/``.
    """
    check_credential_type(credential_type)
    check_inputs(credential_type, inputs)
    namespace: dict[str, Any] = {}
    for key, value in inputs.items():
        if isinstance(value, bool) or value:
            namespace[key] = value
    for field in (credential_type.get("inputs") or {}).get("fields") or []:
        if field.get("type") == "boolean" and field["id"] not in inputs:
            namespace[field["id"]] = False
    tower = SimpleNamespace(filename=None)
    namespace["tower"] = tower
    sandbox = ImmutableSandboxedEnvironment()
    injectors = credential_type.get("injectors") or {}
    files: dict[str, str] = {}
    single = None
    named = {}
    for label, template in (injectors.get("file") or {}).items():
        path = file_path(label)
        files[path] = sandbox.from_string(template).render(**namespace)
        if "." in label:
            named[label.split(".", 1)[1]] = path
        else:
            single = path
    tower.filename = single or SimpleNamespace(**named)
    env = {}
    for name, template in (injectors.get("env") or {}).items():
        if name not in ENV_BLOCKLIST:
            env[name] = sandbox.from_string(template).render(**namespace)

    def build(node):
        if isinstance(node, Mapping):
            return {str(build(key)): build(value) for key, value in node.items()}
        if isinstance(node, list):
            return [build(item) for item in node]
        return sandbox.from_string(str(node)).render(**namespace)

    return Injected(env, files, build(injectors.get("extra_vars") or {}))


# --------------------------------------------------------------------------- surveys


def _choices(question: Mapping) -> list[str]:
    choices = question.get("choices") or []
    if isinstance(choices, str):
        choices = choices.split("\n")
    return [str(choice) for choice in choices if str(choice) != ""]


def _check_answer(question: Mapping, value: Any) -> None:
    variable, kind = question["variable"], question.get("type", "text")
    where = "survey answer %s" % variable
    if kind in ("text", "textarea", "password"):
        if not isinstance(value, str):
            raise AwxDataError("%s: must be text, not %r" % (where, value))
        if "min" in question and question["min"] is not None and len(value) < int(question["min"]):
            raise AwxDataError("%s: shorter than %s characters" % (where, question["min"]))
        if "max" in question and question["max"] is not None and len(value) > int(question["max"]):
            raise AwxDataError("%s: longer than %s characters" % (where, question["max"]))
    elif kind in ("integer", "float"):
        allowed = (int,) if kind == "integer" else (int, float)
        if isinstance(value, bool) or not isinstance(value, allowed):
            raise AwxDataError(
                "%s: must be %s, not %r" % (where, "an integer" if kind == "integer" else "a number", value)
            )
        if question.get("min") is not None and value < question["min"]:
            raise AwxDataError("%s: %s is below the minimum %s" % (where, value, question["min"]))
        if question.get("max") is not None and value > question["max"]:
            raise AwxDataError("%s: %s is above the maximum %s" % (where, value, question["max"]))
    elif kind == "multiplechoice":
        if value not in _choices(question):
            raise AwxDataError("%s: %r is not one of %s" % (where, value, _choices(question)))
    elif kind == "multiselect":
        values = value.split("\n") if isinstance(value, str) else value
        if not isinstance(values, list) or not set(values) <= set(_choices(question)):
            raise AwxDataError("%s: %r is not a selection of %s" % (where, value, _choices(question)))


def check_survey(survey_spec: Mapping, where: str = "survey") -> None:
    """Refuse a survey AWX would refuse: unknown question types, variables asked twice, defaults out of range."""
    seen = set()
    for question in survey_spec.get("spec") or []:
        variable = question.get("variable")
        if not isinstance(variable, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", variable):
            raise AwxDataError("%s: question %r has no valid variable" % (where, question.get("question_name")))
        if variable in seen:
            raise AwxDataError("%s: variable %s is asked twice" % (where, variable))
        seen.add(variable)
        if question.get("type") not in SURVEY_TYPES:
            raise AwxDataError(
                "%s: question %s has type %r, not one of %s" % (where, variable, question.get("type"), SURVEY_TYPES)
            )
        if not question.get("question_name"):
            raise AwxDataError("%s: question %s has no question_name" % (where, variable))
        if question["type"] in ("multiplechoice", "multiselect") and not _choices(question):
            raise AwxDataError("%s: question %s has no choices" % (where, variable))
        default = question.get("default")
        if default not in (None, "") or (question["type"] in ("integer", "float") and default is not None):
            _check_answer(question, default)


def survey_extra_vars(survey_spec: Mapping | None, answers: Mapping[str, Any], base: Mapping | None = None) -> dict:
    """The job's extra variables: ``base`` (the template's ``extra_vars``), survey defaults, then ``answers``.

    Each answer is checked against its question (type, length or range, choices); a required question
    without answer or default is refused, as is an answer to no question.
    """
    extra = dict(base or {})
    questions = list((survey_spec or {}).get("spec") or [])
    check_survey(survey_spec or {})
    asked = {question["variable"] for question in questions}
    unknown = set(answers) - asked
    if unknown:
        raise AwxDataError("survey answers: no question asks %s" % ", ".join(sorted(unknown)))
    for question in questions:
        variable = question["variable"]
        if variable in answers:
            _check_answer(question, answers[variable])
            extra[variable] = answers[variable]
        elif question.get("default") not in (None, ""):
            extra[variable] = question["default"]
        elif question.get("required"):
            raise AwxDataError("survey answer %s: required" % variable)
    return extra


# --------------------------------------------------------------------------- job templates and inventories


def check_job_template(template: Mapping, credential_types: Sequence[str], sources: Sequence[str]) -> None:
    """Refuse a shipped job template with an unknown credential type or inventory source, or a bad survey."""
    where = "job template %s" % template.get("name")
    if template.get("audience") not in ("tenant", "owner"):
        raise AwxDataError("%s: audience must be tenant or owner" % where)
    if template.get("job_type", "run") not in ("run", "check"):
        raise AwxDataError("%s: job_type must be run or check" % where)
    unknown = [name for name in template.get("credential_types") or [] if name not in credential_types]
    if unknown or not template.get("credential_types"):
        raise AwxDataError("%s: credential types %s are not shipped" % (where, unknown or "(none)"))
    if template.get("inventory_source") not in sources:
        raise AwxDataError("%s: inventory source %r is not shipped" % (where, template.get("inventory_source")))
    if template.get("survey_enabled"):
        check_survey(template.get("survey_spec") or {}, where)
    elif template.get("survey_spec"):
        raise AwxDataError("%s: a survey_spec without survey_enabled is never asked" % where)


def inventory_script(listing: Mapping) -> str:
    """The ``inventory/hosts`` script of a job: prints ``listing`` (``ansible-inventory --list`` data),
    with the unsafe markers of ``--export`` output removed as AWX's import stores plain values."""

    def plain(value):
        if isinstance(value, dict):
            if set(value) == {"__ansible_unsafe"}:
                return value["__ansible_unsafe"]
            return {key: plain(item) for key, item in value.items()}
        if isinstance(value, list):
            return [plain(item) for item in value]
        return value

    data = json.dumps(plain(listing), sort_keys=True)
    return "#!/usr/bin/env python3\nimport sys\nsys.stdout.write(%r)\n" % data


def listed_hosts(listing: Mapping) -> set[str]:
    """Every host of an ``ansible-inventory --list`` output."""
    hosts = set((listing.get("_meta") or {}).get("hostvars") or {})
    for group in listing.values():
        if isinstance(group, Mapping):
            hosts.update(group.get("hosts") or [])
    return hosts


@dataclasses.dataclass
class PrivateDataDir:
    """The files of a job's private data directory (paths relative to it) and what went into them."""

    files: dict[str, str]
    modes: dict[str, int]
    envvars: dict[str, str]
    extravars: dict[str, Any]
    cmdline: str


def _credential_file_path(prefix: str, index: int) -> Callable[[str], str]:
    """Where the files of the job's ``index``-th credential go: ``<root>/env/credential-<index>-<label>``."""

    def file_path(label: str) -> str:
        return "%senv/credential-%d-%s" % (prefix, index, label.replace(".", "-"))

    return file_path


def job_private_data_dir(
    root: str,
    template: Mapping,
    credentials: Sequence[tuple[Mapping, Mapping]],
    answers: Mapping[str, Any],
    listing: Mapping,
    base_env: Mapping[str, str] | None = None,
) -> PrivateDataDir:
    """The private data directory AWX writes under ``root`` for a job of ``template``.

    ``credentials``: ``(credential type, inputs)`` of the job's credentials, one per type of the template's
    ``credential_types`` in that order; ``answers``: the survey's; ``listing``: the inventory as its last update
    imported it; ``base_env``: what the installation adds to every job (the execution environment's
    collection path, say). The project is not part of it (the caller puts the checkout under ``project/``).
    """
    wanted = list(template.get("credential_types") or [])
    given = [credential_type.get("name") for credential_type, _inputs in credentials]
    if given != wanted:
        raise AwxDataError(
            "job template %s: needs credentials of types %s, got %s" % (template.get("name"), wanted, given)
        )
    files: dict[str, str] = {}
    envvars = dict(base_env or {})
    credential_vars: dict[str, Any] = {}
    prefix = root.rstrip("/") + "/"
    for index, (credential_type, inputs) in enumerate(credentials):
        injected = render_credential(credential_type, inputs, _credential_file_path(prefix, index))
        files.update({path[len(prefix) :]: content for path, content in injected.files.items()})
        envvars.update(injected.env)
        credential_vars.update(injected.extra_vars)
    extravars = survey_extra_vars(
        template.get("survey_spec") if template.get("survey_enabled") else None, answers, template.get("extra_vars")
    )
    extravars.update(credential_vars)
    files["env/envvars"] = json.dumps(envvars, sort_keys=True)
    files["env/extravars"] = json.dumps(extravars, sort_keys=True)
    files["inventory/hosts"] = inventory_script(listing)
    cmdline = "--check" if template.get("job_type") == "check" else ""
    if cmdline:
        files["env/cmdline"] = cmdline
    return PrivateDataDir(files, {"inventory/hosts": 0o700}, envvars, extravars, cmdline)


def write_tree(root, files: Mapping[str, str], modes: Mapping[str, int] | None = None) -> None:
    """Write ``files`` (path relative to ``root`` -> content) with private modes (0600, or ``modes``)."""
    from pathlib import Path

    for relative, content in files.items():
        path = Path(root) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        path.chmod((modes or {}).get(relative, 0o600))
