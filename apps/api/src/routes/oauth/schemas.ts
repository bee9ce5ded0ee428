import { Type } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { HtmlPage, Redirect } from '../../html';
import { ListQuery, PageOf } from '../../schemas';

/** An OAuth parameter; a repeated one arrives as an array and is refused by the handler (RFC 6749 3.1). */
const Param = (description: string) =>
  Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Array(Type.String())], { description }));

const authorizationParams = {
  response_type: Param('Must be `code`.'),
  client_id: Param('The client identifier from registration.'),
  redirect_uri: Param('Required; must equal one of the registered redirect URIs exactly.'),
  scope: Param('Space-separated scopes; omitted: every scope except connections:*.'),
  state: Param('Opaque value echoed back on the redirect.'),
  code_challenge: Param('Required: BASE64URL(SHA-256(code_verifier)), 43 characters (RFC 7636).'),
  code_challenge_method: Param('Required; must be `S256`.'),
  resource: Param('Optional resource indicator (RFC 8707); must be this site or a path under it.'),
};

export const AuthorizeQuery = Type.Object(authorizationParams, { additionalProperties: true });

export const ConsentForm = Type.Object(
  {
    ...authorizationParams,
    csrf_token: Type.Optional(Type.String({ maxLength: 200, description: 'The session CSRF token of the form.' })),
    decision: Type.Optional(Type.Union([Type.Literal('approve'), Type.Literal('deny')])),
    organizations: Type.Optional(
      Type.Union([Type.Literal('all'), Type.Literal('selected')], {
        description: '`all`: every client company of the firm, now and later; `selected`: organization_ids only.',
      }),
    ),
    organization_ids: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 1000 })])),
  },
  { additionalProperties: true },
);

const pageErrors = {
  400: HtmlPage(
    'The request cannot be trusted (unknown client, unregistered redirect URI): an error page, no redirect.',
  ),
  500: HtmlPage('Unexpected error.'),
};

export const AuthorizeResponses = {
  200: HtmlPage('The consent page: the app, its redirect host and the scopes in plain words.'),
  302: Redirect(
    'Not signed in: to /login and back. A request with a trusted redirect URI but other errors: to the app with ' +
      'error, error_description, state and iss (RFC 6749 4.1.2.1).',
  ),
  403: HtmlPage('The signed-in user is not an owner or admin of the firm.'),
  ...pageErrors,
  ...errorResponses(429),
};

export const ConsentResponses = {
  303: Redirect(
    'Approved: to the app with code, state and iss. Denied: with error=access_denied and state. Not signed in: to /login.',
  ),
  403: HtmlPage(
    "The CSRF token is missing or wrong, or the user may not approve apps, or the Origin or Host is not this service's (ALLOWED_ORIGINS).",
  ),
  ...pageErrors,
  ...errorResponses(429),
};

export const OAuthErrorBody = Type.Object(
  {
    error: Type.String({ description: 'RFC 6749 5.2 / RFC 7009 / RFC 7591 error code.' }),
    error_description: Type.Optional(Type.String()),
  },
  { title: 'OAuthError' },
);

const oauthErrors = { 400: OAuthErrorBody, 401: OAuthErrorBody, 500: OAuthErrorBody };

export const TokenForm = Type.Object(
  {
    grant_type: Param('`authorization_code` or `refresh_token`.'),
    code: Param('authorization_code: the code from the redirect.'),
    redirect_uri: Param('authorization_code: the redirect_uri of the authorization request.'),
    code_verifier: Param('authorization_code: the PKCE verifier.'),
    refresh_token: Param('refresh_token: the current refresh token (each is usable once).'),
    scope: Param('refresh_token: optionally narrower scopes.'),
    client_id: Param('Public clients, and confidential clients using client_secret_post.'),
    client_secret: Param('client_secret_post.'),
    resource: Param('Optional resource indicator (RFC 8707).'),
  },
  { additionalProperties: true },
);

export const TokenResponse = Type.Object({
  access_token: Type.String({ description: '`mcp_at_…`, opaque.' }),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'Seconds.' }),
  refresh_token: Type.String({ description: '`mcp_rt_…`, opaque, single use: each refresh returns a new one.' }),
  scope: Type.String({ description: 'The granted scopes, space-separated.' }),
});

export const TokenResponses = {
  200: TokenResponse,
  ...oauthErrors,
  ...errorResponses(429),
};

export const RevokeForm = Type.Object(
  {
    token: Param('The access or refresh token to revoke.'),
    token_type_hint: Param('`access_token` or `refresh_token` (optional; we look at the prefix).'),
    client_id: Param('Public clients, and confidential clients using client_secret_post.'),
    client_secret: Param('client_secret_post.'),
  },
  { additionalProperties: true },
);

export const RevokeResponses = {
  200: Type.Null({ description: 'Revoked, or unknown to this client (RFC 7009 2.2).' }),
  ...oauthErrors,
  ...errorResponses(429),
};

export const RegisterBody = Type.Object(
  {
    redirect_uris: Type.Array(Type.String({ maxLength: 2000 }), { minItems: 1, maxItems: 10 }),
    client_name: Type.Optional(Type.String({ maxLength: 100 })),
    token_endpoint_auth_method: Type.Optional(Type.String({ description: 'Only `none` (public clients).' })),
    grant_types: Type.Optional(Type.Array(Type.String())),
    response_types: Type.Optional(Type.Array(Type.String())),
    scope: Type.Optional(Type.String()),
  },
  { additionalProperties: true, description: 'RFC 7591 client metadata; unknown fields are ignored.' },
);

export const RegisteredClient = Type.Object({
  client_id: Type.String(),
  client_id_issued_at: Type.Integer(),
  client_name: Type.String(),
  redirect_uris: Type.Array(Type.String()),
  grant_types: Type.Array(Type.String()),
  response_types: Type.Array(Type.String()),
  token_endpoint_auth_method: Type.Literal('none'),
  scope: Type.Optional(Type.String()),
});

export const RegisterResponses = {
  201: RegisteredClient,
  400: OAuthErrorBody,
  500: OAuthErrorBody,
  ...errorResponses(429),
};

export const AuthorizationServerMetadata = Type.Object(
  {
    issuer: Type.String(),
    authorization_endpoint: Type.String(),
    token_endpoint: Type.String(),
    registration_endpoint: Type.String(),
    revocation_endpoint: Type.String(),
    scopes_supported: Type.Array(Type.String()),
    response_types_supported: Type.Array(Type.String()),
    response_modes_supported: Type.Array(Type.String()),
    grant_types_supported: Type.Array(Type.String()),
    code_challenge_methods_supported: Type.Array(Type.String()),
    token_endpoint_auth_methods_supported: Type.Array(Type.String()),
    revocation_endpoint_auth_methods_supported: Type.Array(Type.String()),
    authorization_response_iss_parameter_supported: Type.Boolean(),
    service_documentation: Type.String(),
  },
  { description: 'RFC 8414 authorization server metadata.' },
);

export const ProtectedResourceMetadata = Type.Object(
  {
    resource: Type.String(),
    authorization_servers: Type.Array(Type.String()),
    scopes_supported: Type.Array(Type.String()),
    bearer_methods_supported: Type.Array(Type.String()),
    resource_name: Type.String(),
    resource_documentation: Type.String(),
  },
  { description: 'RFC 9728 protected resource metadata.' },
);

export const Connection = Type.Object({
  id: Type.String({ description: 'The connection (token family) id.' }),
  client: Type.Object({ clientId: Type.String(), name: Type.String() }),
  scopes: Type.Array(Type.String()),
  organizationIds: Type.Union([Type.Array(Type.String()), Type.Null()], {
    description: 'null: every organization of the firm.',
  }),
  approvedBy: Type.Object({ userId: Type.String(), email: Type.String() }),
  createdAt: Type.String({ format: 'date-time' }),
});

export const ConnectionList = PageOf(Connection);
export const ConnectionListQuery = Type.Object(ListQuery);
export const ConnectionParams = Type.Object({ id: Type.String({ description: 'Connection id.' }) });
