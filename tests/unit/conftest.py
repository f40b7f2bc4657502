"""Settings shared by every unit test.

Hypothesis' per-example deadline (200 ms by default) is a timed assertion:
on a loaded machine (CI shares its two cores) an example of a pure function
can take longer without anything being wrong, and the run fails as "flaky".
The properties are about results, never speed (speed is shown in bench/), so
the deadline is off for every property test here.
"""

from hypothesis import settings

settings.register_profile("baremetal-tenancy", deadline=None)
settings.load_profile("baremetal-tenancy")
