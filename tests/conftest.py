import shutil
import tempfile

import pytest


@pytest.fixture(scope="session")
def tmp_root():
    path = tempfile.mkdtemp(prefix="olake-cow-tests-")
    yield path
    shutil.rmtree(path, ignore_errors=True)
