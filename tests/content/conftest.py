import pytest
from django.utils import timezone

from apps.content.models import Article, ArticleCategory


@pytest.fixture
def make_article(db):
    """``make_article(title="...", status="published", content="", category=None, **fields)`` -> Article."""

    def make(*, title="择日小识", status=Article.Status.PUBLISHED, content="<p>正文</p>", category=None, **fields):
        category = category or ArticleCategory.objects.get_or_create(name="国学")[0]
        if status == Article.Status.PUBLISHED:
            fields.setdefault("published_at", timezone.now())
        return Article.objects.create(category=category, title=title, status=status, content=content, **fields)

    return make
