import { attachmentFile } from '@firm/attachments';
import { type Approvals, createApprovals, createGateway, type Gateway, platformFactory } from '@firm/gateway';
import { createEmbeddedPlatform } from '@firm/platform';
import { createQboPlatform, QboHttp } from '@firm/qbo';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { respondForProposal } from '../routes/gateway/records';
import { downloadLinkOf } from '../routes/attachments/links';
import { serviceOrigin } from '../origin';

declare module 'fastify' {
  interface FastifyInstance {
    /** The agent gateway: an agent's reads and writes of a client's books, built once at start. */
    gateway: Gateway;
    /** Agent write approvals: the writes the firm's policy holds, as proposals people decide on. */
    approvals: Approvals;
  }
}

/**
 * Builds the agent gateway once. Its platforms are composed here: the embedded books, and QuickBooks Online when
 * this deployment is configured for it (after `qboPlugin`). The gateway package knows the platform interface only,
 * not QBO's client, so QBO's construction (its HTTP client, token store and limits) is handed to it from here.
 */
export const gatewayPlugin: FastifyPluginAsync = fp(async (app) => {
  const { db } = app.database;
  const qbo = app.qbo;
  app.decorate(
    'gateway',
    createGateway({
      db,
      audit: app.auditTrail,
      statementTimeoutMs: app.config.GATEWAY_STATEMENT_TIMEOUT_MS,
      platforms: platformFactory({
        embedded: ({ actor, client, db: through }) =>
          createEmbeddedPlatform(through, {
            firmId: actor.firmId,
            organizationId: client.id,
            acctCompanyId: client.acctCompanyId,
            actor: { kind: actor.kind, id: actor.id },
            requestId: actor.requestId,
            generalLedgerMaxLines: app.config.GENERAL_LEDGER_MAX_LINES,
            downloadLink: (attachmentId) =>
              downloadLinkOf(app.downloadLinkKeys, serviceOrigin(app), { id: attachmentId, organizationId: client.id })
                .downloadUrl,
          }),
        remote: {
          qbo:
            qbo &&
            (({ client, dryRun, requestKey }) =>
              createQboPlatform(
                new QboHttp({ config: qbo.config, db, limiter: qbo.limiter, organizationId: client.id }),
                {
                  realmId: client.acctCompanyId,
                  dryRun,
                  requestKey,
                  // An Attachable create uploads a file received for this client (its own store, nobody else's).
                  files: { open: (id) => attachmentFile(db, app.attachmentStores, client.id, id) },
                },
              )),
        },
      }),
    }),
  );
  app.decorate(
    'approvals',
    createApprovals({ db, gateway: app.gateway, audit: app.auditTrail, respondFor: respondForProposal }),
  );
});
