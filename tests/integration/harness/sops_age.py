"""The real ``sops`` and ``age-keygen`` commands for the GitOps suites (built by ``scripts/build-sops-age.sh``).

A tenant's key pair comes from ``age-keygen``; a manifest is encrypted by
``sops --encrypt --age <recipient>`` exactly as a tenant would before
committing it, with only ``data``/``stringData`` encrypted (what Flux's guide
recommends for Secrets). kustomize-controller decrypts with its built-in SOPS
support, from the age key in a Secret of the tenant's namespace.

Main entry points: :func:`require_tools`, :func:`new_key` (public recipient,
private key file text), :func:`encrypt`.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

SOPS_VERSION_DEFAULT = "v3.13.3"
AGE_VERSION_DEFAULT = "v1.3.1"
TIMEOUT = 60


class ToolsMissing(RuntimeError):
    """sops or age-keygen has not been built (``make gitops-tools``)."""


def tools_dir() -> Path:
    if os.environ.get("BMT_SOPS_DIR"):
        return Path(os.environ["BMT_SOPS_DIR"]).expanduser()
    cache = os.environ.get("BMT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "baremetal-tenancy"
    )
    return Path(cache) / f"sops-{SOPS_VERSION_DEFAULT}-age-{AGE_VERSION_DEFAULT}"


def require_tools() -> Path:
    directory = tools_dir()
    missing = [t for t in ("sops", "age-keygen") if not os.access(directory / "bin" / t, os.X_OK)]
    if missing:
        raise ToolsMissing(
            f"{', '.join(missing)} missing in {directory}/bin: run `make gitops-tools` (scripts/build-sops-age.sh)"
        )
    return directory


def _run(argv: list[str], **kwargs) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root")}
    env.update(kwargs.pop("env", {}))
    result = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, check=False, env=env, **kwargs)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:2])} failed ({result.returncode}): {result.stderr.strip()}")
    return result.stdout


def new_key() -> tuple[str, str]:
    """A new age key pair: (public recipient ``age1...``, the key file's text with ``AGE-SECRET-KEY-...``)."""
    text = _run([str(require_tools() / "bin" / "age-keygen")])
    public = next(line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("# public key: "))
    return public.strip(), text


def encrypt(manifest: str, recipient: str, filename: str = "secret.yaml") -> str:
    """``manifest`` (YAML) encrypted for ``recipient`` by sops, data and stringData only."""
    with tempfile.TemporaryDirectory(prefix="bmt-sops-") as tmp:
        path = Path(tmp) / filename
        path.write_text(manifest)
        return _run(
            [
                str(require_tools() / "bin" / "sops"),
                "--encrypt",
                "--age",
                recipient,
                "--encrypted-regex",
                "^(data|stringData)$",
                str(path),
            ],
            # sops looks for a .sops.yaml upwards from the file and for keys in the environment: neither here.
            env={"SOPS_AGE_KEY_FILE": os.devnull},
        )
