"""Let ``ansible-test`` bootstrap pip offline.

ansible-test seeds each virtual environment it makes with a ``get-pip.py``
script that it downloads from a host these machines cannot reach; it first
looks for a cached copy at ``~/.ansible/test/cache/get_pip_<version>.py``.
This writes a stand-in there: it seeds pip with the standard library's
``ensurepip`` and then installs the pip version ansible-test asked for from
the package index.  Run by ``make venv``; idempotent.
"""

import os
import sys

STAND_IN = '''\
"""Stand-in for get-pip.py written by baremetal.tenancy's scripts/ansible_test_offline.py."""
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"], stdout=subprocess.DEVNULL)
subprocess.check_call([sys.executable, "-m", "pip", "install", "-q"] + args)
'''


def pip_version():
    from ansible_test._internal import python_requirements as pr
    from ansible_test._internal.host_configs import NativePythonConfig

    python = NativePythonConfig(version="%d.%d" % sys.version_info[:2])
    return pr.get_venv_packages(python)["pip"]


def main():
    path = os.path.expanduser("~/.ansible/test/cache/get_pip_%s.py" % pip_version().replace(".", "_"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    current = open(path).read() if os.path.exists(path) else None
    if current != STAND_IN:
        with open(path, "w") as handle:
            handle.write(STAND_IN)
        print("ansible-test pip bootstrap stand-in written to %s" % path)


if __name__ == "__main__":
    main()
