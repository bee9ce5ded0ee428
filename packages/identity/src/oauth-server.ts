import { isScope, type Scope } from '@firm/core';
import type { Executor } from '@firm/db';
import OAuth2Server from '@node-oauth/oauth2-server';
import AuthorizationCodeGrantType from '@node-oauth/oauth2-server/lib/grant-types/authorization-code-grant-type.js';
import { parseScopes } from './oauth-authorize';
import { authenticateOAuthClient, findOAuthClient, type OAuthClient } from './oauth-clients';
import {
  ACCESS_TOKEN_PREFIX,
  AUTHORIZATION_CODE_PREFIX,
  authenticateAccessToken,
  consumeAuthorizationCode,
  createAuthorizationCode,
  findCodeForExchange,
  findRefreshToken,
  REFRESH_TOKEN_PREFIX,
  rotateRefreshToken,
  type StoredCode,
  type StoredRefreshToken,
  saveIssuedTokens,
} from './oauth-tokens';
import { generateSecret } from './secrets';

/*
 * The grants run on @node-oauth/oauth2-server with a model over our tables. The library does the
 * protocol work: parsing and checking token requests, client credentials from Basic or the body,
 * code expiry and client binding, the PKCE S256 comparison (in constant time, after the code is
 * consumed), refresh-token scope narrowing, rotation and the token response. What the points of
 * issue 5 ask beyond its defaults is closed here:
 * - PKCE is mandatory: codes are never saved without an S256 challenge, and a code without one is
 *   refused at the token endpoint (the library accepts codes without a challenge);
 * - a confidential client must authenticate even when it sends a code_verifier (the library skips
 *   the secret for PKCE requests; our `getClient` refuses a confidential client without its secret);
 * - a redirect_uri that differs from the authorization request's is invalid_grant (RFC 6749 5.2),
 *   and it is required at the token endpoint;
 * - a replayed code or a reused refresh token revokes the whole token family (in the model);
 * - tokens are opaque prefixed secrets (`mcp_at_`, `mcp_rt_`) stored as SHA-256 hashes.
 * Revocation (RFC 7009), metadata (RFC 8414, RFC 9728) and the consent flow are ours entirely.
 */

const { InvalidGrantError, InvalidRequestError, OAuthError, Request, Response, ServerError } = OAuth2Server;

const GRANTS = ['authorization_code', 'refresh_token'];

/** The user object the library passes between model calls: who approved, and in which family. */
export interface OAuthUser {
  id: string;
  firmId: string;
  /** Set once a family exists (code exchange, refresh). */
  grantId?: string;
  /** At approval: the organizations chosen on the consent page; null for all of them. */
  organizationIds?: string[] | null;
  /** At approval: the resource indicator of the request (RFC 8707), if it named one. */
  resource?: string | null;
}

interface ModelClient extends OAuth2Server.Client {
  record: OAuthClient;
}

const toModelClient = (record: OAuthClient): ModelClient => ({
  id: record.id,
  grants: GRANTS,
  redirectUris: record.redirectUris,
  record,
});

class StrictAuthorizationCodeGrant extends AuthorizationCodeGrantType {
  override verifyPKCE(request: OAuth2Server.Request, code: OAuth2Server.AuthorizationCode): void {
    if (!code.codeChallenge || code.codeChallengeMethod !== 'S256') {
      throw new InvalidGrantError('Invalid grant: the authorization code was issued without PKCE');
    }
    super.verifyPKCE(request, code);
  }

  override validateRedirectUri(request: OAuth2Server.Request, code: OAuth2Server.AuthorizationCode): void {
    const body = request.body as Record<string, unknown>;
    if (body.redirect_uri !== code.redirectUri) {
      throw new InvalidGrantError('Invalid grant: redirect_uri does not match the authorization request');
    }
    // RFC 8707 2.2: a token request may name the resource again, but not another one than was approved.
    const approved = (code.stored as StoredCode).grant.resource;
    if (body.resource !== undefined && body.resource !== approved) {
      throw new OAuthError('the resource differs from the one approved', { code: 400, name: 'invalid_target' });
    }
  }
}

export interface OAuthLifetimes {
  accessTokenSeconds: number;
  refreshTokenSeconds: number;
  codeSeconds: number;
}

function createModel(db: Executor) {
  const scopesOf = (scope: string[] | undefined): Scope[] => (scope ?? []).filter(isScope);
  return {
    async getClient(clientId: string, clientSecret: string | null | undefined) {
      const client = await authenticateOAuthClient(db, clientId, clientSecret);
      return client ? toModelClient(client) : null;
    },
    async validateScope(_user: OAuth2Server.User, _client: OAuth2Server.Client, scope?: string[]) {
      return parseScopes(scope?.join(' ')) ?? false;
    },
    async validateRedirectUri(redirectUri: string, client: OAuth2Server.Client) {
      return (client as ModelClient).record.redirectUris.includes(redirectUri);
    },
    async generateAuthorizationCode() {
      return generateSecret(AUTHORIZATION_CODE_PREFIX);
    },
    async generateAccessToken() {
      return generateSecret(ACCESS_TOKEN_PREFIX);
    },
    async generateRefreshToken() {
      return generateSecret(REFRESH_TOKEN_PREFIX);
    },
    async saveAuthorizationCode(
      code: Pick<
        OAuth2Server.AuthorizationCode,
        'authorizationCode' | 'expiresAt' | 'redirectUri' | 'scope' | 'codeChallenge' | 'codeChallengeMethod'
      >,
      client: OAuth2Server.Client,
      user: OAuth2Server.User,
    ) {
      if (!code.codeChallenge || code.codeChallengeMethod !== 'S256') {
        throw new InvalidRequestError('Invalid request: PKCE with code_challenge_method=S256 is required');
      }
      const approver = user as OAuthUser;
      const { grantId } = await createAuthorizationCode(db, {
        client: (client as ModelClient).record,
        userId: approver.id,
        firmId: approver.firmId,
        scopes: scopesOf(code.scope),
        organizationIds: approver.organizationIds ?? null,
        resource: approver.resource ?? null,
        code: code.authorizationCode,
        redirectUri: code.redirectUri,
        codeChallenge: code.codeChallenge,
        codeChallengeMethod: code.codeChallengeMethod,
        expiresAt: code.expiresAt,
      });
      return { ...code, client, user: { ...approver, grantId } };
    },
    async getAuthorizationCode(authorizationCode: string) {
      const stored = await findCodeForExchange(db, authorizationCode);
      if (!stored) return null;
      const user: OAuthUser = { id: stored.grant.userId, firmId: stored.grant.firmId, grantId: stored.grant.id };
      return {
        authorizationCode,
        expiresAt: stored.expiresAt,
        redirectUri: stored.redirectUri,
        scope: stored.grant.scopes,
        codeChallenge: stored.codeChallenge,
        codeChallengeMethod: stored.codeChallengeMethod,
        client: { id: stored.grant.clientId, grants: GRANTS },
        user,
        stored,
      };
    },
    async revokeAuthorizationCode(code: OAuth2Server.AuthorizationCode) {
      return consumeAuthorizationCode(db, code.stored as StoredCode);
    },
    async saveToken(token: OAuth2Server.Token, client: OAuth2Server.Client, user: OAuth2Server.User) {
      const owner = user as OAuthUser;
      if (!owner.grantId) throw new ServerError('Server error: token without a family');
      await saveIssuedTokens(db, owner.grantId, {
        accessToken: token.accessToken,
        accessTokenExpiresAt: token.accessTokenExpiresAt as Date,
        refreshToken: token.refreshToken,
        refreshTokenExpiresAt: token.refreshTokenExpiresAt,
        scopes: scopesOf(token.scope),
      });
      return { ...token, client, user };
    },
    async getRefreshToken(refreshToken: string) {
      const stored = await findRefreshToken(db, refreshToken);
      if (!stored) return null;
      const user: OAuthUser = { id: stored.grant.userId, firmId: stored.grant.firmId, grantId: stored.grant.id };
      return {
        refreshToken,
        refreshTokenExpiresAt: stored.expiresAt,
        scope: stored.scopes,
        client: { id: stored.grant.clientId, grants: GRANTS },
        user,
        stored,
      };
    },
    async revokeToken(token: OAuth2Server.RefreshToken) {
      return rotateRefreshToken(db, token.stored as StoredRefreshToken);
    },
    // Bearer authentication on the partner routes goes through authenticateAccessToken directly
    // (the auth plugin's authenticators); this is here because the library's model type needs it.
    async getAccessToken(accessToken: string) {
      const credential = await authenticateAccessToken(db, accessToken);
      if (!credential) return null;
      return {
        accessToken,
        scope: [...credential.scopes],
        client: { id: '', grants: GRANTS },
        user: { id: credential.userId, firmId: credential.firmId, grantId: credential.id },
      };
    },
  };
}

/** What the HTTP layer sends back: status, headers and an RFC 6749 JSON body. */
export interface OAuthHttpResult {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  /** The unexpected error behind a server_error, for the logs. */
  cause?: unknown;
}

export interface OAuthHttpRequest {
  headers: Record<string, string | string[] | undefined>;
  method: string;
  query: Record<string, unknown>;
  body: Record<string, unknown>;
}

export interface OAuthServer {
  /** The token endpoint (RFC 6749 4.1.3, 6). */
  token(request: OAuthHttpRequest): Promise<OAuthHttpResult>;
  /** Issues the code of an approved authorization request; throws an OAuthError (name = error code). */
  issueCode(params: Record<string, string>, user: OAuthUser): Promise<string>;
}

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

export function createOAuthServer(db: Executor, lifetimes: OAuthLifetimes): OAuthServer {
  const model = createModel(db);
  const server = new OAuth2Server({
    model,
    accessTokenLifetime: lifetimes.accessTokenSeconds,
    refreshTokenLifetime: lifetimes.refreshTokenSeconds,
    authorizationCodeLifetime: lifetimes.codeSeconds,
    // state is RECOMMENDED in RFC 6749, not required; PKCE already protects the client.
    allowEmptyState: true,
    alwaysIssueNewRefreshToken: true,
    // Whether a secret is needed depends on the client (confidential or public), not on the grant:
    // `getClient` decides, so the library must not skip the lookup for PKCE requests.
    requireClientAuthentication: { authorization_code: false, refresh_token: false },
    extendedGrantTypes: { authorization_code: StrictAuthorizationCodeGrant },
  });
  // At the authorization endpoint the client is identified, not authenticated.
  const authorizeModel = {
    ...model,
    async getClient(clientId: string) {
      const client = await findOAuthClient(db, clientId);
      return client ? toModelClient(client) : null;
    },
  };

  return {
    async token(input) {
      const conflict = clientAuthConflict(input);
      if (conflict)
        return { status: 400, headers: NO_STORE, body: { error: 'invalid_request', error_description: conflict } };
      const headers = flatHeaders(input.headers);
      const basic = decodeBasicCredentials(headers.authorization);
      if (basic) headers.authorization = `Basic ${Buffer.from(`${basic.clientId}:${basic.secret}`).toString('base64')}`;
      const request = new Request({ ...input, headers, query: input.query as Record<string, string> });
      const response = new Response();
      try {
        await server.token(request, response);
        return { status: 200, headers: { ...lowerCase(response.headers), ...NO_STORE }, body: response.body };
      } catch (err) {
        if (!(err instanceof OAuthError) || err instanceof ServerError) {
          return { status: 500, headers: NO_STORE, body: { error: 'server_error' }, cause: err };
        }
        return {
          status: err.code,
          headers: { ...lowerCase(response.headers), ...NO_STORE },
          body: { error: err.name, error_description: err.message },
        };
      }
    },

    async issueCode(params, user) {
      const request = new Request({ method: 'POST', headers: {}, query: {}, body: params });
      const code = await server.authorize(request, new Response(), {
        model: authorizeModel,
        authenticateHandler: { handle: () => user },
      } as OAuth2Server.AuthorizeOptions);
      return code.authorizationCode;
    },
  };
}

/**
 * RFC 6749 2.3.1: the client id and secret in HTTP Basic are form-urlencoded before base64 (clients
 * such as oauth4webapi encode `_` as `%5F`); the library compares them as sent, so we decode first.
 */
export function decodeBasicCredentials(authorization: unknown): { clientId: string; secret: string } | null {
  if (typeof authorization !== 'string' || !/^basic\s/i.test(authorization)) return null;
  const decoded = Buffer.from(authorization.replace(/^basic\s+/i, ''), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  const unform = (v: string) => {
    try {
      return decodeURIComponent(v.replace(/\+/g, ' '));
    } catch {
      return v;
    }
  };
  return { clientId: unform(decoded.slice(0, colon)), secret: unform(decoded.slice(colon + 1)) };
}

/** RFC 6749 2.3: a client uses one authentication method per request. */
function clientAuthConflict(input: OAuthHttpRequest): string | null {
  const basic = decodeBasicCredentials(input.headers.authorization);
  if (!basic) return null;
  if (input.body.client_secret !== undefined) return 'use either HTTP Basic or client_secret in the body, not both';
  if (input.body.client_id !== undefined && input.body.client_id !== basic.clientId) {
    return 'client_id in the body differs from the HTTP Basic user name';
  }
  return null;
}

function flatHeaders(headers: OAuthHttpRequest['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

const lowerCase = (headers: Record<string, string> | undefined): Record<string, string> =>
  Object.fromEntries(Object.entries(headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)]));

export const isOAuthError = (err: unknown): err is OAuth2Server.OAuthError => err instanceof OAuthError;
