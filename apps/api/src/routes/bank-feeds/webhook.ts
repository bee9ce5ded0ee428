import { requestFeedSync, runRequestedSyncs } from '@firm/banking';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';

export const AGGREGATOR_WEBHOOK_PATH = '/api/aggregator/webhook';

/**
 * The inbound aggregator webhook: internal, outside the public OpenAPI document. It verifies the signature over the
 * exact bytes received, marks the item's connection as wanting a sync, answers, and only then starts the requested
 * syncs in this process (any worker may take them instead). A bad or missing signature is 401, a signed body that is
 * not a JSON object 400, both logged, and nothing is marked.
 */
export async function aggregatorWebhookRoutes(app: FastifyInstance) {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  app.post(
    AGGREGATOR_WEBHOOK_PATH,
    {
      schema: {
        hide: true,
        response: { 200: Type.Object({ received: Type.Boolean(), syncRequested: Type.Boolean() }) },
      },
    },
    async (request) => {
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const event = await app.aggregator.verifyWebhook(request.headers, raw).catch((err: unknown) => {
        request.log.warn({ err }, 'aggregator webhook refused');
        throw err;
      });
      const wanted = event.type === 'TRANSACTIONS' && event.code === 'SYNC_UPDATES_AVAILABLE' && event.itemId !== null;
      const syncRequested =
        wanted && (await requestFeedSync(app.database.db, app.aggregator.provider, event.itemId as string));
      const keys = app.bankTokenKeys;
      if (syncRequested && keys) {
        setImmediate(() => {
          runRequestedSyncs(app.database.db, app.aggregator, keys).catch((err: unknown) =>
            app.log.error({ err }, 'requested bank feed syncs failed'),
          );
        });
      }
      return { received: true, syncRequested };
    },
  );
}
