from django.urls import path

from apps.content.api import views
from starmall.api import converters  # noqa: F401 - registers <id:...>

urlpatterns = [
    path("home", views.HomeView.as_view(), name="home-page"),
    path("article-categories", views.ArticleCategoryListView.as_view(), name="article-category-list"),
    path("articles", views.ArticleListView.as_view(), name="article-list"),
    path("articles/<id:article_id>", views.ArticleDetailView.as_view(), name="article-detail"),
    path("me/favourites", views.FavouriteListView.as_view(), name="favourite-list"),
    path("me/favourites/<id:product_id>", views.FavouriteDeleteView.as_view(), name="favourite-delete"),
]
