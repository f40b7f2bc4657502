"""Integration suites: real services on 127.0.0.1, driven through ansible-playbook."""

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
]
