"""ToolHub's authorization server under /oauth/: the toolkit's endpoints, with the consent
page in place of its authorization page (the origin's root: ``urls_root``)."""

from django.urls import path
from oauth2_provider import views as oauth_views

from registry.oauth import views

app_name = "oauth2_provider"  # the toolkit reverses its endpoints in this namespace

urlpatterns = [
    path("authorize/", views.ConsentView.as_view(), name="authorize"),
    path("token/", oauth_views.TokenView.as_view(), name="token"),
    path("revoke_token/", oauth_views.RevokeTokenView.as_view(), name="revoke-token"),
    path("introspect/", oauth_views.IntrospectTokenView.as_view(), name="introspect"),
    path("register/", views.RegistrationView.as_view(), name="dcr-register"),
    path(
        "register/<str:client_id>/",
        views.RegistrationManagementView.as_view(),
        name="dcr-register-management",
    ),
]
