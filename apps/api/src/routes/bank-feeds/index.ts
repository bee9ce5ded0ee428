import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { connectBankFeed, getBankFeed, listBankFeeds, syncFeed } from '@firm/banking';
import { DomainError } from '@firm/core';
import { errorResponses } from '../../errors/responses';
import { ledgerContext } from '../context';
import { BankFeedHealth, BankFeedList, BankFeedOne, ConnectBankFeedBody } from './schemas';

const tags = ['banking'];

export const bankFeedRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  app.get(
    '/bank-feeds',
    {
      config: { scope: 'bank:read', organization: 'header' },
      schema: {
        tags,
        summary: 'List connected bank feeds',
        description: 'Aggregator connections, oldest first, with the registers each one feeds.',
        response: { 200: BankFeedList },
      },
    },
    async (request) => ({ data: await listBankFeeds(db(), request.organization.id), nextCursor: null }),
  );

  app.get(
    '/bank-feeds/health',
    {
      config: { scope: 'bank:read', organization: 'header' },
      schema: {
        tags,
        summary: 'Feed health per connection and per account',
        description:
          'Per connection: status, last successful sync, last error, rows pending review; per account: rows pending ' +
          'review and the date of its newest row.',
        response: { 200: BankFeedHealth },
      },
    },
    async (request) => ({
      data: (await listBankFeeds(db(), request.organization.id)).map((f) => ({
        connectionId: f.id,
        institutionName: f.institutionName,
        status: f.status,
        lastSyncedAt: f.lastSyncedAt,
        lastError: f.lastError,
        lastErrorAt: f.lastErrorAt,
        pendingReviewCount: f.pendingReviewCount,
        accounts: f.accounts,
      })),
    }),
  );

  app.post(
    '/bank-feeds',
    {
      config: { scope: 'bank:write', organization: 'header' },
      schema: {
        tags,
        summary: 'Connect a bank feed',
        description:
          "Exchanges the aggregator link flow's public token, stores the connection (its access token encrypted) and " +
          'links each account named to the register of its ledger account (creating the register when there is none), ' +
          'then runs the first sync. Later syncs are driven by the aggregator. The public token is single use, so a ' +
          'retry of a connect that succeeded is refused (422 PUBLIC_TOKEN_REFUSED, as is a token the aggregator does not ' +
          'know) rather than connecting twice. A first sync that fails leaves the connection in status error with lastError.',
        body: ConnectBankFeedBody,
        response: { 201: BankFeedOne, ...errorResponses(409, 415, 422, 502, 503) },
      },
    },
    async (request, reply) => {
      const { aggregator, bankTokenKeys: keys } = app;
      if (!aggregator || !keys) {
        throw new DomainError('SERVICE_UNAVAILABLE', 'bank feeds are turned off on this server (BANK_FEEDS=off)');
      }
      const ctx = ledgerContext(request);
      const orgId = request.organization.id;
      const feed = await connectBankFeed(db(), ctx, aggregator, keys, orgId, request.body);
      await syncFeed(db(), ctx, aggregator, keys, orgId, feed.id).catch((err: unknown) =>
        request.log.warn({ err, connectionId: feed.id }, 'first bank feed sync failed'),
      );
      return reply.code(201).send({ data: await getBankFeed(db(), orgId, feed.id) });
    },
  );
};
