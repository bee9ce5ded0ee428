import { NOT_FOR_OAUTH, OAUTH_SCOPES, isScope, type Scope } from '@firm/core';
import { type Executor, firms, oauthGrants } from '@firm/db';
import { activeCompanyNames } from '@firm/ledger';
import { and, eq } from 'drizzle-orm';
import { findOAuthClient, type OAuthClient } from './oauth-clients';

/** What a client gets when it asks for no scope (RFC 6749 3.3): everything it may have but managing connections. */
export const DEFAULT_OAUTH_SCOPES: readonly Scope[] = OAUTH_SCOPES.filter((s) => !s.startsWith('connections:'));

/** RFC 7636 4.2: BASE64URL(SHA-256(verifier)) is always 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** RFC 6749 appendix A.5 (VSCHAR), bounded. */
const STATE = /^[\x20-\x7e]{1,500}$/;

export type AuthorizationParams = Record<string, string | string[] | undefined>;

export interface AuthorizationRequest {
  client: OAuthClient;
  redirectUri: string;
  state: string | undefined;
  scopes: Scope[];
  codeChallenge: string;
}

/**
 * The outcome of checking an authorization request (RFC 6749 4.1.1, RFC 7636 4.3):
 * - `page`: the client or its redirect URI cannot be trusted, so the user sees an error page and
 *   is never redirected (RFC 6749 4.1.2.1, first paragraph);
 * - `redirect`: anything else wrong goes back to the client as `error` and `error_description`, once the caller
 *   knows the client is trusted (`mayRedirectErrors`); to anyone else it is an error page too (RFC 9700 4.11.2);
 * - `ok`: a request the user can be asked to approve.
 */
export type AuthorizationCheck =
  | { outcome: 'page'; error: string; description: string }
  | { outcome: 'redirect'; location: string; client: OAuthClient; error: string; description: string }
  | { outcome: 'ok'; request: AuthorizationRequest };

export class AuthorizationError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
  ) {
    super(description);
  }
}

/**
 * Space-separated scopes to our catalogue; none asked means the default set. Null when one is unknown or one no OAuth
 * client may hold (the firm's users and keys): the whole request is refused with invalid_scope.
 */
export function parseScopes(scope: string | undefined): Scope[] | null {
  const asked = (scope ?? '').split(/\s+/).filter(Boolean);
  if (asked.length === 0) return [...DEFAULT_OAUTH_SCOPES];
  if (!asked.every((s) => isScope(s) && !NOT_FOR_OAUTH.has(s))) return null;
  return [...new Set(asked)] as Scope[];
}

export interface CheckOptions {
  /** Our issuer identifier, added as `iss` to every response (RFC 9207). */
  issuer: string;
}

export async function checkAuthorizationRequest(
  db: Executor,
  params: AuthorizationParams,
  options: CheckOptions,
): Promise<AuthorizationCheck> {
  const single = (name: string): string | undefined => {
    const value = params[name];
    if (Array.isArray(value)) throw new AuthorizationError('invalid_request', `${name} is given more than once`);
    return value === '' ? undefined : value;
  };
  let client: OAuthClient | null;
  let redirectUri: string | undefined;
  try {
    const clientId = single('client_id');
    if (!clientId) return page('invalid_request', 'The request does not name an app (client_id is missing).');
    client = await findOAuthClient(db, clientId);
    if (!client) return page('invalid_client', 'No app is registered with this client_id.');
    redirectUri = single('redirect_uri');
    if (!redirectUri) return page('invalid_request', 'The request has no redirect_uri.');
    if (!client.redirectUris.includes(redirectUri)) {
      return page('invalid_request', 'The redirect_uri is not one this app registered, so we will not send you there.');
    }
  } catch (err) {
    if (err instanceof AuthorizationError) return page(err.error, err.description);
    throw err;
  }

  const state = typeof params.state === 'string' && params.state !== '' ? params.state : undefined;
  const back = (error: string, description: string): AuthorizationCheck => ({
    outcome: 'redirect',
    client: client as OAuthClient,
    error,
    description,
    location: errorRedirect(redirectUri as string, {
      error,
      description,
      state: state && STATE.test(state) ? state : undefined,
      issuer: options.issuer,
    }),
  });
  try {
    if (Array.isArray(params.state)) return back('invalid_request', 'state is given more than once');
    if (state !== undefined && !STATE.test(state)) return back('invalid_request', 'state has invalid characters');
    const responseType = single('response_type');
    if (!responseType) return back('invalid_request', 'response_type is required');
    if (responseType !== 'code') return back('unsupported_response_type', 'only response_type=code is supported');
    const challenge = single('code_challenge');
    if (!challenge)
      return back('invalid_request', 'PKCE is required: send code_challenge with code_challenge_method=S256');
    const method = single('code_challenge_method');
    if (method !== 'S256') return back('invalid_request', 'code_challenge_method must be S256 (plain is not accepted)');
    if (!S256_CHALLENGE.test(challenge)) {
      return back('invalid_request', 'code_challenge must be the base64url SHA-256 of the verifier (43 characters)');
    }
    const scopes = parseScopes(single('scope'));
    if (!scopes)
      return back('invalid_scope', `unknown scope; the scopes an app may ask for: ${OAUTH_SCOPES.join(' ')}`);
    const resource = single('resource');
    if (resource !== undefined && !isOurResource(resource, options.issuer)) {
      return back('invalid_target', 'resource is not served by this authorization server');
    }
    return { outcome: 'ok', request: { client, redirectUri, state, scopes, codeChallenge: challenge } };
  } catch (err) {
    if (err instanceof AuthorizationError) return back(err.error, err.description);
    throw err;
  }
}

/** RFC 8707 resource indicators we accept: our origin and any path under it. */
export const isOurResource = (resource: string, issuer: string): boolean =>
  resource === issuer || resource.startsWith(`${issuer}/`);

const page = (error: string, description: string): AuthorizationCheck => ({ outcome: 'page', error, description });

/** The redirect of a refused or failed request (RFC 6749 4.1.2.1), keeping the URI's own query. */
export function errorRedirect(
  redirectUri: string,
  params: { error: string; description?: string; state?: string | undefined; issuer: string },
): string {
  const url = new URL(redirectUri);
  url.searchParams.set('error', params.error);
  if (params.description) url.searchParams.set('error_description', params.description);
  if (params.state !== undefined) url.searchParams.set('state', params.state);
  url.searchParams.set('iss', params.issuer);
  return url.toString();
}

/** The redirect of an approved request (RFC 6749 4.1.2, RFC 9207). */
export function codeRedirect(
  redirectUri: string,
  params: { code: string; state?: string | undefined; issuer: string },
): string {
  const url = new URL(redirectUri);
  url.searchParams.set('code', params.code);
  if (params.state !== undefined) url.searchParams.set('state', params.state);
  url.searchParams.set('iss', params.issuer);
  return url.toString();
}

/** What the consent page shows of the approving user's firm: its name and active client companies. */
export async function consentContext(
  db: Executor,
  firmId: string,
): Promise<{ firmName: string; organizations: { id: string; name: string }[] }> {
  const [firm] = await db.select({ name: firms.name }).from(firms).where(eq(firms.id, firmId)).limit(1);
  return { firmName: firm?.name ?? '', organizations: await activeCompanyNames(db, firmId) };
}

/**
 * Whether an error of an authorization request may be sent to the client's redirect URI: only for a signed-in user
 * whose firm registered the client or has approved it before. Anyone can register a client with any https redirect
 * URI, so redirecting errors for everyone else would make this endpoint an open redirector (RFC 9700 4.11.2).
 */
export async function mayRedirectErrors(
  db: Executor,
  client: OAuthClient,
  firmId: string | undefined,
): Promise<boolean> {
  if (!firmId) return false;
  if (client.firmId === firmId) return true;
  const [approved] = await db
    .select({ id: oauthGrants.id })
    .from(oauthGrants)
    .where(and(eq(oauthGrants.clientId, client.id), eq(oauthGrants.firmId, firmId)))
    .limit(1);
  return approved !== undefined;
}
