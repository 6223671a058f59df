"""The pages of a person's own upstream accounts.

- "My upstream accounts" (``/accounts/upstream/``): the person's live connections, each
  with a Disconnect button, and the providers they may connect.
- Connect (``/accounts/upstream/<slug>/connect/``): what connecting does and a button; the
  button (a POST with its CSRF token) starts the authorization code flow
  (``upstream_accounts.connect_start``) and sends the person to the provider.
- Callback (``/accounts/upstream/<slug>/callback/``): the provider sends the person back;
  the code is exchanged server side and the result shown (never a token).
- Disconnect: revokes at the provider when it can, then ends the connection.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib import admin, messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views import View

from executions.services import upstream_accounts
from registry.models import UpstreamConnection, UpstreamProvider
from toolhub.exceptions import ToolHubError


def _page(request, template: str, title: str, context: dict, status: int = 200):
    return render(
        request,
        template,
        {**admin.site.each_context(request), "title": title, **context},
        status=status,
    )


class AccountsView(LoginRequiredMixin, View):
    def get(self, request):
        connections = list(
            UpstreamConnection.objects.filter(person=request.user, revoked_at__isnull=True)
            .select_related("provider")
            .order_by("provider__name")
        )
        connected = {c.provider_id for c in connections}
        others = UpstreamProvider.objects.exclude(pk__in=connected).order_by("name")
        return _page(
            request,
            "upstream/accounts.html",
            "My upstream accounts",
            {"connections": connections, "providers": others},
        )


class ConnectView(LoginRequiredMixin, View):
    def get(self, request, slug):
        provider = get_object_or_404(UpstreamProvider, slug=slug)
        current = UpstreamConnection.objects.filter(
            person=request.user, provider=provider, revoked_at__isnull=True
        ).first()
        return _page(
            request,
            "upstream/connect.html",
            f"Connect your {provider.name} account",
            {
                "provider": provider,
                "provider_host": urlsplit(provider.authorization_url).netloc,
                "current": current,
            },
        )

    def post(self, request, slug):
        provider = get_object_or_404(UpstreamProvider, slug=slug)
        callback = request.build_absolute_uri(reverse("upstream-callback", args=[slug]))
        url = upstream_accounts.connect_start(request.session, provider, redirect_uri=callback)
        return HttpResponseRedirect(url)


class CallbackView(LoginRequiredMixin, View):
    def get(self, request, slug):
        provider = get_object_or_404(UpstreamProvider, slug=slug)
        try:
            connection = upstream_accounts.connect_finish(
                request.session,
                request.user,
                provider,
                state=request.GET.get("state", ""),
                code=request.GET.get("code", ""),
                error=request.GET.get("error", ""),
            )
        except upstream_accounts.ConnectRefused as refused:
            return _page(
                request,
                "upstream/connected.html",
                f"Your {provider.name} account was not connected",
                {"provider": provider, "problem": str(refused)},
                status=400,
            )
        return _page(
            request,
            "upstream/connected.html",
            f"Your {provider.name} account is connected",
            {"provider": provider, "connection": connection},
        )


class DisconnectView(LoginRequiredMixin, View):
    def post(self, request, pk):
        connection = get_object_or_404(
            UpstreamConnection.objects.select_related("provider", "person"),
            pk=pk,
            person=request.user,
            revoked_at__isnull=True,
        )
        try:
            problem = upstream_accounts.connection_disconnect(
                actor=request.user, connection=connection
            )
        except ToolHubError as exc:
            messages.error(request, exc.message)
        else:
            name = connection.provider.name
            messages.success(request, f"Your {name} account is disconnected.")
            if problem:
                messages.warning(
                    request,
                    f"{name} could not be asked to revoke its tokens ({problem}): ToolHub no "
                    f"longer uses them; you may also remove ToolHub's access at {name}.",
                )
        return HttpResponseRedirect(reverse("upstream-accounts"))
