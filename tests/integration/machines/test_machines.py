"""The test-bed machines themselves (``harness/machines.py``), before any deployment uses them.

Real namespaces, bridge, sshd and sushy-tools BMCs, driven through Redfish and SSH:

1. a machine answers SSH with the key of its config drive while its BMC is On, and
   not while it is Off; another key is refused; its disk outlives a power cycle;
2. a wipe removes the tenant's files, keys, users and host name; negative control:
   the same hand-over without the wipe shows them to the next tenant;
3. two machines reach each other over the bridge, also at a static address from
   ``network_data`` (which then replaces the "DHCP" one);
   a machine applies the config drive image in its BMC's virtual USB stick, inserted through Redfish
   and by a real Ironic's ramdisk deployment;
4. stopping a test bed leaves no namespace, bridge or process, also when the
   session ends with an exception, and what a killed session left is swept by the next.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from harness import cloud_config
from harness import machines as machines_harness
from harness import openstack as openstack_harness
from harness import sushy as sushy_harness
from openstack.baremetal import configdrive

pytestmark = pytest.mark.machines

HARNESS_PARENT = str(Path(__file__).resolve().parents[1])  # tests/integration, which holds harness/


def user_data(user: str, key: str, *, hostname: str | None = None, default_key: str | None = None) -> str:
    config = {"users": [{"name": user, "ssh_authorized_keys": [key]}]}
    if default_key:
        config["users"].insert(0, "default")
        config["ssh_authorized_keys"] = [default_key]
    if hostname:
        config["hostname"] = hostname
    return "#cloud-config\n" + json.dumps(config)  # JSON is YAML


def test_ssh_follows_power_state(machine_bed, ssh_keypair):
    machine = machine_bed.machines[0]
    key, pub = ssh_keypair("tenant")
    other_key, unused_pub = ssh_keypair("other")
    machine.insert_config_drive(
        {"uuid": "instance-power", "hostname": "power-test"}, user_data("tenant", pub, default_key=pub)
    )
    machine_bed.power(machine, True)

    result = machine.ssh("tenant", key, "hostname; id -un; echo kept > ~/file")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["power-test", "tenant"]
    # The image's default user has password-less sudo (Debian's cloud images); a named user none.
    assert machine.ssh(cloud_config.DEFAULT_USER, key, "sudo -n id -u").stdout.strip() == "0"
    assert machine.ssh("tenant", key, "sudo -n true").returncode != 0
    refused = machine.ssh("tenant", other_key, "true")
    assert refused.returncode == 255 and "Permission denied" in refused.stderr

    machine_bed.power(machine, False)
    off = machine.ssh("tenant", key, "true")
    assert off.returncode == 255, off
    assert machine.exec("ip", "-o", "address", "show", "dev", "eth0").stdout.count("inet ") == 0

    machine_bed.power(machine, True)
    again = machine.ssh("tenant", key, "cat ~/file; hostname")
    assert again.returncode == 0, again.stderr
    assert again.stdout.split() == ["kept", "power-test"]
    machine_bed.power(machine, False)


TRACES = (
    "id -u tenant-a >/dev/null 2>&1 && echo user:tenant-a; "
    "test -e /home/tenant-a/notes && echo file:notes; "
    "test -e /srv/secret && echo file:/srv/secret; "
    "echo hostname:$(hostname)"
)


def hand_over(machine_bed, machine, ssh_keypair, wipe: bool) -> list[str]:
    """Tenant A uses the machine; then (wiped or not) tenant B gets it. Returns what is left of A:
    what B sees over SSH, which of A's logins still work, and whether A's key is on the disk."""
    key_a, pub_a = ssh_keypair("tenant-a")
    key_b, pub_b = ssh_keypair("tenant-b")
    machine.insert_config_drive(
        {"uuid": "instance-a"}, user_data("tenant-a", pub_a, hostname="host-of-a", default_key=pub_a)
    )
    machine_bed.power(machine, True)
    wrote = machine.ssh("tenant-a", key_a, "echo private > ~/notes && cat ~/notes")
    assert wrote.stdout.strip() == "private", wrote.stderr
    default_user = cloud_config.DEFAULT_USER
    # A root-owned trace as well, through the image's default user and sudo.
    as_root = machine.ssh(default_user, key_a, "echo tenant a was here | sudo -n tee /srv/secret")
    assert as_root.returncode == 0, as_root.stderr
    if wipe:
        machine.wipe()
    machine.insert_config_drive({"uuid": "instance-b"}, user_data("tenant-b", pub_b, hostname="host-of-b"))
    machine.wait_running(True)
    found = machine.ssh("tenant-b", key_b, TRACES)
    assert found.returncode == 0, found.stderr
    left = found.stdout.split()
    for user in ("tenant-a", default_user):
        if machine.ssh(user, key_a, "true").returncode == 0:
            left.append(f"login:{user}")
    on_disk = subprocess.run(
        ["grep", "-rlF", pub_a.split()[1], str(machine.disk)], check=False, capture_output=True, text=True
    )
    if on_disk.stdout:
        left.append("key-on-disk")
    machine_bed.power(machine, False)
    machine.wipe()
    return left


def test_wipe_removes_what_the_tenant_left(machine_bed, ssh_keypair):
    machine = machine_bed.machines[1]
    found = hand_over(machine_bed, machine, ssh_keypair, wipe=True)
    assert found == ["hostname:host-of-b"]


def test_without_wipe_the_next_tenant_sees_the_previous_one(machine_bed, ssh_keypair):
    """Negative control of the wipe test: the same checks see every trace when the disk is kept."""
    machine = machine_bed.machines[1]
    found = hand_over(machine_bed, machine, ssh_keypair, wipe=False)
    assert found == [
        "user:tenant-a",
        "file:notes",
        "file:/srv/secret",
        "hostname:host-of-b",
        "login:tenant-a",
        "login:debian",
        "key-on-disk",
    ]


def test_wipe_of_an_off_machine_also_drops_its_config_drive(machine_bed, ssh_keypair):
    machine = machine_bed.machines[1]
    key, pub = ssh_keypair("tenant")
    machine.insert_config_drive({"uuid": "instance-c"}, user_data("tenant", pub))
    machine.wipe()
    machine_bed.power(machine, True)
    assert machine.ssh("tenant", key, "true").returncode == 255
    machine_bed.power(machine, False)


def test_two_machines_reach_each_other_over_the_bridge(machine_bed, ssh_keypair):
    first, second = machine_bed.machines[0], machine_bed.machines[2]
    key, pub = ssh_keypair("tenant")
    static = str(list(machine_bed.bed.subnet.hosts())[-2])  # .253: not one the test bed hands out
    mac = second.nics[0].mac
    network_data = {
        "links": [{"id": "nic0", "type": "phy", "ethernet_mac_address": mac}],
        "networks": [{"id": "net0", "link": "nic0", "type": "ipv4", "ip_address": static, "netmask": "255.255.255.0"}],
        "services": [],
    }
    first.insert_config_drive({"uuid": "instance-first"}, user_data("tenant", pub))
    second.insert_config_drive({"uuid": "instance-second"}, user_data("tenant", pub), network_data)
    machine_bed.power(first, True)
    machine_bed.power(second, True)
    probe = "exec 3<>/dev/tcp/{}/22 && head -c 7 <&3"
    reached = first.ssh("tenant", key, probe.format(static))
    assert reached.returncode == 0 and reached.stdout == "SSH-2.0", reached
    back = second.ssh("tenant", key, probe.format(first.ip), address=static)
    assert back.returncode == 0 and back.stdout == "SSH-2.0", back
    old = first.ssh("tenant", key, f"timeout 3 bash -c {probe.format(second.ip)!r}")
    assert old.returncode != 0, old
    # Its second NIC (no network_data for it) keeps its "DHCP" address.
    assert f"inet {second.nics[1].address}" in second.exec("ip", "-o", "address", "show", "dev", "eth1").stdout
    machine_bed.power(first, False)
    machine_bed.power(second, False)


def test_config_drive_from_the_bmc_virtual_usb_stick(machine_bed, ssh_keypair, tmp_path):
    """The image Ironic builds (openstacksdk's configdrive.build, as on a ramdisk deploy) inserted in the
    BMC's USB stick through Redfish: the machine applies it at boot; ejected and wiped, nothing is left."""
    machine = machine_bed.machines[2]
    key, pub = ssh_keypair("tenant")
    drive = configdrive.build(
        {"uuid": "instance-media", "hostname": "from-the-stick"}, user_data=user_data("tenant", pub)
    )
    plain, url = sushy_harness.start_plain_http(tmp_path / "http")
    try:
        (tmp_path / "http" / "www" / "configdrive.img").write_bytes(gzip.decompress(base64.b64decode(drive)))
        media = machine.bmc.system_id + "/VirtualMedia/Floppy"
        status, body = machine_bed.emulator.request(
            "POST",
            media + "/Actions/VirtualMedia.InsertMedia",
            body={"Image": url + "/configdrive.img", "Inserted": True},
        )
        assert status in (200, 204), body
        machine_bed.power(machine, True)
        result = machine.ssh("tenant", key, "hostname")
        assert result.returncode == 0 and result.stdout.strip() == "from-the-stick", result
        machine_bed.power(machine, False)
        status, body = machine_bed.emulator.request("POST", media + "/Actions/VirtualMedia.EjectMedia", body={})
        assert status in (200, 204), body
        machine.wipe()
        machine_bed.power(machine, True)
        assert machine.ssh("tenant", key, "true").returncode == 255
        machine_bed.power(machine, False)
    finally:
        plain.stop()


def test_an_ironic_ramdisk_deployment_gives_the_machine_its_config_drive(
    machine_bed, openstack_env, ssh_keypair, tmp_path
):
    """Real Ironic (ramdisk deploy, redfish-virtual-media boot) deploys the node behind a machine with a
    config drive: Ironic builds the image, puts it in the BMC's USB stick and powers on; the machine
    applies it. Undeploying ejects it and powers off. (Not yet wired: nothing wipes the disk on cleaning.)"""
    machine = machine_bed.machines[2]  # its MACs are of no other suite's BMC: Ironic refuses a MAC twice
    admin = openstack_env.admin_conn
    key, pub = ssh_keypair("tenant")
    iso_src = tmp_path / "iso"
    iso_src.mkdir()
    (iso_src / "README.txt").write_text("a live image nothing boots\n")
    iso = openstack_env.ironic_server.http_root / "machines-live.iso"
    subprocess.run(["genisoimage", "-quiet", "-o", str(iso), "-V", "LIVE", str(iso_src)], check=True)
    node = openstack_harness.enroll_redfish_node(
        admin, machine.bmc, "machines-ironic-0", "rc-machines", openstack_env.infra_project_id
    )
    try:
        admin.baremetal.update_node(
            node,
            deploy_interface="ramdisk",
            boot_interface="redfish-virtual-media",
            instance_info={"boot_iso": f"{openstack_env.ironic_server.http_url}/{iso.name}"},
        )
        drive = {"meta_data": {"hostname": "deployed-by-ironic"}, "user_data": user_data("tenant", pub)}
        node = admin.baremetal.set_node_provision_state(node, "active", config_drive=drive, wait=True, timeout=300)
        assert node.provision_state == "active", node.last_error
        machine.wait_running(True)
        result = machine.ssh("tenant", key, "hostname")
        assert result.returncode == 0 and result.stdout.strip() == "deployed-by-ironic", result
        node = admin.baremetal.set_node_provision_state(node, "deleted", wait=True, timeout=300)
        assert node.provision_state == "available", node.last_error
        machine.wait_running(False)
        status, stick = machine_bed.emulator.request("GET", machine.bmc.system_id + "/VirtualMedia/Floppy")
        assert status == 200 and not stick.get("Inserted"), stick
    finally:
        admin.baremetal.set_node_maintenance(node, "the machines test is done")
        admin.baremetal.delete_node(node)
        machine_bed.power(machine, False)
        machine.wipe()


CHILD = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {parent!r})
    from harness import machines, sushy
    bed = machines.TestBed({workdir!r})
    systems = bed.address_systems(sushy.default_systems(1))
    emulator = sushy.start_sushy({workdir!r} + "/sushy", systems)
    try:
        machine = bed.add_machines(emulator.bmcs)[0]
        status, body = emulator.request(
            "POST", machine.bmc.system_id + "/Actions/ComputerSystem.Reset", body={{"ResetType": "On"}}
        )
        assert status in (200, 204), (status, body)
        machine.wait_running(True, timeout=180)
        print(bed.owner, bed.bridge, machine.netns, emulator.proc.pid, flush=True)
        if {mode!r} == "kill":
            import time
            time.sleep(600)
        raise RuntimeError("a test failed")
    finally:
        emulator.stop()
    """
)


def run_child(tmp_path, mode: str) -> tuple[subprocess.Popen, list[str], Path]:
    """Start the child session; returns it, its line (owner, bridge, netns, emulator PID) and its stderr file
    (a file, not a pipe: a child writing much there cannot block while the test waits for its line)."""
    code = CHILD.format(parent=HARNESS_PARENT, workdir=str(tmp_path / mode), mode=mode)
    stderr = tmp_path / f"{mode}-child.stderr"
    with open(stderr, "w") as err_file:
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=err_file, text=True)
    line = child.stdout.readline().split()
    if len(line) != 4:  # the child failed before its machine ran: show why instead of an unpacking error
        child.kill()
        child.communicate(timeout=60)
        raise AssertionError(
            f"the {mode} child printed {line!r} instead of its test bed; its stderr:\n{stderr.read_text()}"
        )
    return child, line, stderr


def bridge_of(owner: str, bridge: str) -> bool:
    """Whether the bridge ``bridge`` is on the host and still the child ``owner``'s (once it is gone, another
    session may make a bridge of the same name)."""
    return machines_harness.bridge_owner(machines_harness.bridges().get(bridge, "")) == int(owner)


def netns_inode(name: str) -> int:
    return os.stat(f"/run/netns/{name}").st_ino


def processes_in(inode: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.stat(entry / "ns" / "net").st_ino == inode:
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def test_stop_leaves_nothing(machine_bed, tmp_path):
    """A second test bed whose one machine follows the BMC of the module's first machine."""
    bed = machines_harness.TestBed(tmp_path / "bed")
    systems = bed.address_systems([{"name": "lone", "nics": [{"mac": "52:54:00:77:00:01"}]}])
    bmc = machine_bed.emulator.bmcs[0]
    lone = machines_harness.Bmc("lone", bmc.uuid, bmc.base_url, bmc.username, bmc.password, ["52:54:00:77:00:01"])
    machine = bed.add_machines([lone])[0]
    assert systems[0]["nics"][0]["ip"] == machine.ip
    machine_bed.power(machine_bed.machines[0], True)
    machine.wait_running(True)
    inode = netns_inode(machine.netns)
    assert bed.leftovers()
    bed.stop()
    machine_bed.power(machine_bed.machines[0], False)
    assert bed.leftovers() == []
    assert machine.netns not in machines_harness.netns_list()
    assert not machines_harness.bridge_is(bed.bridge, bed.alias)
    assert processes_in(inode) == []


def test_a_failed_session_cleans_up_at_exit(tmp_path):
    child, (owner, bridge, netns, unused_pid), stderr = run_child(tmp_path, "raise")
    inode = netns_inode(netns)
    child.communicate(timeout=120)
    err = stderr.read_text()
    assert child.returncode == 1 and "a test failed" in err, err
    assert netns not in machines_harness.netns_list()
    assert not bridge_of(owner, bridge)
    assert processes_in(inode) == []


def test_what_a_killed_session_left_is_swept(tmp_path):
    child, (owner, bridge, netns, emulator_pid), unused_stderr = run_child(tmp_path, "kill")
    inode = netns_inode(netns)
    assert processes_in(inode)
    # From the kill to this sweep, no other session's sweep (a test bed starting in another pytest process on the
    # host) may take what the child left: the host lock keeps them off until this one has swept.
    with machines_harness.host_lock():
        os.kill(child.pid, signal.SIGKILL)
        child.communicate(timeout=60)
        # The killed child's emulator is left too (its own session): end it by its PID.
        os.killpg(int(emulator_pid), signal.SIGKILL)
        assert netns in machines_harness.netns_list()
        removed = machines_harness.sweep_stale()
    assert netns in removed and bridge in removed
    assert netns not in machines_harness.netns_list()
    assert not bridge_of(owner, bridge)
    assert processes_in(inode) == []
