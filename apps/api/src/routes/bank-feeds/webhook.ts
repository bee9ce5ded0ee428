import { acceptFeedWebhook, pruneFeedWebhookDeliveries, runRequestedSyncs, WEBHOOK_MAX_AGE_S } from '@firm/banking';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { errorResponses } from '../../errors/responses';

export const AGGREGATOR_WEBHOOK_PATH = '/api/aggregator/webhook';

/**
 * The inbound aggregator webhook: internal, outside the public OpenAPI document. It verifies the signature over the
 * exact bytes received, remembers the delivery and marks the item's connection as wanting a sync (one transaction),
 * answers, and only then starts the requested syncs in this process (any worker may take them instead). A bad or
 * missing signature is 401, a signed body that is not a JSON object 400, both logged, and nothing is marked.
 *
 * A delivery accepted before (the same signed token and body again, within the window its signature is accepted)
 * is answered 200 with `duplicate: true` and does nothing: the first copy's effect has committed, and a non-2xx would
 * only make a sender that lost our first answer retry something that is done. It is logged as a replay.
 */
export async function aggregatorWebhookRoutes(app: FastifyInstance) {
  const { aggregator } = app;
  // Bank feeds turned off (BANK_FEEDS=off): nobody is to call, so nothing is served.
  if (!aggregator) return;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  app.post(
    AGGREGATOR_WEBHOOK_PATH,
    {
      schema: {
        hide: true,
        description:
          `Plaid's webhook. A delivery is accepted once: the same signed delivery again within ` +
          `${WEBHOOK_MAX_AGE_S / 60} minutes of its issue (after which its signature is refused as too old) ` +
          'is answered 200 with duplicate true and has no effect.',
        response: {
          200: Type.Object({
            received: Type.Boolean(),
            syncRequested: Type.Boolean(),
            duplicate: Type.Boolean({ description: 'This delivery was accepted before; nothing was done this time.' }),
          }),
          ...errorResponses(400, 401, 413, 415),
        },
      },
    },
    async (request) => {
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const event = await aggregator.verifyWebhook(request.headers, raw).catch((err: unknown) => {
        request.log.warn({ err }, 'aggregator webhook refused');
        throw err;
      });
      const { duplicate, syncRequested } = await acceptFeedWebhook(app.database.db, aggregator.provider, event);
      if (duplicate) {
        request.log.warn(
          { deliveryId: event.deliveryId, itemId: event.itemId },
          'aggregator webhook replayed; ignored',
        );
      }
      const keys = app.bankTokenKeys;
      setImmediate(() => {
        pruneFeedWebhookDeliveries(app.database.db).catch((err: unknown) =>
          app.log.warn({ err }, 'pruning remembered aggregator webhooks failed'),
        );
        if (syncRequested && keys) {
          runRequestedSyncs(app.database.db, aggregator, keys).catch((err: unknown) =>
            app.log.error({ err }, 'requested bank feed syncs failed'),
          );
        }
      });
      return { received: true, syncRequested, duplicate };
    },
  );
}
