import { randomUUID } from 'node:crypto';
import { Format, registerAjvFormats } from '@fastify/type-provider-typebox';
import { type AttachmentStores, attachmentStoresFrom, downloadLinkKeysFrom } from '@firm/attachments';
import { type Aggregator, PlaidAggregator } from '@firm/banking';
import { isIsoTimestamp } from '@firm/core';
import { type Database, DatabaseStatus } from '@firm/db';
import type { AuditTrail } from '@firm/gateway';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { auditTrailOf, bankFeedsOf, type Config, trustProxyOf, webhookSecretKeysOf } from './config';
import { sendErrorPage } from './html';
import { registerJsonBodyParser } from './json-body';
import { browserOriginRefusal, MCP_PATH } from './origin';
import { mcpRoutes } from './routes/mcp';
import { exportRoutes } from './routes/reports/export';
import { packetRoutes } from './routes/reports/packet';
import { scheduledEntryRoutes } from './routes/scheduled';
import { refuseUnstorableText } from './text';
import { errorsPlugin, frameworkError, MAX_PARAM_LENGTH } from './errors';
import { sendError } from './errors/responses';
import { type Authenticator, authPlugin } from './plugins/auth';
import { exportSlotsPlugin } from './plugins/export-slots';
import { qboPlugin } from './plugins/qbo';
import { gatewayPlugin } from './plugins/gateway';
import { agentLimitsPlugin } from './plugins/agent-limits';
import { qboCallbackRoutes, qboRoutes } from './routes/qbo/index';
import { metricsPlugin } from './plugins/metrics';
import { openapiPlugin } from './plugins/openapi';
import { rateLimitPlugin } from './plugins/rate-limit';
import { sessionAuthenticator, sessionPlugin } from './plugins/session';
import { accountRoutes } from './routes/accounts/index';
import { attachmentRoutes } from './routes/attachments/index';
import { agingRoutes } from './routes/aging/index';
import { auditRoutes } from './routes/audit/index';
import { bankFeedRoutes } from './routes/bank-feeds/index';
import { bankingRoutes } from './routes/banking/index';
import { aggregatorWebhookRoutes } from './routes/bank-feeds/webhook';
import { bookRoutes } from './routes/books/index';
import { closeRuleRoutes } from './routes/close-rules/index';
import { closeRoutes } from './routes/closes/index';
import { contactRoutes } from './routes/contacts/index';
import { documentRoutes } from './routes/documents/index';
import { entryRoutes } from './routes/entries/index';
import { approvalPageRoutes } from './routes/approvals/index';
import { agentProposalRoutes } from './routes/agent-proposals/index';
import { gatewayRoutes } from './routes/gateway/index';
import { AGENT_BASE } from './routes/gateway/schemas';
import { healthRoutes } from './routes/health/index';
import { importRoutes } from './routes/imports/index';
import { itemRoutes } from './routes/items/index';
import { oauthRoutes } from './routes/oauth/index';
import { oauthConnectionRoutes } from './routes/oauth/connections';
import { organizationRoutes } from './routes/organizations/index';
import { openingBalanceRoutes } from './routes/opening-balances/index';
import { postingRoutes } from './routes/posting/index';
import { billPaymentPostingRoutes } from './routes/posting/bill-payments';
import { reportRoutes } from './routes/reports/index';
import { sessionRoutes } from './routes/session/index';
import { taxRateRoutes } from './routes/tax-rates/index';
import { webhookRoutes } from './routes/webhooks/index';
import { userRoutes } from './routes/users/index';
import { apiKeyRoutes } from './routes/api-keys/index';
import { lazySerializers } from './serialization';
import { validatorCompiler } from './validation';
import './types';

export interface AppDeps {
  config: Config;
  database: Database;
  /** Extra bearer-token kinds beyond API keys. */
  authenticators?: Authenticator[];
  logger?: FastifyServerOptions['logger'];
  /** The bank-data aggregator feeds connect through; default: Plaid's client configured by PLAID_* (none with BANK_FEEDS=off). */
  aggregator?: Aggregator;
  /** The agent audit trail's keys and anchors; default: from the config (`auditTrailOf`). */
  auditTrail?: AuditTrail;
  /** Where attachments are stored; default: the stores the config describes (ATTACHMENTS_STORE, ATTACHMENTS_S3_*). */
  attachmentStores?: AttachmentStores;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/;

registerAjvFormats();

const pathOf = (url: string): string => url.split('?', 1)[0] as string;
/**
 * Invitation links carry their secret in the path: logs keep only its first characters. Download links carry theirs
 * in the query (`signature`): logs keep none of it.
 */
export const loggedUrl = (url: string): string =>
  url.replace(/^\/invite\/([^/?#]{0,8})[^/?#]*/, '/invite/$1…').replace(/([?&]signature=)[^&#]*/gi, '$1[redacted]');
// RFC 3339 allows date-times Postgres cannot hold (the year 0000, offsets beyond ±15:59): refuse them as invalid.
Format.Set('date-time', isIsoTimestamp);

/** Builds the service without listening. Tests call it with a test database; server.ts listens. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, database } = deps;
  const serializers = lazySerializers();
  const app = Fastify({
    logger:
      deps.logger ??
      (config.LOG_LEVEL === 'silent'
        ? false
        : {
            level: config.LOG_LEVEL,
            serializers: {
              // Fastify's own, but for the URL.
              req: (req) => ({
                method: req.method,
                url: loggedUrl(req.url ?? ''),
                host: req.host,
                remoteAddress: req.ip,
                remotePort: req.socket?.remotePort,
              }),
            },
          }),
    bodyLimit: config.BODY_LIMIT_BYTES,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: frameworkError,
    return503OnClosing: true,
    trustProxy: trustProxyOf(config.TRUST_PROXY),
    schemaController: { compilersFactory: { buildSerializer: serializers.buildSerializer } },
  });
  app.decorate('compileSerializers', serializers.compileAll);
  app.setValidatorCompiler(validatorCompiler);
  // Request bodies are JSON only; anything else is 415 rather than a string the schema rejects.
  app.removeContentTypeParser('text/plain');
  registerJsonBodyParser(app);
  app.decorate('database', database);
  const routeTable: { method: string; url: string }[] = [];
  app.decorate('routeTable', routeTable);
  app.addHook('onRoute', (route) => {
    // Internal routes (the aggregator webhook) are left out of the public route table and OpenAPI document.
    if ((route.schema as { hide?: boolean } | undefined)?.hide) return;
    for (const method of [route.method].flat()) if (method !== 'HEAD') routeTable.push({ method, url: route.url });
  });
  app.decorate('config', config);
  const databaseStatus = new DatabaseStatus(database, app.log);
  app.decorate('databaseStatus', databaseStatus);
  app.addHook('onReady', async () => void (await databaseStatus.check()));
  app.addHook('onClose', async () => databaseStatus.stop());
  const feeds = bankFeedsOf(config);
  app.decorate(
    'aggregator',
    feeds &&
      (deps.aggregator ??
        new PlaidAggregator({ clientId: feeds.clientId, secret: feeds.secret, basePath: feeds.basePath })),
  );
  app.decorate('bankTokenKeys', feeds?.tokenKeys ?? null);
  app.decorate('webhookSecretKeys', webhookSecretKeysOf(config));
  app.decorate('auditTrail', deps.auditTrail ?? (await auditTrailOf(config)));
  // Download links are signed with keys derived from the audit keys: configured in production, generated into the
  // data directory elsewhere, so links work with no configuration and on every host sharing the keys.
  const { current, keys } = app.auditTrail.keys;
  app.decorate(
    'downloadLinkKeys',
    downloadLinkKeysFrom([
      keys.get(current) as Buffer,
      ...[...keys].filter(([id]) => id !== current).map(([, k]) => k),
    ]),
  );
  const attachmentStores = deps.attachmentStores ?? attachmentStoresFrom(database.db, config);
  app.decorate('attachmentStores', attachmentStores);
  if (!deps.attachmentStores) app.addHook('onClose', async () => attachmentStores.byKind.s3?.close?.());
  // Anchors of the last agent calls are written before the process goes.
  app.addHook('onClose', async () => app.auditTrail.anchors.settled());
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    const guard = request.routeOptions.config?.browserOrigin ?? (pathOf(request.url) === MCP_PATH ? 'json' : null);
    if (guard) {
      const refusal = browserOriginRefusal(request);
      if (refusal && guard === 'page') return sendErrorPage(reply, 403, 'Request refused', refusal);
      if (refusal) return sendError(reply, request, 'FORBIDDEN', refusal);
    }
    // Before rate limits and authentication, which would query a schema that is not there yet.
    if (request.routeOptions.config?.withoutDatabase) return;
    const refusal = await databaseStatus.refusal();
    if (refusal) return sendError(reply, request, 'SERVICE_UNAVAILABLE', refusal);
  });

  await app.register(errorsPlugin);
  await app.register(sessionPlugin);
  await app.register(rateLimitPlugin);
  await app.register(authPlugin, {
    authenticators: deps.authenticators ?? [],
    requestAuthenticators: [sessionAuthenticator],
  });
  await app.register(exportSlotsPlugin);
  await app.register(openapiPlugin, { origin: config.PUBLIC_ORIGIN });
  await app.register(metricsPlugin);
  await app.register(qboPlugin);
  await app.register(gatewayPlugin);
  await app.register(agentLimitsPlugin);

  await app.register(healthRoutes);
  await app.register(sessionRoutes);
  await app.register(approvalPageRoutes);
  await app.register(oauthRoutes);
  await app.register(aggregatorWebhookRoutes);
  await app.register(qboCallbackRoutes);
  await app.register(
    async (v1) => {
      v1.addHook('preValidation', refuseUnstorableText);
      await v1.register(organizationRoutes);
      await v1.register(accountRoutes);
      await v1.register(entryRoutes);
      await v1.register(postingRoutes);
      await v1.register(openingBalanceRoutes);
      await v1.register(reportRoutes);
      await v1.register(bookRoutes);
      await v1.register(auditRoutes);
      await v1.register(oauthConnectionRoutes);
      await v1.register(webhookRoutes);
      await v1.register(contactRoutes);
      await v1.register(itemRoutes);
      await v1.register(taxRateRoutes);
      await v1.register(documentRoutes);
      await v1.register(billPaymentPostingRoutes);
      await v1.register(agingRoutes);
      await v1.register(bankingRoutes);
      await v1.register(bankFeedRoutes);
      await v1.register(scheduledEntryRoutes);
      await v1.register(closeRuleRoutes);
      await v1.register(packetRoutes);
      await v1.register(exportRoutes);
      await v1.register(qboRoutes);
      await v1.register(userRoutes);
      await v1.register(apiKeyRoutes);
      await v1.register(importRoutes);
      await v1.register(agentProposalRoutes);
      await v1.register(closeRoutes);
      await v1.register(attachmentRoutes);
    },
    { prefix: '/api/v1' },
  );
  await app.register(
    async (agent) => {
      agent.addHook('preValidation', refuseUnstorableText);
      await agent.register(gatewayRoutes);
    },
    { prefix: AGENT_BASE },
  );
  await app.register(mcpRoutes);
  return app;
}
