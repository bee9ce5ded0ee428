import { randomBytes } from 'node:crypto';
import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  acceptInvitation,
  createSession,
  findInvitation,
  type InvitationState,
  MIN_PASSWORD_LENGTH,
  safeEqual,
} from '@firm/identity';
import type { FastifyReply } from 'fastify';
import { pageErrorHandler, sendErrorPage, sendPage } from '../../html';
import { ipKey } from '../../plugins/rate-limit';
import { cookieOptions, loginCsrfCookieName, readSignedCookie, setSessionCookie } from '../../plugins/session';
import { invitationPage } from './pages';
import { InvitationForm, InvitationPageResponses, InvitationParams, InvitationResponses } from './schemas';

const tags = ['session'];
const CSRF_TTL_SECONDS = 3600;

const GONE: Record<Exclude<InvitationState, 'valid'>, { status: number; message: string }> = {
  unknown: { status: 404, message: 'This invitation link is not valid. Check that it was copied whole.' },
  used: {
    status: 410,
    message: 'This invitation link was already used: sign in at /login, or ask for a new invitation.',
  },
  expired: { status: 410, message: 'This invitation link has expired. Ask whoever invited you for a new one.' },
  revoked: { status: 410, message: 'This invitation was withdrawn. Ask whoever invited you for a new one.' },
};

const sendGone = (reply: FastifyReply, state: Exclude<InvitationState, 'valid'>) =>
  sendErrorPage(reply, GONE[state].status, 'Invitation not valid', GONE[state].message);

/**
 * The invitation page, `/invite/{token}`: an invited user chooses a password and is signed in. Like the sign-in form,
 * its form is posted before any session exists, so it carries a double-submit CSRF token (the sign-in form's cookie).
 */
export const invitationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config } = app;
  const db = () => app.database.db;
  await app.register(async (instance) => {
    const pages = instance.withTypeProvider<TypeBoxTypeProvider>();
    await pages.register(formbody);
    pages.setErrorHandler(pageErrorHandler);

    pages.get(
      '/invite/:token',
      {
        schema: {
          tags,
          summary: 'The invitation page',
          description:
            'Shows whom the link signs in and a form to choose a password. Looking at it does not spend the link.',
          params: InvitationParams,
          response: InvitationPageResponses,
        },
      },
      async (request, reply) => {
        const found = await findInvitation(db(), request.params.token);
        if (found.state !== 'valid' || !found.user)
          return sendGone(reply, found.state === 'valid' ? 'unknown' : found.state);
        let csrfToken = readSignedCookie(request, loginCsrfCookieName(config));
        if (!csrfToken) {
          csrfToken = randomBytes(32).toString('base64url');
          reply.setCookie(loginCsrfCookieName(config), csrfToken, cookieOptions(config, CSRF_TTL_SECONDS));
        }
        return sendPage(
          reply,
          'Join your firm',
          invitationPage({ token: request.params.token, csrfToken, ...found.user }),
        );
      },
    );

    pages.post(
      '/invite/:token',
      {
        config: {
          browserOrigin: 'page',
          rateLimit: {
            max: config.LOGIN_RATE_LIMIT_IP_MAX,
            timeWindow: config.LOGIN_RATE_LIMIT_WINDOW_SECONDS * 1000,
            keyGenerator: (request) => `invite-${ipKey(request)}`,
          },
        },
        schema: {
          tags,
          summary: 'Take an invitation',
          description:
            'Form post (application/x-www-form-urlencoded) of the invitation page: sets the password (at least 12 ' +
            'characters), spends the link (it works once) and signs the user in. Limited per IP address as /login ' +
            'is (LOGIN_RATE_LIMIT_IP_MAX).',
          consumes: ['application/x-www-form-urlencoded'],
          params: InvitationParams,
          body: InvitationForm,
          response: InvitationResponses,
        },
      },
      async (request, reply) => {
        const { token } = request.params;
        const cookieToken = readSignedCookie(request, loginCsrfCookieName(config));
        const formToken = request.body.csrf_token;
        if (!cookieToken || !formToken || !safeEqual(cookieToken, formToken)) {
          return sendErrorPage(
            reply,
            403,
            'Form expired',
            'The form is missing its security token or it has expired. Open the invitation link again.',
          );
        }
        const found = await findInvitation(db(), token);
        const invited = found.user;
        if (found.state !== 'valid' || !invited)
          return sendGone(reply, found.state === 'valid' ? 'unknown' : found.state);
        const again = (error: string) =>
          sendPage(reply, 'Join your firm', invitationPage({ token, csrfToken: cookieToken, ...invited, error }), {
            status: 400,
          });
        if (request.body.password !== request.body.password_confirmation) {
          return again('The two passwords differ.');
        }
        if ([...request.body.password].length < MIN_PASSWORD_LENGTH) {
          return again(`Choose a password of at least ${MIN_PASSWORD_LENGTH} characters.`);
        }
        const result = await acceptInvitation(db(), token, request.body.password);
        if (result.state !== 'accepted') return sendGone(reply, result.state);
        const { token: sessionToken, session } = await createSession(
          db(),
          result.user.id,
          config.SESSION_TTL_HOURS * 3_600_000,
        );
        setSessionCookie(reply, sessionToken, session.expiresAt);
        reply.clearCookie(loginCsrfCookieName(config), cookieOptions(config));
        return reply.redirect('/login', 303);
      },
    );
  });
};
