import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { DomainError } from '@firm/core';
import {
  completeAuthorization,
  disconnect,
  getConnection,
  listConnections,
  type QboConnection,
  startAuthorization,
} from '@firm/qbo';
import { Type } from 'typebox';
import { requireFirmManager } from '../context';
import { errorResponses } from '../../errors/responses';
import { html, HtmlPage, pageErrorHandler, sendErrorPage, sendPage } from '../../html';
import { getSession } from '../../plugins/session';

const tags = ['qbo'];

const Connection = Type.Object(
  {
    organizationId: Type.String({ format: 'uuid' }),
    realmId: Type.String({ description: "QuickBooks's company id: the client's acctCompanyId on the gateway." }),
    status: Type.Union(
      [Type.Literal('connected'), Type.Literal('needs_reauth'), Type.Literal('disconnected'), Type.Literal('error')],
      {
        description:
          'connected; needs_reauth (QuickBooks refused the authorization: connect again); disconnected; error.',
      },
    ),
    lastError: Type.Union([Type.String(), Type.Null()]),
    lastSyncAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'The last call QuickBooks answered (to the minute).',
    }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'QboConnection' },
);

const CallbackQuery = Type.Object(
  {
    code: Type.Optional(Type.String({ maxLength: 2048 })),
    state: Type.Optional(Type.String({ maxLength: 256 })),
    realmId: Type.Optional(Type.String({ maxLength: 64 })),
    error: Type.Optional(Type.String({ maxLength: 256 })),
  },
  { additionalProperties: true },
);

/** A browser connection is finished by the person who began it, so only a credential with a person can begin one. */
const personRequired = () =>
  new DomainError(
    'FORBIDDEN',
    'connecting a QuickBooks company is begun by a person, whose browser session finishes it: sign in as a firm ' +
      'owner or admin, or use a key one of them made; an operator key (made without a user) cannot',
  );

const notConfigured = () =>
  new DomainError('SERVICE_UNAVAILABLE', 'QuickBooks Online is not configured in this deployment (QBO_CLIENT_ID)');

/**
 * Connecting an organization to a QuickBooks Online company (Intuit's OAuth 2.0 authorization-code flow), its
 * status, and disconnecting it. Once connected, the organization is a gateway client on QBO.
 */
export const qboRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;
  const qbo = () => {
    if (!app.qbo) throw notConfigured();
    return app.qbo;
  };
  const present = (c: QboConnection) => ({
    organizationId: c.organizationId,
    realmId: c.realmId,
    status: c.status,
    lastError: c.lastError,
    lastSyncAt: c.lastSyncAt?.toISOString() ?? null,
    updatedAt: c.updatedAt.toISOString(),
  });

  app.post(
    '/qbo/connection',
    {
      config: { scope: 'platforms:write', organization: 'header' },
      schema: {
        tags,
        summary: 'Start connecting the organization to a QuickBooks Online company',
        description:
          "Answers Intuit's authorization URL for this organization: open it in a browser, sign in to Intuit and pick " +
          "the company; Intuit then sends the browser to QBO_REDIRECT_URI (this service's /api/qbo/callback), " +
          'which finishes the connection. The URL carries a one-time state, valid 15 minutes and bound to the ' +
          "person who asked: the signed-in user, or the user who made the key. Only that person's browser session " +
          'can finish it. Owners and admins only; an operator key (made without a user) is refused, 403 FORBIDDEN. ' +
          '503 when QuickBooks is not configured.',
        response: {
          201: Type.Object({
            data: Type.Object({
              authorizationUrl: Type.String({ format: 'uri' }),
              expiresAt: Type.String({ format: 'date-time' }),
            }),
          }),
          ...errorResponses(503),
        },
      },
    },
    async (request, reply) => {
      await requireFirmManager(request, "connect a client's QuickBooks company");
      const { userId } = request.credential;
      if (!userId) throw personRequired();
      const { config } = qbo();
      const started = await startAuthorization(db(), config, {
        firmId: request.credential.firmId,
        organizationId: request.organization.id,
        userId,
      });
      return reply
        .code(201)
        .send({ data: { authorizationUrl: started.url, expiresAt: started.expiresAt.toISOString() } });
    },
  );

  app.get(
    '/qbo/connection',
    {
      config: { scope: 'platforms:read', organization: 'header' },
      schema: {
        tags,
        summary: "The organization's QuickBooks Online connection",
        description: 'Its company (realm) id and status; 404 when the organization was never connected.',
        response: { 200: Type.Object({ data: Connection }) },
      },
    },
    async (request) => {
      const connection = await getConnection(db(), request.organization.id);
      if (!connection) throw new DomainError('NOT_FOUND', 'this organization has no QuickBooks connection');
      return { data: present(connection) };
    },
  );

  app.get(
    '/qbo/connections',
    {
      config: { scope: 'platforms:read', organization: 'firm' },
      schema: {
        tags,
        summary: "The firm's QuickBooks Online connections",
        description: 'Every organization of the firm connected to QuickBooks (or once connected), with its status.',
        response: { 200: Type.Object({ data: Type.Array(Connection) }) },
      },
    },
    async (request) => {
      const visible = request.credential.organizationIds;
      const all = await listConnections(db(), request.credential.firmId);
      const mine = visible === null ? all : all.filter((c) => visible.includes(c.organizationId));
      return { data: mine.map(present) };
    },
  );

  app.delete(
    '/qbo/connection',
    {
      config: { scope: 'platforms:write', organization: 'header' },
      schema: {
        tags,
        summary: 'Disconnect the organization from QuickBooks Online',
        description:
          'Revokes the authorization at Intuit (revoked says whether Intuit confirmed it) and leaves the client ' +
          'disconnected: agent calls to it are refused until it is connected again. Owners and admins only.',
        response: {
          200: Type.Object({ data: Type.Object({ revoked: Type.Boolean(), connection: Connection }) }),
          ...errorResponses(503),
        },
      },
    },
    async (request) => {
      await requireFirmManager(request, "connect a client's QuickBooks company");
      const { config } = qbo();
      const { revoked } = await disconnect(db(), config, request.organization.id);
      const connection = (await getConnection(db(), request.organization.id)) as QboConnection;
      return { data: { revoked, connection: present(connection) } };
    },
  );
};

/** Intuit's redirect after consent (QBO_REDIRECT_URI's path): a page for the person, not JSON. */
export const qboCallbackRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;
  await app.register(async (instance) => {
    const pages = instance.withTypeProvider<TypeBoxTypeProvider>();
    pages.setErrorHandler(pageErrorHandler);
    pages.get(
      '/api/qbo/callback',
      {
        schema: {
          tags,
          summary: "Intuit's redirect after consent (QBO_REDIRECT_URI)",
          description:
            'Finishes a connection in the browser session of the person who began it (without a session: 401, the ' +
            "state left as it is). Checks the one-time state (unknown, expired, replayed or another user's: 400, " +
            "nothing written), trades Intuit's code for tokens, reads companyinfo/{realmId} with the new token to " +
            'confirm that it reaches the company the callback names, stores the tokens encrypted, and shows the ' +
            'result. When the company is not confirmed (400) or is held by another connection (409), the new ' +
            'authorization is revoked at Intuit and nothing is stored.',
          querystring: CallbackQuery,
          response: {
            200: HtmlPage('Connected.'),
            401: HtmlPage('Not connected: nobody is signed in in this browser.'),
            400: HtmlPage(
              'Not connected: a bad or replayed state, a refused code, a company the authorization does not reach, ' +
                'or the user declined.',
            ),
            409: HtmlPage('Not connected: the company is held by another connection (QBO_COMPANY_TAKEN).'),
            503: HtmlPage('QuickBooks is not configured, or Intuit did not answer.'),
          },
        },
      },
      async (request, reply) => {
        if (!app.qbo) throw notConfigured();
        const { config } = app.qbo;
        const q = request.query;
        if (q.error) {
          return sendErrorPage(
            reply,
            400,
            'Not connected',
            `QuickBooks did not authorize the connection (${q.error}).`,
          );
        }
        const session = await getSession(request);
        if (!session) {
          // The state is left unspent: the person it was made for can sign in and come back to this address.
          throw new DomainError(
            'UNAUTHENTICATED',
            'sign in, in this browser, as the person who began the connection, then open this address again',
          );
        }
        const connection = await completeAuthorization(db(), config, app.qbo.limiter, {
          state: q.state ?? '',
          code: q.code ?? '',
          realmId: q.realmId ?? '',
          userId: session.user.id,
        });
        return sendPage(
          reply,
          'QuickBooks connected',
          html`<h1>QuickBooks connected</h1>
            <p>
              Company ${connection.realmId} is now this client's books. Agents reach it through the gateway once a firm
              owner or admin opens the client to them.
            </p>`,
        );
      },
    );
  });
};
