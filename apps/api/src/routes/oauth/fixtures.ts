import { createHash, randomBytes } from 'node:crypto';
import { type Db, users } from '@firm/db';
import { createOAuthClient, hashPassword, type OAuthClient } from '@firm/identity';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { DEMO_PASSWORD } from '../../testing';

/** Test helpers for the browser and OAuth flows, driven over app.inject like a browser would. */

export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

export function form(fields: Record<string, string | string[] | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) {
    for (const v of [value ?? []].flat()) params.append(name, v);
  }
  return params.toString();
}

/** A minimal cookie jar: remembers what Set-Cookie said, forgets what it cleared. */
export class CookieJar {
  readonly cookies = new Map<string, string>();
  /** The Set-Cookie lines as received, by cookie name (for attribute checks). */
  readonly raw = new Map<string, string>();

  store(res: LightMyRequestResponse): this {
    const header = res.headers['set-cookie'];
    for (const line of [header ?? []].flat()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      this.raw.set(name, line);
      if (!value || /max-age=0/i.test(line) || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return this;
  }

  header(): { cookie: string } {
    return { cookie: [...this.cookies].map(([n, v]) => `${n}=${v}`).join('; ') };
  }
}

const unescapeHtml = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/** Every hidden input of a page, as a browser would submit them. */
export function hiddenFields(html: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\s*\/?>/g)) {
    out[unescapeHtml(m[1] as string)] = unescapeHtml(m[2] as string);
  }
  return out;
}

export async function addUser(db: Db, firmId: string, role: 'owner' | 'admin' | 'member', email: string) {
  const [row] = await db
    .insert(users)
    .values({ firmId, email, name: `${role} user`, role, passwordHash: await hashPassword(DEMO_PASSWORD) })
    .returning();
  return row as typeof users.$inferSelect;
}

/** Signs in through the real pages: GET /login for the form token, POST /login with it. */
export async function signIn(app: FastifyInstance, email: string, password = DEMO_PASSWORD): Promise<CookieJar> {
  const jar = new CookieJar();
  const page = await app.inject({ method: 'GET', url: '/login' });
  jar.store(page);
  const res = await app.inject({
    method: 'POST',
    url: '/login',
    headers: { ...FORM, ...jar.header() },
    payload: form({ ...hiddenFields(page.body), email, password }),
  });
  if (res.statusCode !== 303) throw new Error(`sign-in failed: ${res.statusCode} ${res.body}`);
  return jar.store(res);
}

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export const REDIRECT_URI = 'https://partner.example/callback';

export async function registerClient(
  db: Db,
  options: { isPublic?: boolean; redirectUris?: string[]; firmId?: string; name?: string } = {},
): Promise<{ client: OAuthClient; secret: string | null }> {
  const { client, clientSecret } = await createOAuthClient(db, {
    name: options.name ?? 'Partner Books',
    redirectUris: options.redirectUris ?? [REDIRECT_URI],
    isPublic: options.isPublic ?? false,
    firmId: options.firmId ?? null,
  });
  return { client, secret: clientSecret };
}

export function authorizeUrl(params: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) query.set(k, v);
  return `/api/oauth/authorize?${query}`;
}

export const authorizeParams = (client: OAuthClient, challenge: string, extra: Record<string, string> = {}) => ({
  response_type: 'code',
  client_id: client.clientId,
  redirect_uri: client.redirectUris[0] as string,
  scope: 'organizations:read accounts:read',
  state: 'st-123',
  code_challenge: challenge,
  code_challenge_method: 'S256',
  ...extra,
});

/** Opens the consent page and submits it (approve by default); returns the redirect response. */
export async function decide(
  app: FastifyInstance,
  jar: CookieJar,
  params: Record<string, string>,
  fields: Record<string, string | string[]> = { decision: 'approve' },
): Promise<LightMyRequestResponse> {
  const page = await app.inject({ method: 'GET', url: authorizeUrl(params), headers: jar.header() });
  if (page.statusCode !== 200) throw new Error(`consent page: ${page.statusCode} ${page.body}`);
  return app.inject({
    method: 'POST',
    url: '/api/oauth/authorize',
    headers: { ...FORM, ...jar.header() },
    payload: form({ ...hiddenFields(page.body), ...fields }),
  });
}

export async function approveForCode(
  app: FastifyInstance,
  jar: CookieJar,
  params: Record<string, string>,
  fields?: Record<string, string | string[]>,
): Promise<string> {
  const res = await decide(app, jar, params, fields);
  const code = new URL(res.headers.location as string).searchParams.get('code');
  if (res.statusCode !== 303 || !code) throw new Error(`no code: ${res.statusCode} ${res.headers.location}`);
  return code;
}

/** A fresh code of `client` approved by the signed-in `jar`, with its verifier and redirect URI. */
export async function freshCodeFor(app: FastifyInstance, jar: CookieJar, client: OAuthClient) {
  const { verifier, challenge } = pkce();
  const code = await approveForCode(app, jar, authorizeParams(client, challenge));
  return { code, verifier, redirectUri: client.redirectUris[0] as string };
}

/** The authorization_code grant for a code, its verifier and redirect URI. */
export const exchangeCode = (
  app: FastifyInstance,
  c: { code: string; verifier?: string; redirectUri?: string },
  basic?: { clientId: string; secret: string },
) =>
  tokenRequest(
    app,
    { grant_type: 'authorization_code', code: c.code, code_verifier: c.verifier, redirect_uri: c.redirectUri },
    basic,
  );

export function tokenRequest(
  app: FastifyInstance,
  fields: Record<string, string | undefined>,
  basic?: { clientId: string; secret: string },
) {
  const headers: Record<string, string> = { ...FORM };
  if (basic) headers.authorization = `Basic ${Buffer.from(`${basic.clientId}:${basic.secret}`).toString('base64')}`;
  return app.inject({ method: 'POST', url: '/api/oauth/token', headers, payload: form(fields) });
}

export interface TokenSet {
  access_token: string;
  refresh_token: string;
  scope: string;
  expires_in: number;
}

/** The whole flow for a registered client: consent, code, exchange. Returns the token response. */
export async function connect(
  app: FastifyInstance,
  jar: CookieJar,
  registered: { client: OAuthClient; secret: string | null },
  extra: Record<string, string> = {},
  fields?: Record<string, string | string[]>,
): Promise<TokenSet> {
  const { verifier, challenge } = pkce();
  const params = authorizeParams(registered.client, challenge, extra);
  const code = await approveForCode(app, jar, params, fields);
  const res = await tokenRequest(
    app,
    {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: params.redirect_uri,
      client_id: registered.secret ? undefined : registered.client.clientId,
    },
    registered.secret ? { clientId: registered.client.clientId, secret: registered.secret } : undefined,
  );
  if (res.statusCode !== 200) throw new Error(`token: ${res.statusCode} ${res.body}`);
  return res.json();
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
