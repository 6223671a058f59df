"""The pages a person sees: sign-in, the consent page, and "My connections".

The consent page is django-oauth-toolkit's authorization endpoint with ToolHub's rules
before it: the request names exactly one of ToolHub's resources; a remembered consent
that covers what is asked answers at once (a client cannot skip the page with
``approval_prompt=auto``); otherwise the page says who the client is, where it will
send the person back, for whom, and what it will be able to do, and the person's
answer is remembered (``registry.services.consents``).
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlencode, urlsplit

from django.contrib import admin, messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.contrib.auth.views import LoginView
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views import View
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.models import get_application_model
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import (
    AuthorizationView,
    DynamicClientRegistrationManagementView,
    DynamicClientRegistrationView,
)
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from registry.models import Consent, Toolset
from registry.oauth import resources
from registry.oauth.client_documents import last_refusal
from registry.oauth.validator import audit_client, sign_id_tokens
from registry.services.audit import audit_record
from registry.services.consents import consent_give, consent_revoke, live_consent
from toolhub.exceptions import PermissionDenied


class SignInView(LoginView):
    """Where a person signs in before a consent page (any active person, staff or not)."""

    template_name = "admin/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        return {
            **super().get_context_data(**kwargs),
            **admin.site.each_context(self.request),
            "title": "Sign in to ToolHub",
            "app_path": self.request.get_full_path(),
        }


def what_resource_means(uri: str) -> str:
    kind, slug = resources.parse(uri)
    if kind == "rest":
        return "ToolHub's REST API, with the tools you may run"
    if slug is None:
        return "every tool you may run"
    toolset = Toolset.objects.filter(slug=slug).first()
    return f"the toolset '{toolset.name if toolset else slug}' (the tools of it you may run)"


class ConsentView(AuthorizationView):  # its base asks the person to sign in first
    template_name = "oauth/consent.html"

    def get(self, request, *args, **kwargs):
        if "approval_prompt" in request.GET:  # the page's decision, not the client's
            request.GET = request.GET.copy()
            del request.GET["approval_prompt"]
        try:
            scopes, credentials = self.validate_authorization_request(request)
        except OAuthToolkitError as error:
            return self.error_response(self._said_why(error, request), application=None)
        application = get_application_model().objects.get(client_id=credentials["client_id"])
        if credentials.get("code_challenge_method") != "S256":
            # Refused before the page (the toolkit refuses it only once the person allowed):
            # "plain", or none named (which PKCE reads as plain).
            refusal = CustomOAuth2Error(
                error="invalid_request",
                description='PKCE with code_challenge_method "S256" is required.',
                state=credentials.get("state"),
            )
            redirect = credentials["redirect_uri"]
            return self.error_response(OAuthToolkitError(refusal, redirect), application)
        try:
            resource = resources.single(request.GET.getlist("resource"))
        except resources.ResourceError as exc:
            return self.error_response(self._invalid_target(exc, credentials), application)
        consent = live_consent(person=request.user, client=application, resource=resource)
        prompt = set(request.GET.get("prompt", "").split())
        covered = consent is not None and consent.covers(scopes)
        if "none" in prompt and not covered:  # OpenID Connect: no page may be shown
            refusal = CustomOAuth2Error(
                error="consent_required",
                description="The person has not allowed this client this access.",
                state=credentials.get("state"),
            )
            return self.error_response(
                OAuthToolkitError(refusal, credentials["redirect_uri"]), application
            )
        if covered and not prompt & {"consent", "login"}:
            credentials["resource"] = [resource]
            try:
                uri, _headers, _body, _status = self.create_authorization_response(
                    request=request, scopes=" ".join(scopes), credentials=credentials, allow=True
                )
            except OAuthToolkitError as error:
                return self.error_response(error, application)
            return self.redirect(uri, application)
        return super().get(request, *args, **kwargs)

    def error_response(self, error, application, **kwargs):
        """The toolkit's, with ``iss`` in an error sent back to the client as in a success
        (RFC 9207 asks it of every authorization response: a mix-up defence)."""
        response = super().error_response(error, application, **kwargs)
        location = response.get("Location") if response.status_code in (301, 302) else None
        if location and "iss" not in parse_qs(urlsplit(location).query):
            issuer = oauth2_settings.oauth2_authorization_server_issuer(self.request)
            joiner = "&" if urlsplit(location).query else "?"
            response["Location"] = f"{location}{joiner}{urlencode({'iss': issuer})}"
        return response

    @staticmethod
    def _said_why(error: OAuthToolkitError, request) -> OAuthToolkitError:
        """A client named by a metadata document that could not be used: say why."""
        reason = last_refusal(request.GET.get("client_id", ""))
        if reason and getattr(error, "oauthlib_error", None) is not None:
            error.oauthlib_error.description = reason[0].upper() + reason[1:] + "."
        return error

    @staticmethod
    def _invalid_target(exc, credentials) -> OAuthToolkitError:
        return OAuthToolkitError(
            error=CustomOAuth2Error(
                error="invalid_target", description=str(exc), state=credentials.get("state")
            ),
            redirect_uri=credentials["redirect_uri"],
        )

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        data = getattr(self, "oauth2_data", {})
        application = data.get("application")
        redirect = data.get("redirect_uri") or ""
        resource = data.get("resource") or ""
        return {
            **context,
            **admin.site.each_context(self.request),
            "title": "Allow access",
            "client_name": (application.name or application.client_id) if application else "",
            "client_id": application.client_id if application else "",
            "redirect_host": urlsplit(redirect).netloc,
            "resource_means": what_resource_means(resource) if resource else "",
            "resource": resource,
        }

    def form_valid(self, form):
        allow = form.cleaned_data.get("allow")
        if not allow:
            return super().form_valid(form)
        application = get_application_model().objects.get(client_id=form.cleaned_data["client_id"])
        credentials = {
            "redirect_uri": form.cleaned_data.get("redirect_uri"),
            "state": form.cleaned_data.get("state"),
        }
        try:
            resource = resources.single((form.cleaned_data.get("resource") or "").split())
        except resources.ResourceError as exc:
            return self.error_response(self._invalid_target(exc, credentials), application)
        # The grant, its tokens and the consent name the resource alike (as compared).
        form.cleaned_data["resource"] = resource
        response = super().form_valid(form)
        # Remembered only when a code was issued: a refused request leaves nothing behind.
        query = parse_qs(urlsplit(response.get("Location", "")).query)
        if "code" in query:
            scopes = (form.cleaned_data.get("scope") or "").split()
            consent_give(
                person=self.request.user, client=application, resource=resource, scopes=scopes
            )
        return response


class RegistrationView(DynamicClientRegistrationView):
    """RFC 7591 registration (the toolkit's), audited; the client's ID tokens are RS256."""

    def post(self, request, *args, **kwargs):
        response = super().post(request, *args, **kwargs)
        if response.status_code == 201:
            client_id = json.loads(response.content).get("client_id")
            client = get_application_model().objects.filter(client_id=client_id).first()
            if client is not None:
                sign_id_tokens(client)
                audit_client(client, "oauth.client_registered", by="registration (RFC 7591)")
        return response


class RegistrationManagementView(DynamicClientRegistrationManagementView):
    """RFC 7592 (the client reads, changes or removes its own registration), audited."""

    def put(self, request, client_id, *args, **kwargs):
        before = _client_fields(client_id)
        response = super().put(request, client_id, *args, **kwargs)
        client = get_application_model().objects.filter(client_id=client_id).first()
        if response.status_code == 200 and client is not None:
            audit_client(
                client, "oauth.client_changed", by="registration (RFC 7592)", before=before
            )
        return response

    def delete(self, request, client_id, *args, **kwargs):
        before = _client_fields(client_id)
        response = super().delete(request, client_id, *args, **kwargs)
        if response.status_code == 204 and before is not None:
            audit_record(
                actor=None,
                action="oauth.client_removed",
                target_type="oauth2_provider.application",
                target_id=client_id,
                target_repr=before["name"] or client_id,
                before={**before, "by": "registration (RFC 7592)"},
            )
        return response


def _client_fields(client_id: str) -> dict | None:
    return (
        get_application_model()
        .objects.filter(client_id=client_id)
        .values("client_id", "name", "redirect_uris", "authorization_grant_type")
        .first()
    )


class ConnectionsView(LoginRequiredMixin, View):
    """ "My connections": the clients the person lets act for them, each revocable."""

    def get(self, request):
        consents = (
            Consent.objects.filter(person=request.user, revoked_at__isnull=True)
            .select_related("client")
            .order_by("-granted_at")
        )
        rows = [
            {"consent": consent, "means": _safe_meaning(consent.resource)} for consent in consents
        ]
        return render(
            request,
            "oauth/connections.html",
            {**admin.site.each_context(request), "title": "My connections", "rows": rows},
        )

    def post(self, request, pk):
        consent = get_object_or_404(Consent, pk=pk, person=request.user)
        try:
            consent_revoke(actor=request.user, consent=consent)
        except PermissionDenied as exc:
            messages.error(request, str(exc))
        else:
            name = consent.client.name or consent.client.client_id
            messages.success(request, f"{name} can no longer act for you there.")
        return HttpResponseRedirect(reverse("oauth-connections"))


def _safe_meaning(uri: str) -> str:
    try:
        return what_resource_means(uri)
    except resources.ResourceError:
        return uri
