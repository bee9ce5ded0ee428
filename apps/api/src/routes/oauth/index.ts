import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { OAUTH_SCOPES } from '@firm/core';
import {
  type AuthorizationParams,
  type AuthorizationRequest,
  authenticateOAuthClient,
  type AuthorizationCheck,
  canApproveApps,
  checkAuthorizationRequest,
  codeRedirect,
  consentContext,
  createOAuthClient,
  createOAuthServer,
  decodeBasicCredentials,
  errorRedirect,
  isOAuthError,
  isOurResource,
  mayRedirectErrors,
  parseScopes,
  redirectUriProblem,
  revokeTokenOfClient,
  type Session,
} from '@firm/identity';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { sendError, toErrorResponse } from '../../errors/responses';
import { refuseUnstorableText } from '../../text';
import { pageErrorHandler, sendErrorPage, sendPage } from '../../html';
import {
  AUTHORIZATION_SERVER_METADATA_PATH,
  MCP_PATH,
  MCP_RESOURCE_METADATA_PATH,
  PROTECTED_RESOURCE_METADATA_PATH,
  publicOrigin,
} from '../../origin';
import { ipKey } from '../../plugins/rate-limit';
import { csrfMatches, getSession } from '../../plugins/session';
import { consentPage, notAllowedPage, redirectOrigin } from './pages';
import {
  AuthorizationServerMetadata,
  AuthorizeQuery,
  AuthorizeResponses,
  ConsentForm,
  ConsentResponses,
  ProtectedResourceMetadata,
  RegisterBody,
  RegisterResponses,
  RevokeForm,
  RevokeResponses,
  TokenForm,
  TokenResponses,
} from './schemas';

const tags = ['oauth'];
const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };
const AUTHORIZATION_PARAMS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'resource',
] as const;
const GRANT_TYPES = ['authorization_code', 'refresh_token'];
/** What an MCP client asks for by default: the agent gateway, entries and banking, none of the firm's management. */
const MCP_SCOPES = OAUTH_SCOPES.filter(
  (s) => (s.startsWith('acct:') && s !== 'acct:clients:write') || s.startsWith('entries:') || s.startsWith('bank:'),
);

/** The OAuth parameters of a request or form, as the strings they were sent as. */
function oauthParams(source: AuthorizationParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of AUTHORIZATION_PARAMS) {
    const value = source[name];
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}

/** The parameters an approved request continues with: normalized, and with the scopes spelled out. */
const checkedParams = (request: AuthorizationRequest, source: AuthorizationParams): Record<string, string> => ({
  ...oauthParams(source),
  response_type: 'code',
  scope: request.scopes.join(' '),
  code_challenge_method: 'S256',
});

/** RFC 6749 5.2 errors of the JSON endpoints; a 429 keeps the documented error shape. */
function oauthErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const mapped = toErrorResponse(err);
  // Like every other answer of these endpoints, a 429 must not be cached either.
  if (mapped.code === 'RATE_LIMITED') return sendError(reply.headers(NO_STORE), request, mapped.code, mapped.message);
  if (mapped.code === 'INTERNAL_ERROR') {
    request.log.error({ err }, 'unexpected error');
    return reply.code(500).headers(NO_STORE).send({ error: 'server_error' });
  }
  const error = request.routeOptions.url === '/api/oauth/register' ? 'invalid_client_metadata' : 'invalid_request';
  const detail = mapped.details?.map((d) => `${d.field ?? ''} ${d.message}`.trim()).join('; ');
  return reply
    .code(400)
    .headers(NO_STORE)
    .send({ error, error_description: detail ? `${mapped.message}: ${detail}` : mapped.message });
}

/** Client credentials of a revocation request (RFC 6749 2.3.1): HTTP Basic or the body, never both. */
function clientCredentials(
  request: FastifyRequest,
  body: Record<string, unknown>,
): { clientId: string; secret: string | null; basic: boolean } | { error: string } {
  const header = request.headers.authorization;
  if (header && /^basic\s/i.test(header)) {
    if (body.client_secret !== undefined) return { error: 'use either HTTP Basic or client_secret, not both' };
    const basic = decodeBasicCredentials(header);
    return basic
      ? { clientId: basic.clientId, secret: basic.secret, basic: true }
      : { error: 'malformed HTTP Basic credentials' };
  }
  if (typeof body.client_id !== 'string') return { error: 'client_id is required' };
  const secret = typeof body.client_secret === 'string' ? body.client_secret : null;
  return { clientId: body.client_id, secret, basic: false };
}

const repeated = (body: Record<string, unknown>): string | undefined =>
  Object.entries(body).find(([, value]) => Array.isArray(value))?.[0];

/**
 * OAuth 2.0 for partner apps: metadata (RFC 8414, RFC 9728), dynamic client registration (RFC 7591),
 * the authorization endpoint with its consent page, the token endpoint (grants run by
 * @node-oauth/oauth2-server, see packages/identity/src/oauth-server.ts) and revocation (RFC 7009).
 */
export const oauthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config } = app;
  const db = () => app.database.db;
  const oauth = createOAuthServer(app.database.db, {
    accessTokenSeconds: config.OAUTH_ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenSeconds: config.OAUTH_REFRESH_TOKEN_TTL_DAYS * 86_400,
    codeSeconds: config.OAUTH_CODE_TTL_SECONDS,
  });
  const window = config.RATE_LIMIT_WINDOW_SECONDS * 1000;

  app.get(
    AUTHORIZATION_SERVER_METADATA_PATH,
    {
      schema: {
        tags,
        summary: 'OAuth authorization server metadata (RFC 8414)',
        response: { 200: AuthorizationServerMetadata },
      },
    },
    async (request, reply) => {
      const issuer = publicOrigin(request);
      reply.header('cache-control', 'public, max-age=3600');
      return {
        issuer,
        authorization_endpoint: `${issuer}/api/oauth/authorize`,
        token_endpoint: `${issuer}/api/oauth/token`,
        registration_endpoint: `${issuer}/api/oauth/register`,
        revocation_endpoint: `${issuer}/api/oauth/revoke`,
        scopes_supported: OAUTH_SCOPES,
        response_types_supported: ['code'],
        response_modes_supported: ['query'],
        grant_types_supported: GRANT_TYPES,
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
        revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
        authorization_response_iss_parameter_supported: true,
        service_documentation: `${issuer}/api/openapi.json`,
      };
    },
  );

  app.get(
    PROTECTED_RESOURCE_METADATA_PATH,
    {
      schema: {
        tags,
        summary: 'OAuth protected resource metadata (RFC 9728)',
        description: 'Named by the WWW-Authenticate header of every 401 of the partner API.',
        response: { 200: ProtectedResourceMetadata },
      },
    },
    async (request, reply) => {
      const origin = publicOrigin(request);
      reply.header('cache-control', 'public, max-age=3600');
      return {
        resource: origin,
        authorization_servers: [origin],
        scopes_supported: OAUTH_SCOPES,
        bearer_methods_supported: ['header'],
        resource_name: 'Firm accounting API',
        resource_documentation: `${origin}/api/openapi.json`,
      };
    },
  );

  app.get(
    MCP_RESOURCE_METADATA_PATH,
    {
      schema: {
        tags,
        summary: 'OAuth protected resource metadata of the MCP endpoint (RFC 9728)',
        description:
          `Named by the WWW-Authenticate header of a 401 of ${MCP_PATH}. Tokens for it are asked for with ` +
          `resource=<origin>${MCP_PATH} (RFC 8707) and work there only.`,
        response: { 200: ProtectedResourceMetadata },
      },
    },
    async (request, reply) => {
      const origin = publicOrigin(request);
      reply.header('cache-control', 'public, max-age=3600');
      return {
        resource: `${origin}${MCP_PATH}`,
        authorization_servers: [origin],
        scopes_supported: MCP_SCOPES,
        bearer_methods_supported: ['header'],
        resource_name: 'Firm accounting MCP server',
        resource_documentation: `${origin}/api/openapi.json`,
      };
    },
  );

  // The authorization endpoint and its consent form: pages for people.
  await app.register(async (instance) => {
    const pages = instance.withTypeProvider<TypeBoxTypeProvider>();
    await pages.register(formbody);
    pages.setErrorHandler(pageErrorHandler);

    /** A request error goes back to a client the user's firm trusts; anyone else sees it on a page of ours. */
    const redirectError = async (
      reply: FastifyReply,
      check: Extract<AuthorizationCheck, { outcome: 'redirect' }>,
      session: Session | null,
      code: number,
    ) => {
      if (await mayRedirectErrors(db(), check.client, session?.user.firmId))
        return reply.redirect(check.location, code);
      return sendErrorPage(reply, 400, 'This app cannot connect', `${check.description} (${check.error})`);
    };

    /** Owner/admin and firm checks, shared by the page and the form; null when the user may go on. */
    const refuse = (
      reply: FastifyReply,
      request: AuthorizationRequest,
      session: Session,
      issuer: string,
      code: number,
    ) => {
      const deny = (error: string, description: string) =>
        errorRedirect(request.redirectUri, { error, description, state: request.state, issuer });
      if (!canApproveApps(session.user.role)) {
        const page = notAllowedPage(
          request.client.name,
          session.user,
          deny('access_denied', 'the user may not approve apps'),
        );
        return sendPage(reply, 'Not allowed', page, { status: 403 });
      }
      if (request.client.firmId && request.client.firmId !== session.user.firmId) {
        return reply.redirect(deny('unauthorized_client', 'this app is registered for another firm'), code);
      }
      return null;
    };

    pages.get(
      '/api/oauth/authorize',
      {
        schema: {
          tags,
          summary: 'OAuth authorization endpoint (code flow with PKCE S256)',
          description:
            'Shows the consent page to a signed-in owner or admin; sends anyone else to /login and back. ' +
            'PKCE with S256 is required; redirect_uri must equal a registered one exactly.',
          querystring: AuthorizeQuery,
          response: AuthorizeResponses,
        },
      },
      async (request, reply) => {
        const issuer = publicOrigin(request);
        const check = await checkAuthorizationRequest(db(), request.query, { issuer });
        if (check.outcome === 'page') {
          return sendErrorPage(reply, 400, 'This app cannot connect', `${check.description} (${check.error})`);
        }
        const session = await getSession(request);
        if (check.outcome === 'redirect') return redirectError(reply, check, session, 302);
        if (!session) return reply.redirect(`/login?return_to=${encodeURIComponent(request.url)}`, 302);
        const refused = refuse(reply, check.request, session, issuer, 302);
        if (refused) return refused;
        const context = await consentContext(db(), session.user.firmId);
        return sendPage(
          reply,
          `Connect ${check.request.client.name}`,
          consentPage({
            request: check.request,
            user: session.user,
            ...context,
            csrfToken: session.csrfToken,
            params: checkedParams(check.request, request.query),
          }),
          { formTargets: [redirectOrigin(check.request.redirectUri)] },
        );
      },
    );

    pages.post(
      '/api/oauth/authorize',
      {
        config: { browserOrigin: 'page' },
        schema: {
          tags,
          summary: 'The decision of the consent page',
          description:
            'Form post of the consent page, with the session CSRF token. Approve: a single-use code, valid for ' +
            'OAUTH_CODE_TTL_SECONDS and bound to the client, the redirect URI and the code challenge.',
          consumes: ['application/x-www-form-urlencoded'],
          body: ConsentForm,
          response: ConsentResponses,
        },
      },
      async (request, reply) => {
        const form = request.body;
        const issuer = publicOrigin(request);
        const session = await getSession(request);
        if (!session) {
          const back = `/api/oauth/authorize?${new URLSearchParams(oauthParams(form))}`;
          return reply.redirect(`/login?return_to=${encodeURIComponent(back)}`, 303);
        }
        if (!csrfMatches(session, form.csrf_token)) {
          return sendErrorPage(
            reply,
            403,
            'Request refused',
            'The form is missing its security token. Start again from the app.',
          );
        }
        const check = await checkAuthorizationRequest(db(), form, { issuer });
        if (check.outcome === 'page') {
          return sendErrorPage(reply, 400, 'This app cannot connect', `${check.description} (${check.error})`);
        }
        if (check.outcome === 'redirect') return redirectError(reply, check, session, 303);
        const approval = check.request;
        const refused = refuse(reply, approval, session, issuer, 303);
        if (refused) return refused;
        if (form.decision !== 'approve') {
          const location = errorRedirect(approval.redirectUri, {
            error: 'access_denied',
            description: 'the user denied the request',
            state: approval.state,
            issuer,
          });
          return reply.redirect(location, 303);
        }
        let organizationIds: string[] | null = null;
        if (form.organizations === 'selected') {
          organizationIds = [...new Set([form.organization_ids ?? []].flat())];
          const { organizations } = await consentContext(db(), session.user.firmId);
          const known = new Set(organizations.map((o) => o.id));
          if (organizationIds.length === 0 || !organizationIds.every((id) => known.has(id))) {
            return sendErrorPage(
              reply,
              400,
              'Choose client companies',
              'Tick at least one client company of your firm.',
            );
          }
        }
        try {
          const code = await oauth.issueCode(checkedParams(approval, form), {
            id: session.user.id,
            firmId: session.user.firmId,
            organizationIds,
            // Checked above to be ours; every token of the approval is bound to it (RFC 8707).
            resource: typeof form.resource === 'string' ? form.resource : null,
          });
          return reply.redirect(codeRedirect(approval.redirectUri, { code, state: approval.state, issuer }), 303);
        } catch (err) {
          if (!isOAuthError(err)) throw err;
          const location = errorRedirect(approval.redirectUri, {
            error: err.name,
            description: err.message,
            state: approval.state,
            issuer,
          });
          return reply.redirect(location, 303);
        }
      },
    );
  });

  // The endpoints clients call: JSON answers with RFC 6749 error codes.
  await app.register(async (instance) => {
    const api = instance.withTypeProvider<TypeBoxTypeProvider>();
    await api.register(formbody);
    api.setErrorHandler(oauthErrorHandler);
    api.addHook('preValidation', refuseUnstorableText);

    api.post(
      '/api/oauth/token',
      {
        config: {
          rateLimit: {
            max: config.OAUTH_TOKEN_RATE_LIMIT_MAX,
            timeWindow: window,
            keyGenerator: (request) => `oauth-token-${ipKey(request)}`,
          },
        },
        schema: {
          tags,
          summary: 'OAuth token endpoint',
          description:
            'application/x-www-form-urlencoded. Grants: authorization_code (with code_verifier) and refresh_token ' +
            '(rotated on every use; reusing a rotated one revokes its family). Confidential clients authenticate with ' +
            'client_secret_basic or client_secret_post, also when they send a code_verifier. Answers carry ' +
            'Cache-Control: no-store.',
          consumes: ['application/x-www-form-urlencoded'],
          body: TokenForm,
          response: TokenResponses,
        },
      },
      async (request, reply) => {
        const body = (request.body ?? {}) as Record<string, unknown>;
        const twice = repeated(body);
        if (twice) {
          return reply
            .code(400)
            .headers(NO_STORE)
            .send({ error: 'invalid_request', error_description: `${twice} is given more than once` });
        }
        if (typeof body.resource === 'string' && !isOurResource(body.resource, publicOrigin(request))) {
          return reply
            .code(400)
            .headers(NO_STORE)
            .send({ error: 'invalid_target', error_description: 'resource is not served by this server' });
        }
        const result = await oauth.token({ headers: request.headers, method: request.method, query: {}, body });
        if (result.cause) request.log.error({ err: result.cause }, 'token endpoint failed');
        // The library's answer as it built it: a token response or an RFC 6749 5.2 error.
        return reply
          .code(result.status as 200)
          .headers(result.headers)
          .send(result.body as never);
      },
    );

    api.post(
      '/api/oauth/revoke',
      {
        schema: {
          tags,
          summary: 'OAuth token revocation (RFC 7009)',
          description:
            'A refresh token revokes its whole family (every access token issued from the same approval); an ' +
            'access token revokes itself. Tokens that are unknown or belong to another client are ignored.',
          consumes: ['application/x-www-form-urlencoded'],
          body: RevokeForm,
          response: RevokeResponses,
        },
      },
      async (request, reply) => {
        reply.headers(NO_STORE);
        const body = (request.body ?? {}) as Record<string, unknown>;
        if (!String(request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
          return reply
            .code(400)
            .send({ error: 'invalid_request', error_description: 'send application/x-www-form-urlencoded' });
        }
        const twice = repeated(body);
        if (twice)
          return reply
            .code(400)
            .send({ error: 'invalid_request', error_description: `${twice} is given more than once` });
        const credentials = clientCredentials(request, body);
        if ('error' in credentials)
          return reply.code(401).send({ error: 'invalid_client', error_description: credentials.error });
        const client = await authenticateOAuthClient(db(), credentials.clientId, credentials.secret);
        if (!client) {
          if (credentials.basic) reply.header('www-authenticate', 'Basic realm="oauth"');
          return reply.code(401).send({ error: 'invalid_client', error_description: 'client authentication failed' });
        }
        if (typeof body.token !== 'string' || !body.token) {
          return reply.code(400).send({ error: 'invalid_request', error_description: 'token is required' });
        }
        await revokeTokenOfClient(db(), client, body.token);
        return reply.code(200).send(null);
      },
    );

    api.post(
      '/api/oauth/register',
      {
        config: {
          rateLimit: {
            max: config.OAUTH_REGISTER_RATE_LIMIT_MAX,
            timeWindow: window,
            keyGenerator: (request) => `oauth-register-${ipKey(request)}`,
          },
        },
        schema: {
          tags,
          summary: 'Dynamic client registration (RFC 7591), for public clients',
          description:
            'Registers a public client (token_endpoint_auth_method none; PKCE protects its codes). Confidential ' +
            'clients are registered by the firm with the CLI (oauth-client create).',
          body: RegisterBody,
          response: RegisterResponses,
        },
      },
      async (request, reply) => {
        reply.headers(NO_STORE);
        const body = request.body;
        const bad = (error: string, description: string) =>
          reply.code(400).send({ error, error_description: description });
        if (body.token_endpoint_auth_method !== undefined && body.token_endpoint_auth_method !== 'none') {
          return bad(
            'invalid_client_metadata',
            'only public clients (token_endpoint_auth_method none) register here; confidential clients are registered by the firm',
          );
        }
        const grantTypes = body.grant_types ?? GRANT_TYPES;
        if (grantTypes.length === 0 || !grantTypes.every((g) => GRANT_TYPES.includes(g))) {
          return bad('invalid_client_metadata', `grant_types may be ${GRANT_TYPES.join(' and ')}`);
        }
        const responseTypes = body.response_types ?? ['code'];
        if (!responseTypes.every((r) => r === 'code'))
          return bad('invalid_client_metadata', 'response_types may only be code');
        if (body.scope !== undefined && !parseScopes(body.scope))
          return bad('invalid_client_metadata', 'scope names an unknown scope');
        for (const uri of body.redirect_uris) {
          const problem = redirectUriProblem(uri);
          if (problem) return bad('invalid_redirect_uri', `${uri} ${problem}`);
        }
        const name =
          body.client_name?.trim() || `App at ${new URL(body.redirect_uris[0] as string).host || 'a native app'}`;
        const { client } = await createOAuthClient(db(), { name, redirectUris: body.redirect_uris, isPublic: true });
        return reply.code(201).send({
          client_id: client.clientId,
          client_id_issued_at: Math.floor(client.createdAt.getTime() / 1000),
          client_name: client.name,
          redirect_uris: client.redirectUris,
          grant_types: GRANT_TYPES,
          response_types: ['code'],
          token_endpoint_auth_method: 'none' as const,
          ...(body.scope !== undefined ? { scope: body.scope } : {}),
        });
      },
    );
  });
};
