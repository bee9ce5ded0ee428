import { randomBytes } from 'node:crypto';
import cookie, { type CookieSerializeOptions } from '@fastify/cookie';
import { DomainError } from '@firm/core';
import { findSession, type Session, safeEqual, sessionCredential } from '@firm/identity';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config';
import type { RequestAuthenticator } from './auth';

export const CSRF_HEADER = 'x-csrf-token';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Cookie names. Outside development the cookies are Secure and carry the `__Host-` prefix, so the
 * browser refuses them unless set by this exact host over HTTPS with Path=/ and no Domain.
 */
const secure = (config: Config) => config.NODE_ENV !== 'development';
export const sessionCookieName = (config: Config) => (secure(config) ? '__Host-session' : 'session');
export const loginCsrfCookieName = (config: Config) => (secure(config) ? '__Host-login-csrf' : 'login-csrf');

/** Signed, HttpOnly, SameSite=Lax, Secure outside development. */
export const cookieOptions = (config: Config, maxAgeSeconds?: number): CookieSerializeOptions => ({
  path: '/',
  httpOnly: true,
  sameSite: 'lax',
  secure: secure(config),
  signed: true,
  ...(maxAgeSeconds !== undefined ? { maxAge: maxAgeSeconds } : {}),
});

/** The cookie's value when its signature holds, else null. */
export function readSignedCookie(request: FastifyRequest, name: string): string | null {
  const raw = request.cookies[name];
  if (!raw) return null;
  const unsigned = request.unsignCookie(raw);
  return unsigned.valid && unsigned.value ? unsigned.value : null;
}

const sessions = new WeakMap<FastifyRequest, Promise<Session | null>>();

/** The signed-in user's session, looked up once per request. */
export function getSession(request: FastifyRequest): Promise<Session | null> {
  let session = sessions.get(request);
  if (!session) {
    const token = readSignedCookie(request, sessionCookieName(request.server.config));
    session = token ? findSession(request.server.database.db, token) : Promise.resolve(null);
    sessions.set(request, session);
  }
  return session;
}

export function setSessionCookie(reply: FastifyReply, token: string, expiresAt: Date): void {
  const config = reply.server.config;
  const maxAge = Math.max(0, Math.floor((expiresAt.getTime() - Date.now()) / 1000));
  reply.setCookie(sessionCookieName(config), token, cookieOptions(config, maxAge));
}

export function clearSessionCookie(reply: FastifyReply): void {
  const config = reply.server.config;
  reply.clearCookie(sessionCookieName(config), cookieOptions(config));
}

/** True when the form's CSRF token is the session's. */
export const csrfMatches = (session: Session, given: unknown): boolean =>
  typeof given === 'string' && safeEqual(given, session.csrfToken);

/**
 * The session as a credential on the partner routes. Changes made with a session must also send the
 * session's CSRF token in x-csrf-token: SameSite=Lax keeps other sites out, and the header keeps out
 * sibling subdomains and body-less form posts as well.
 */
export const sessionAuthenticator: RequestAuthenticator = async (request) => {
  const session = await getSession(request);
  if (!session) return null;
  if (!SAFE_METHODS.has(request.method) && !csrfMatches(session, request.headers[CSRF_HEADER])) {
    throw new DomainError('FORBIDDEN', `requests made with a browser session must send the ${CSRF_HEADER} header`, [
      { field: `headers.${CSRF_HEADER}`, message: 'must be the csrfToken of GET /api/session' },
    ]);
  }
  return sessionCredential(request.server.database.db, session);
};

/** Cookie parsing and signing for the browser session. */
export const sessionPlugin = fp(async (app: FastifyInstance) => {
  const secret = app.config.SESSION_SECRET ?? randomBytes(32).toString('hex');
  if (!app.config.SESSION_SECRET && app.config.NODE_ENV === 'production') {
    app.log.warn('SESSION_SECRET is not set: sessions end when this process stops and work on this instance only');
  }
  await app.register(cookie, { secret, hook: 'onRequest' });
});
