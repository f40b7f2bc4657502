# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)


import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import errors


class FakeApiException(Exception):
    """Shaped like kubernetes.client.exceptions.ApiException (duck typing is the contract)."""

    def __init__(self, status, reason, body=None):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.body = body


class FakeHttpException(Exception):
    """Shaped like openstack.exceptions.HttpException."""

    def __init__(self, status_code, details):
        super().__init__(details)
        self.status_code = status_code
        self.details = details


def test_message_names_object_and_cause():
    err = errors.InvalidInput("HostClaim t/a", "unknown operator Foo")
    assert err.message == "HostClaim t/a: unknown operator Foo"
    assert str(err) == err.message


def test_message_without_object():
    assert errors.BackendError(None, "boom").message == "boom"


@pytest.mark.parametrize(
    "status,cls",
    [
        (403, errors.Forbidden),
        (404, errors.NotFound),
        (409, errors.Conflict),
        (422, errors.InvalidInput),
        (400, errors.InvalidInput),
        (500, errors.BackendError),
    ],
)
def test_status_maps_to_class(status, cls):
    err = errors.from_exception("node n1", FakeHttpException(status, "refused"))
    assert isinstance(err, cls) and err.__class__.__name__ == cls.__name__
    assert err.obj == "node n1"
    assert err.details["status"] == status
    assert str(status) in err.cause


def test_kubernetes_body_message_is_preferred():
    body = b'{"kind":"Status","message":"hostclaims.metal3.io \\"x\\" is forbidden: User \\"t\\" cannot get"}'
    err = errors.from_exception("HostClaim t/x", FakeApiException(403, "Forbidden", body))
    assert isinstance(err, errors.Forbidden)
    assert "cannot get" in err.cause


def test_exception_without_status_is_backend_error():
    err = errors.from_exception("BMC b1", ConnectionError("connection refused"))
    assert isinstance(err, errors.BackendError)
    assert err.cause == "connection refused"
    assert "status" not in err.details


def test_tenancy_error_passes_through():
    original = errors.NotFound("x", "gone")
    assert errors.from_exception("y", original) is original


def test_wrap_errors_converts_and_names_object():
    with pytest.raises(errors.Conflict) as info:
        with errors.wrap_errors("BareMetalHost metal3/h1"):
            raise FakeApiException(409, "Conflict")
    assert info.value.obj == "BareMetalHost metal3/h1"


def test_wrap_errors_leaves_tenancy_errors_and_success_alone():
    with errors.wrap_errors("a"):
        pass
    with pytest.raises(errors.InvalidInput) as info:
        with errors.wrap_errors("a"):
            raise errors.InvalidInput("b", "c")
    assert info.value.obj == "b"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '{"kind": "Status", "message": "hostclaims.metal3.io \\"a\\" not found"}',
            'hostclaims.metal3.io "a" not found',
        ),
        (
            b'{"error_message": "{\\"faultstring\\": \\"Node n-1 is locked\\", \\"debuginfo\\": null}"}',
            "Node n-1 is locked",
        ),
        ({"error_message": {"faultstring": "bad field"}}, "bad field"),
        ('{"error_message": "plain text"}', "plain text"),
        ("not json", None),
        ("[1, 2]", None),
        ({}, None),
        (None, None),
    ],
)
def test_api_message_reads_kubernetes_and_ironic_bodies(body, message):
    assert errors.api_message(body) == message


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, errors.InvalidInput),
        (403, errors.Forbidden),
        (404, errors.NotFound),
        (406, errors.InvalidInput),
        (409, errors.Conflict),
        (422, errors.InvalidInput),
        (500, errors.BackendError),
        (503, errors.BackendError),
    ],
)
def test_one_status_table_for_raw_answers_and_library_exceptions(status, cls):
    raw = errors.status_error("node n-1", status, "went wrong")
    assert raw.__class__ is cls
    assert raw.message == "node n-1: went wrong (HTTP %s)" % status
    assert raw.details == {"status": status}
    assert errors.from_exception("node n-1", FakeHttpException(status, "went wrong")).__class__ is cls


def test_a_time_out_names_the_service_the_request_and_the_option():
    from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import timeout_cause

    assert timeout_cause("Ironic", "GET /allocations/web?fields=uuid", 3, "api_timeout") == (
        "Ironic did not answer GET /allocations/web within 3 s (api_timeout)"
    )
    assert timeout_cause("Ironic", "GET /nodes", None, "api_timeout") == (
        "Ironic did not answer GET /nodes before the connection's time-out (api_timeout)"
    )
