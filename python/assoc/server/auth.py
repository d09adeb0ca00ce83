"""JSON Web Token checks (ValidateJsonWebTokens): Bearer tokens, HMAC secret or public key."""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from assoc.server.errors import ApiError, error_response
from assoc.server.health import PROBE_PATHS
from assoc.server.settings import Settings

POLICY_VIOLATION = 1008
_HMAC = ("HS256", "HS384", "HS512")
_PUBLIC_KEY = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")


class TokenValidator:
    """Checks one token per the settings; answers the claims or raises ApiError(401)."""

    def __init__(self, settings: Settings) -> None:
        try:
            import jwt
        except ImportError:
            raise RuntimeError(
                "ValidateJsonWebTokens needs PyJWT: pip install 'assoc[jwt]'"
            ) from None
        self._jwt = jwt
        self.signed_only = settings.validate_json_web_tokens == "2"
        self.secret = settings.json_web_token_secret
        self.public_key = b""
        if settings.json_web_token_path:
            with open(settings.json_web_token_path, "rb") as f:
                self.public_key = f.read()
            try:
                from cryptography.hazmat.primitives.serialization import load_pem_public_key

                load_pem_public_key(self.public_key)
            except ImportError:
                raise RuntimeError(
                    "JsonWebTokenPath needs the cryptography package: pip install 'assoc[jwt]'"
                ) from None
            except ValueError as exc:
                raise RuntimeError(
                    f"JsonWebTokenPath {settings.json_web_token_path!r}: "
                    f"not a PEM public key ({exc})"
                ) from None

    def claims(self, token: str) -> dict[str, Any]:
        """The token's claims when it passes; ApiError(401) when it does not."""
        jwt = self._jwt
        try:
            header = jwt.get_unverified_header(token)
            alg = header.get("alg")
            if alg == "none":
                if self.signed_only:
                    raise _unauthorized(
                        "unsigned tokens are not accepted (ValidateJsonWebTokens=2)"
                    )
                claims: dict[str, Any] = jwt.decode(
                    token,
                    options={"verify_signature": False, "verify_exp": True, "verify_nbf": True},
                )
                return claims
            if alg in _HMAC and self.secret:
                key: str | bytes = self.secret
            elif alg in _PUBLIC_KEY and self.public_key:
                key = self.public_key
            else:
                raise _unauthorized(f"tokens signed with {alg!r} cannot be checked here")
            signed: dict[str, Any] = jwt.decode(
                token, key, algorithms=[alg], options={"verify_aud": False}
            )
            return signed
        except jwt.PyJWTError as exc:
            raise _unauthorized(f"invalid token: {exc}") from None


def _unauthorized(detail: str) -> ApiError:
    return ApiError(401, "Unauthorized", detail, {"WWW-Authenticate": 'Bearer realm="assoc"'})


def user_of(claims: dict[str, Any]) -> str:
    """The user a token names (sub, else userId), or ''."""
    for key in ("sub", "userId"):
        value = claims.get(key)
        if isinstance(value, str):
            return value
    return ""


def groups_of(claims: dict[str, Any]) -> list[str]:
    """The groups a token names (its `groups` claim: a list of strings, or one string)."""
    value = claims.get("groups")
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [g for g in value if isinstance(g, str)]
    return []


async def refuse(scope: Scope, receive: Receive, send: Send, exc: ApiError) -> None:
    """Answers a request, or refuses a WebSocket upgrade, with the JSON error body of `exc`."""
    response = error_response(exc.status, exc.code, exc.detail, exc.headers)
    if scope["type"] == "websocket" and "websocket.http.response" not in scope.get(
        "extensions", {}
    ):
        # A server without denial responses can only refuse the upgrade bare.
        await send({"type": "websocket.close", "code": POLICY_VIOLATION})
    else:
        await response(scope, receive, send)


class TokenMiddleware:
    """Admits a request or WebSocket upgrade only with a valid Bearer token; records its user."""

    def __init__(self, app: ASGIApp, validator: TokenValidator) -> None:
        self.app = app
        self.validator = validator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Probes answer without a token over HTTP only: an upgrade is checked on every path.
        kind = scope["type"]
        if kind not in ("http", "websocket") or (kind == "http" and scope["path"] in PROBE_PATHS):
            await self.app(scope, receive, send)
            return
        auth = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                auth = value
                break
        scheme, _, token = auth.decode("latin-1").partition(" ")
        try:
            if scheme.lower() != "bearer" or not token.strip():
                raise _unauthorized("a Bearer token is required")
            claims = self.validator.claims(token.strip())
        except ApiError as exc:
            await refuse(scope, receive, send, exc)
            return
        scope.setdefault("state", {})["user"] = user_of(claims)
        scope["state"]["groups"] = groups_of(claims)
        await self.app(scope, receive, send)
