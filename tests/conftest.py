"""Hypothesis profiles: `ci` (default under `make test`) keeps the suite fast on 2 cores; `dev` digs deeper."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(config, items):
    """Slow tests first, longest first (``@pytest.mark.slow(SECONDS)``; a stable sort):
    pytest-xdist hands tests out in this order, so the long ones start at once and the short ones
    fill in behind them, instead of one long test running alone at the end while the other workers
    idle."""

    def seconds(item) -> float:
        mark = item.get_closest_marker("slow")
        return (mark.args[0] if mark.args else 5.0) if mark else 0.0

    items.sort(key=lambda item: -seconds(item))
