"""Integration suites: real services on 127.0.0.1, driven through ansible-playbook."""

import signal

from harness import ansible

pytest_plugins = [
    "fixtures_kube",
    "fixtures_openstack",
    "fixtures_metal3",
    "fixtures_redfish",
    "fixtures_inventory",
    "fixtures_bmo",
    "fixtures_machines",
    "fixtures_flux",
    "fixtures_faults",
    "fixtures_networks",
    "fixtures_esi",
    "selection",
    "timings",
]


def pytest_configure(config):
    # modules, playbooks and inventories in forks of the session's zygotes (harness/ansible.py)
    ansible.use_zygotes()
    # scripts/integration-sessions.sh runs the sessions as background jobs of a non-interactive shell, which
    # start with SIGINT ignored, and Python keeps a SIGINT ignored at its start ignored: the session's trap (and
    # a Ctrl-C of make) then reached no test and no fixture ended its services. KeyboardInterrupt, as in a
    # foreground run: the test stops and the fixtures' finalizers stop what they started.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
