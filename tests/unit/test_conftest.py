from hypothesis import settings


def test_property_tests_have_no_deadline():
    """tests/unit/conftest.py: no Hypothesis example fails for being slow on a loaded machine."""
    assert settings.default.deadline is None
