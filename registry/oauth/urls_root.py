"""The person's pages at the origin's root: the sign-in page and "My connections" (the
authorization server itself, with its discovery documents, is ``urls``)."""

from django.urls import path

from registry.oauth import views

urlpatterns = [
    path("accounts/login/", views.SignInView.as_view(), name="login"),
    path("oauth/connections/", views.ConnectionsView.as_view(), name="oauth-connections"),
    path(
        "oauth/connections/<int:pk>/revoke/",
        views.ConnectionsView.as_view(),
        name="oauth-connection-revoke",
    ),
]
