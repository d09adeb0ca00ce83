"""JSON Web Token checks (ValidateJsonWebTokens): Bearer tokens, HMAC secret or public key."""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from assoc.server.errors import ApiError, error_response
from assoc.server.health import PROBE_PATHS
from assoc.server.settings import Settings

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


class TokenMiddleware:
    """Lets a request through only with a valid Bearer token; puts the user in scope state."""

    def __init__(self, app: ASGIApp, validator: TokenValidator) -> None:
        self.app = app
        self.validator = validator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PROBE_PATHS:
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
            response = error_response(exc.status, exc.code, exc.detail, exc.headers)
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})["user"] = user_of(claims)
        await self.app(scope, receive, send)
