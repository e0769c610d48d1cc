"""One real Ray cluster on loopback for this directory's tests: 2 CPUs, no dashboard.

Starting Ray takes seconds, so the tests share one instance; it is started in
this process (`Bench` uses a connection its caller already holds) and stopped
after the last test.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

ray = pytest.importorskip("ray")


@pytest.fixture(scope="package")
def cluster() -> Iterator[ModuleType]:
    # Tasks defined in the tests travel by value: the workers cannot import the tests.
    for name, module in list(sys.modules.items()):
        if name.startswith("eval.ray.") or name.startswith("tests.eval.ray."):
            ray.cloudpickle.register_pickle_by_value(module)
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        logging_level=logging.ERROR,
        log_to_driver=False,
    )
    try:
        yield ray
    finally:
        ray.shutdown()
