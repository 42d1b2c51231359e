"""Shared set-up for the Python tests: one hvd.init() per test process.

Every test runs on every rank (under hvdrun) in the same order, so collectives match up;
a test that must skip on some ranks only skips as a whole (decided from size()).
"""
import os
import sys

import pytest


@pytest.fixture(scope="session")
def hvd():
    import hvd.torch as hvd_torch
    if not hvd_torch.is_initialized():
        hvd_torch.init(process_sets="dynamic")
    yield hvd_torch


def pytest_report_header(config):
    rank, size = os.environ.get("HVD_RANK", "0"), os.environ.get("HVD_SIZE", "1")
    return f"hvd tests: rank {rank} of {size}, python {sys.executable}"
