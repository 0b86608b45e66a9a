import pytest


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    """Each test stores its uploads in its own folder."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return tmp_path / "media"
