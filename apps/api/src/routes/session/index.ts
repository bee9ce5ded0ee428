import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import formbody from '@fastify/formbody';
import { createSession, normalizeEmail, revokeSession, safeEqual, verifyLogin } from '@firm/identity';
import { errorResponses, sendError } from '../../errors/responses';
import { pageErrorHandler, sendErrorPage, sendPage } from '../../html';
import { enforceLimit, ipKey } from '../../plugins/rate-limit';
import {
  clearSessionCookie,
  cookieOptions,
  getSession,
  csrfMatches,
  loginCsrfCookieName,
  readSignedCookie,
  setSessionCookie,
} from '../../plugins/session';
import { invitationRoutes } from './invite';
import { loginPage, signedInPage } from './pages';
import {
  LoginForm,
  LoginPageResponses,
  LoginQuery,
  LoginResponses,
  LogoutForm,
  LogoutResponses,
  SessionInfo,
} from './schemas';

const tags = ['session'];
const LOGIN_CSRF_TTL_SECONDS = 3600;

/** A path on this site, or null: return_to must never send anyone elsewhere (open redirect). */
export function safeReturnTo(value: string | undefined): string | null {
  const schemeRelative = (path: string) => path.startsWith('//') || path.startsWith('/\\');
  if (!value || !value.startsWith('/') || schemeRelative(value)) return null;
  try {
    const url = new URL(value, 'http://this.site');
    if (url.origin !== 'http://this.site') return null;
    // Dot segments normalize into a scheme-relative path (`/.//evil.example` -> `//evil.example`),
    // which a browser reads as another host: check the path as it will be sent, not as it came.
    const path = `${url.pathname}${url.search}`;
    return schemeRelative(path) ? null : path;
  } catch {
    return null;
  }
}

/** Browser sign-in: the pages, and the session a signed-in browser holds. */
export const sessionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config } = app;
  const db = () => app.database.db;
  await app.register(invitationRoutes);

  // The sign-in form is posted before any session exists, so its CSRF token is a double-submit
  // token: the same random value in a signed cookie and in the form.
  await app.register(async (instance) => {
    const pages = instance.withTypeProvider<TypeBoxTypeProvider>();
    await pages.register(formbody);
    pages.setErrorHandler(pageErrorHandler);

    pages.get(
      '/login',
      {
        schema: { tags, summary: 'The sign-in page', querystring: LoginQuery, response: LoginPageResponses },
      },
      async (request, reply) => {
        const returnTo = safeReturnTo(request.query.return_to);
        const session = await getSession(request);
        if (session) {
          if (returnTo) return reply.redirect(returnTo, 302);
          return sendPage(reply, 'Signed in', signedInPage(session.user, session.csrfToken));
        }
        let csrfToken = readSignedCookie(request, loginCsrfCookieName(config));
        if (!csrfToken) {
          csrfToken = randomBytes(32).toString('base64url');
          reply.setCookie(loginCsrfCookieName(config), csrfToken, cookieOptions(config, LOGIN_CSRF_TTL_SECONDS));
        }
        return sendPage(reply, 'Sign in', loginPage({ csrfToken, returnTo }));
      },
    );

    const accountOf = (request: FastifyRequest) => normalizeEmail((request.body as { email: string }).email);
    // Failed sign-ins count per account and address, so that someone who knows an e-mail address cannot lock its
    // owner out from elsewhere; and per account from every address, much higher, against a spread-out guess.
    const failureLimits = [
      pages.createRateLimit({
        max: config.LOGIN_RATE_LIMIT_ACCOUNT_MAX,
        timeWindow: config.LOGIN_RATE_LIMIT_WINDOW_SECONDS * 1000,
        keyGenerator: (request) => `login-account:${accountOf(request)}:${ipKey(request)}`,
      }),
      pages.createRateLimit({
        max: config.LOGIN_RATE_LIMIT_ACCOUNT_ANY_IP_MAX,
        timeWindow: config.LOGIN_RATE_LIMIT_WINDOW_SECONDS * 1000,
        keyGenerator: (request) => `login-account:${accountOf(request)}`,
      }),
    ];

    pages.post(
      '/login',
      {
        config: {
          browserOrigin: 'page',
          rateLimit: {
            max: config.LOGIN_RATE_LIMIT_IP_MAX,
            timeWindow: config.LOGIN_RATE_LIMIT_WINDOW_SECONDS * 1000,
            keyGenerator: (request) => `login-${ipKey(request)}`,
          },
        },
        schema: {
          tags,
          summary: 'Sign in',
          description:
            'Form post (application/x-www-form-urlencoded) of the sign-in page. Limited per IP address (every ' +
            'attempt), and failed attempts per account and IP address and per account from every address, see ' +
            'LOGIN_RATE_LIMIT_*; over any of them it answers 429 RATE_LIMITED.',
          consumes: ['application/x-www-form-urlencoded'],
          body: LoginForm,
          response: LoginResponses,
        },
      },
      async (request, reply) => {
        const cookieToken = readSignedCookie(request, loginCsrfCookieName(config));
        const formToken = request.body.csrf_token;
        if (!cookieToken || !formToken || !safeEqual(cookieToken, formToken)) {
          return sendErrorPage(
            reply,
            403,
            'Sign-in form expired',
            'The form is missing its security token or it has expired. Open the sign-in page and try again.',
          );
        }
        // A blocked account (from this address, or from everywhere) is refused before its password is checked.
        for (const limit of failureLimits)
          enforceLimit(reply, await limit(request, { increment: false }), { read: true });
        const returnTo = safeReturnTo(request.body.return_to);
        const user = await verifyLogin(db(), request.body.email, request.body.password);
        if (!user) {
          for (const limit of failureLimits) await limit(request);
          return sendPage(
            reply,
            'Sign in',
            loginPage({
              csrfToken: cookieToken,
              returnTo,
              email: request.body.email,
              error: 'Email or password is wrong.',
            }),
            { status: 401 },
          );
        }
        const { token, session } = await createSession(db(), user.id, config.SESSION_TTL_HOURS * 3_600_000);
        setSessionCookie(reply, token, session.expiresAt);
        reply.clearCookie(loginCsrfCookieName(config), cookieOptions(config));
        return reply.redirect(returnTo ?? '/login', 303);
      },
    );

    pages.post(
      '/logout',
      {
        config: { browserOrigin: 'page' },
        schema: {
          tags,
          summary: 'Sign out',
          description: 'Form post with the session CSRF token; ends the session.',
          consumes: ['application/x-www-form-urlencoded'],
          body: LogoutForm,
          response: LogoutResponses,
        },
      },
      async (request, reply) => {
        const session = await getSession(request);
        if (session) {
          if (!csrfMatches(session, request.body.csrf_token)) {
            return sendErrorPage(reply, 403, 'Sign-out refused', 'The form is missing its security token.');
          }
          await revokeSession(db(), session.id);
        }
        clearSessionCookie(reply);
        return reply.redirect('/login', 303);
      },
    );
  });

  app.get(
    '/api/session',
    {
      schema: {
        tags,
        summary: 'The signed-in browser session',
        description:
          'Who is signed in, and the CSRF token that partner-API changes made with the session cookie must send ' +
          'as x-csrf-token.',
        response: { 200: SessionInfo, ...errorResponses(401) },
      },
    },
    async (request, reply) => {
      const session = await getSession(request);
      if (!session) return sendError(reply, request, 'UNAUTHENTICATED', 'not signed in');
      return { user: session.user, csrfToken: session.csrfToken, expiresAt: session.expiresAt.toISOString() };
    },
  );
};
