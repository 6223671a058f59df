"""Under /accounts/upstream/: the person's accounts, connecting and disconnecting one. The
callback is the redirect URI to register at each provider:
``https://<host>/accounts/upstream/<slug>/callback/``."""

from django.urls import path

from executions.accounts import views

urlpatterns = [
    path("", views.AccountsView.as_view(), name="upstream-accounts"),
    path("<slug:slug>/connect/", views.ConnectView.as_view(), name="upstream-connect"),
    path("<slug:slug>/callback/", views.CallbackView.as_view(), name="upstream-callback"),
    path(
        "connections/<int:pk>/disconnect/",
        views.DisconnectView.as_view(),
        name="upstream-disconnect",
    ),
]
