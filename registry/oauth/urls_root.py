"""What the authorization server serves at the origin's root: its RFC 8414 metadata (the
issuer is the origin, so the document is at /.well-known/oauth-authorization-server),
the sign-in page and the person's "My connections"."""

from django.urls import path
from oauth2_provider import views as oauth_views

from registry.oauth import views

urlpatterns = [
    path(
        ".well-known/oauth-authorization-server",
        oauth_views.OAuthServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    path("accounts/login/", views.SignInView.as_view(), name="login"),
    path("oauth/connections/", views.ConnectionsView.as_view(), name="oauth-connections"),
    path(
        "oauth/connections/<int:pk>/revoke/",
        views.ConnectionsView.as_view(),
        name="oauth-connection-revoke",
    ),
]
