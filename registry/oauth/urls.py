"""ToolHub's authorization server, in the toolkit's URL namespace (it reverses its endpoints
there, and derives the OpenID issuer from where the discovery document is): the two
discovery documents at the origin's root, so the issuer is the origin, and the endpoints
under /oauth/, with the consent page in place of its authorization page. The sign-in page
and "My connections" are ``urls_root``."""

from django.urls import path
from oauth2_provider import views as oauth_views

from registry.oauth import discovery, views

app_name = "oauth2_provider"

urlpatterns = [
    path(
        ".well-known/oauth-authorization-server",
        discovery.ServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    path(
        ".well-known/openid-configuration",
        discovery.OpenIDConfigurationView.as_view(),
        name="oidc-connect-discovery-info",
    ),
    path("oauth/authorize/", views.ConsentView.as_view(), name="authorize"),
    path("oauth/token/", oauth_views.TokenView.as_view(), name="token"),
    path("oauth/revoke_token/", oauth_views.RevokeTokenView.as_view(), name="revoke-token"),
    path("oauth/introspect/", oauth_views.IntrospectTokenView.as_view(), name="introspect"),
    path("oauth/register/", views.RegistrationView.as_view(), name="dcr-register"),
    path(
        "oauth/register/<str:client_id>/",
        views.RegistrationManagementView.as_view(),
        name="dcr-register-management",
    ),
    path("oauth/jwks/", oauth_views.JwksInfoView.as_view(), name="jwks-info"),
    path("oauth/userinfo/", oauth_views.UserInfoView.as_view(), name="user-info"),
]
