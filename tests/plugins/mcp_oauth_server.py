"""An MCP server behind OAuth 2.1, built with the official MCP Python SDK: its own
authorization server (metadata, dynamic client registration, PKCE, refresh-token
rotation) and its resource server, in one process, for codemode's OAuth test.

    python mcp_oauth_server.py PORT EVENTS_FILE     # TOKEN_SECONDS: access token lifetime

The authorization endpoint approves at once (the person said yes) and redirects back with
a code. Every grant is appended to EVENTS_FILE as a JSON line (`register`, `code`,
`refresh`), so the test can tell a refresh from a new login. Tool: `whoami`, the client
id and scopes of the token that called it.
"""

import json
import os
import secrets
import sys
import time

import uvicorn
from pydantic import AnyHttpUrl

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

PORT = int(sys.argv[1])
EVENTS = sys.argv[2]
TOKEN_SECONDS = int(os.environ.get("TOKEN_SECONDS", "3600"))
BASE = f"http://127.0.0.1:{PORT}"


def event(kind, **details):
    with open(EVENTS, "a") as f:
        f.write(json.dumps({"event": kind, **details}) + "\n")


class Provider:
    """Clients, codes and tokens in memory."""

    def __init__(self):
        self.clients, self.codes, self.access, self.refresh = {}, {}, {}, {}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        self.clients[client_info.client_id] = client_info
        event("register", client_id=client_info.client_id)

    async def authorize(self, client, params: AuthorizationParams):
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or ["notes"], expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    def issue(self, client_id, scopes, resource):
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + TOKEN_SECONDS, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, expires_in=TOKEN_SECONDS, refresh_token=refresh, scope=" ".join(scopes))

    async def exchange_authorization_code(self, client, authorization_code):
        self.codes.pop(authorization_code.code, None)
        event("code", client_id=client.client_id)
        return self.issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        self.refresh.pop(refresh_token.token, None)
        event("refresh", client_id=client.client_id)
        return self.issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token):
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


server = MCPServer(
    "oauth-test",
    auth_server_provider=Provider(),
    auth=AuthSettings(
        issuer_url=AnyHttpUrl(BASE),
        resource_server_url=AnyHttpUrl(f"{BASE}/mcp"),
        validate_token_resource=False,
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["notes"], default_scopes=["notes"]),
        required_scopes=["notes"],
    ),
)


@server.tool(description="The client id and scopes of the token that called.", structured_output=False)
def whoami(ctx: Context) -> str:
    from mcp.server.auth.middleware.auth_context import get_access_token

    token = get_access_token()
    return json.dumps({"client_id": token.client_id if token else None, "scopes": token.scopes if token else None})


if __name__ == "__main__":
    uvicorn.run(server.streamable_http_app(host="127.0.0.1"), host="127.0.0.1", port=PORT, log_level="warning")
