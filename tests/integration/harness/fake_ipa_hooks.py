"""Patches applied inside FakeIPA's process (by :mod:`harness.fake_ipa`'s launcher), before it starts.

TEST FIXTURE ONLY. FakeIPA is Metal3's agent stand-in, run unchanged from its
snapshot; these patches wrap a few of its functions, they copy none of its code:

- **agent token**: Ironic hands a node's token out once, on the first lookup
  after it was (re)generated; a later lookup gets ``******``. FakeIPA makes a
  new agent object on every boot of a system, and one that boots again while
  Ironic still holds the token it gave out (the power-off came from the agent,
  not from Ironic) lands with no token: it then answered Ironic's next command
  (``get_partition_uuids`` during a ``direct`` deploy) with 401 and the deploy
  never ended. FakeIPA is the one agent of every system, so the token one of its
  agents received is the token of that node: a masked lookup takes it up.
- **command time**: FakeIPA lets each asynchronous command (a deploy or clean
  step, ``power_off``) finish 5-10 s after it started, as a stand-in for the
  work; here 1-2 s (:data:`COMMAND_TIME`): the test bed's disk steps take their
  real time anyway.
- **error bodies** carry ``faultstring`` as the real agent's do: Ironic 39's
  agent client reads it from every error and raised a ``TypeError`` without it.
- **the hardware**, through :mod:`harness.machine_bus` (only systems that have a
  test-bed machine; the others keep FakeIPA's no-op steps): the ``write_image``
  deploy step gives the deployment's config drive to the machine, which applies
  it at its next boot; the ``erase_devices`` and ``erase_devices_metadata`` clean
  steps wipe the machine's disk; a step fails with the machine's reason when the
  machine refuses (a disk that cannot be erased). While the agent ramdisk runs
  on a system, its machine's own OS does not. An agent whose system was powered
  off since it booted is dead, as on real hardware: its late lookup ends its
  boot thread instead of registering it beside the live agent.
"""

from __future__ import annotations

import base64
import gzip
import random
import time
import urllib.request
from pathlib import Path

from . import machine_bus

ERASE_STEPS = ("erase_devices", "erase_devices_metadata")
COMMAND_TIME = (1, 2)  # seconds an asynchronous agent command takes at least, min and max
MASKED_TOKEN = "******"


def config_drive_bytes(configdrive) -> bytes | None:
    """The ISO image of a config drive as Ironic passes it to the agent: gzipped and base64-encoded,
    or a URL to download it from (``None``: the deployment has none)."""
    if not configdrive:
        return None
    if isinstance(configdrive, str) and configdrive.startswith(("http://", "https://")):
        with urllib.request.urlopen(configdrive, timeout=60) as resp:
            data = resp.read()
    else:
        data = base64.b64decode(configdrive)
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def system_of(node: dict) -> str | None:
    """The bus key of the system behind an Ironic node (its ``redfish_system_id``)."""
    system_id = ((node or {}).get("driver_info") or {}).get("redfish_system_id")
    return machine_bus.system_key(system_id) if system_id else None


def install(bus_dir: str | None) -> None:
    """Apply the patches of the module doc; the hardware ones only with a machine bus (``bus_dir``)."""
    from fake_ipa import base, clean, deploy, main
    from fake_ipa.fake_agent import FakeIronicPythonAgent

    keep_token = _keep_agent_tokens(FakeIronicPythonAgent)
    _quicken_commands(base)
    _serve_error_bodies(main)

    if not bus_dir:
        return
    bus = Path(bus_dir)
    _end_stale_agents(bus, main, FakeIronicPythonAgent, keep_token)
    _act_on_machines(bus, base, clean, deploy)


def _keep_agent_tokens(agent_class):
    """**agent token** (module doc). Returns the patched ``process_lookup_data``."""
    tokens: dict[str, str] = {}  # Ironic node uuid -> the token Ironic handed to one of our agents

    process_lookup_data = agent_class.process_lookup_data

    def keep_token(self, content):
        process_lookup_data(self, content)
        node = content["node"]["uuid"]
        token = (content.get("config") or {}).get("agent_token")
        if token and len(token) >= 32:
            tokens[node] = token
        elif token == MASKED_TOKEN and not self.agent_token and node in tokens:
            self._logger.info("Node %s: agent token taken from this FakeIPA's earlier lookup", node)
            self.agent_token = self.api_client.agent_token = tokens[node]

    agent_class.process_lookup_data = keep_token
    return keep_token


def _quicken_commands(base) -> None:
    """**command time** (module doc)."""
    async_init = base.AsyncCommandResult.__init__

    def quick_command(self, *args, **kwargs):
        async_init(self, *args, **kwargs)
        self.time = time.time() + random.uniform(*COMMAND_TIME)

    base.AsyncCommandResult.__init__ = quick_command


def _serve_error_bodies(main) -> None:
    """**error bodies** (module doc)."""
    from flask import json
    from werkzeug.exceptions import HTTPException

    def error_body(exc):
        response = exc.get_response()
        response.data = json.dumps(
            {"code": exc.code, "name": exc.name, "description": exc.description, "faultstring": exc.description}
        )
        response.content_type = "application/json"
        return response

    main.app.register_error_handler(HTTPException, error_body)


def _end_stale_agents(bus: Path, main, agent_class, keep_token) -> None:
    """Tell the machine bus where an agent runs; a stale agent's lookup ends its boot thread."""
    boot = main.boot
    remove_from_heartbeater = main.remove_from_heartbeater
    # Power cycles per system. An agent belongs to the cycle it booted in: one whose system was powered off
    # since then is dead on real hardware, but FakeIPA's boot thread goes on looking its node up (for up to
    # 300 s) and, once Ironic answers, registers as the node's agent beside the live one. Ironic's next
    # command then reached the stale agent (a deploy's write_image never reached the machine; found
    # 2026-11-27 when the test beds got faster). A stale agent's lookup now ends its boot thread.
    cycles: dict[str, int] = {}
    agent_init = agent_class.__init__

    def init_in_cycle(self, system, *args, **kwargs):
        agent_init(self, system, *args, **kwargs)
        self.power_cycle = cycles.get(system["uuid"], 0)

    agent_class.__init__ = init_in_cycle

    def boot_agent(system):
        cycles[system["uuid"]] = cycles.get(system["uuid"], 0) + 1
        machine_bus.set_agent(bus, machine_bus.system_key(system["uuid"]), True)
        return boot(system)

    def stop_agent(uuid):
        cycles[uuid] = cycles.get(uuid, 0) + 1
        machine_bus.set_agent(bus, machine_bus.system_key(uuid), False)
        return remove_from_heartbeater(uuid)

    def only_live_agents(self, content):
        uuid = self.system["uuid"]
        if getattr(self, "power_cycle", None) != cycles.get(uuid, 0):
            self._logger.info(
                "System %s: an agent booted before its last power change ended (its lookup answered late)",
                self.system.get("name") or uuid,
            )
            raise SystemExit  # ends this boot thread only: it registers nowhere
        keep_token(self, content)

    agent_class.process_lookup_data = only_live_agents

    main.boot = boot_agent
    main.remove_from_heartbeater = stop_agent


def _fail_on(error: str | None, step: dict) -> None:
    if error is not None:
        raise RuntimeError(f"{step.get('step')}: {error}")


def _act_on_machines(bus: Path, base, clean, deploy) -> None:
    """The ``write_image`` deploy step and the erasing clean steps act on the system's test-bed machine."""
    write_step = deploy.DeployExtension.execute_deploy_step.__wrapped__

    @base.async_command("execute_deploy_step")
    def execute_deploy_step(self, step, node, ports, deploy_version=None, **kwargs):
        key = system_of(node)
        if step.get("step") == "write_image" and key:
            args = dict(kwargs, **(step.get("args") or {}))
            image = config_drive_bytes(args.get("configdrive") or (args.get("image_info") or {}).get("configdrive"))
            request = {"op": "config_drive", "config_drive": None}
            if image is not None:
                request["config_drive"] = base64.b64encode(image).decode()
            _fail_on(machine_bus.ask(bus, key, request), step)
        return write_step(self, step, node, ports, deploy_version=deploy_version, **kwargs)

    deploy.DeployExtension.execute_deploy_step = execute_deploy_step

    clean_step = clean.CleanExtension.execute_clean_step.__wrapped__

    @base.async_command("execute_clean_step")
    def execute_clean_step(self, step, node, ports, clean_version=None, **kwargs):
        key = system_of(node)
        if step.get("step") in ERASE_STEPS and key:
            _fail_on(machine_bus.ask(bus, key, {"op": "wipe", "step": step.get("step")}), step)
        return clean_step(self, step, node, ports, clean_version=clean_version, **kwargs)

    clean.CleanExtension.execute_clean_step = execute_clean_step
